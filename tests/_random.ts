/**
 * A small deterministic generator for tests (xorshift32): the same seed gives the same
 * sequence, so a scenario built from it replays exactly.
 *
 * @module
 */

/** Whole numbers in [0, 2^32) from `seed` (0 is taken as 1). */
export function xorshift32(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

/** Numbers in [0, 1) from `seed`, the sequence of {@linkcode xorshift32} scaled. */
export function unitRandom(seed: number): () => number {
  const next = xorshift32(seed);
  return () => next() / 2 ** 32;
}
