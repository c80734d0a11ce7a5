import assert from "node:assert/strict";
import { meanReputation, reputation, round4 } from "../../indexer/reputation.ts";

Deno.test("reputation is the share of the last finished epochs with a settlement", () => {
  // Table of hand-computed cases: [settled epochs, current epoch, window, expected].
  const cases: [bigint[], bigint, number | undefined, number | null][] = [
    // Current 5, window 8 → epochs 0..4 (5 epochs); paid in 0, 1, 3 → 3/5.
    [[0n, 1n, 3n], 5n, undefined, 0.6],
    // Duplicates and the current (unfinished) epoch do not count: still 0, 1, 3.
    [[3n, 0n, 1n, 1n, 5n], 5n, undefined, 0.6],
    // Current 20, window 8 → epochs 12..19; paid in 11 (outside), 12, 19 → 2/8.
    [[11n, 12n, 19n], 20n, undefined, 0.25],
    // Every finished epoch paid.
    [[0n, 1n, 2n], 3n, undefined, 1],
    // Never paid.
    [[], 4n, undefined, 0],
    // No finished epoch yet: no reputation.
    [[0n], 0n, undefined, null],
    // Window 3 at current 10 → epochs 7..9; paid in 8 → 1/3 = 0.3333 (4 decimals).
    [[8n], 10n, 3, 0.3333],
    // Window 3 at current 10; paid in 7 and 9 → 2/3 = 0.6667.
    [[7n, 9n, 10n], 10n, 3, 0.6667],
    // Window 1: only the previous epoch.
    [[6n], 7n, 1, 1],
  ];
  for (const [epochs, current, window, expected] of cases) {
    assert.equal(
      reputation(epochs, current, window === undefined ? {} : { windowEpochs: window }),
      expected,
      `epochs ${epochs} at ${current}, window ${window}`,
    );
  }
});

Deno.test("a model's reputation is the mean of its providers', ignoring nulls", () => {
  assert.equal(meanReputation([0.6, 1, 0.25]), 0.6167); // 1.85 / 3 = 0.61666…
  assert.equal(meanReputation([0.6, null]), 0.6);
  assert.equal(meanReputation([null]), null);
  assert.equal(meanReputation([]), null);
  assert.equal(round4(2 / 3), 0.6667);
});

Deno.test("a bad window is refused with the value", () => {
  for (const window of [0, -1, 1.5, Number.NaN]) {
    assert.throws(
      () => reputation([], 3n, { windowEpochs: window }),
      (error: unknown) => error instanceof RangeError && error.message.includes(String(window)),
    );
  }
});
