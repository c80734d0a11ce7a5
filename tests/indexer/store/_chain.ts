/**
 * A synthetic chain for the store tests: every block's hash and `Settled` events derive from
 * (seed, fork, block number) alone, so a test (or a child process) can rebuild any block, and
 * an independent recount needs nothing but the numbers.
 *
 * A fork is a second chain that shares every block below `forkAt` and differs from there on
 * (other hashes, other settlements), like a reorg.
 */

import type {
  BlockHash,
  ChunkCommit,
  EpochTotals,
  Hex,
  ProviderTotals,
  Settlement,
  SettlementBucket,
} from "../../../indexer/store/mod.ts";
import { bucketSettlements } from "../../../chain/settlement_buckets.ts";

/** Options of {@linkcode SyntheticChain}. */
export interface SyntheticChainOptions {
  /** Seeds the pseudo-random settlements. */
  seed?: number;
  /** Blocks per epoch. @default {50} */
  blocksPerEpoch?: number;
  /** Distinct providers. @default {12} */
  providers?: number;
  /** Most settlements in one block. @default {4} */
  maxPerBlock?: number;
  /** Largest amount (exclusive). @default {2n ** 200n} */
  maxAmount?: bigint;
}

/** xorshift32 over a 32-bit state. */
function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    h ^= part >>> 0;
    h = Math.imul(h, 0x01000193) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0x5bd1e995) >>> 0;
    h ^= h >>> 15;
  }
  return h >>> 0;
}

/** An address made from a number. */
export function providerAddress(index: number): Hex {
  return `0x${(index + 1).toString(16).padStart(40, "0")}` as Hex;
}

/** The address of synthetic consumer `index`. */
export function consumerAddress(index: number): Hex {
  return `0xc0${(index + 1).toString(16).padStart(38, "0")}` as Hex;
}

/** A deterministic chain: block hashes and settlements from (seed, fork, number). */
export class SyntheticChain {
  readonly seed: number;
  readonly blocksPerEpoch: bigint;
  readonly providers: number;
  readonly maxPerBlock: number;
  readonly maxAmount: bigint;
  /** Block numbers at or above this come from `fork`; below it the base chain. */
  readonly forkAt: bigint;
  readonly fork: number;

  constructor(
    options: SyntheticChainOptions = {},
    fork: { at: bigint; id: number } = { at: 1n << 62n, id: 0 },
  ) {
    this.seed = options.seed ?? 1;
    this.blocksPerEpoch = BigInt(options.blocksPerEpoch ?? 50);
    this.providers = options.providers ?? 12;
    this.maxPerBlock = options.maxPerBlock ?? 4;
    this.maxAmount = options.maxAmount ?? 2n ** 200n;
    this.forkAt = fork.at;
    this.fork = fork.id;
  }

  /** The same chain, reorganized from block `at` on (a new fork id). */
  forked(at: bigint, id: number): SyntheticChain {
    return new SyntheticChain({
      seed: this.seed,
      blocksPerEpoch: Number(this.blocksPerEpoch),
      providers: this.providers,
      maxPerBlock: this.maxPerBlock,
      maxAmount: this.maxAmount,
    }, { at, id });
  }

  #forkOf(block: bigint): number {
    return block >= this.forkAt ? this.fork : 0;
  }

  /** The hash of a block on this chain. */
  hash(block: bigint): Hex {
    const f = this.#forkOf(block);
    const words = [0, 1, 2, 3, 4, 5, 6, 7].map((i) =>
      mix(this.seed, f, Number(block & 0xffffffffn), Number(block >> 32n), i).toString(16).padStart(
        8,
        "0",
      )
    );
    return `0x${words.join("")}` as Hex;
  }

  /** The `Settled` events of a block on this chain. */
  settlements(block: bigint): Settlement[] {
    const f = this.#forkOf(block);
    const b = Number(block & 0xffffffffn);
    const count = mix(this.seed, f, b, 0xc0) % (this.maxPerBlock + 1);
    const out: Settlement[] = [];
    for (let i = 0; i < count; i++) {
      const r = (k: number) => BigInt(mix(this.seed, f, b, i, k));
      const big = (r(1) << 96n) | (r(2) << 64n) | (r(3) << 32n) | r(4);
      out.push({
        block,
        provider: providerAddress(Number(r(5) % BigInt(this.providers))),
        epoch: block / this.blocksPerEpoch,
        amount: (big * (r(6) + 1n) * (r(7) + 1n)) % this.maxAmount,
        tokens: r(8) % 100_000n,
        // About two in three are paid by one of a few consumers' vouchers, the rest by a settler.
        consumer: r(9) % 3n === 0n ? null : consumerAddress(Number(r(10) % 5n)),
      });
    }
    return out;
  }

  /** Every settlement in `[from, to]`. */
  range(from: bigint, to: bigint): Settlement[] {
    const out: Settlement[] = [];
    for (let block = from; block <= to; block++) out.push(...this.settlements(block));
    return out;
  }

  /** The chunk a scan of `[from, to]` would commit, with the hashes the store asks for. */
  chunk(
    from: bigint,
    to: bigint,
    head: bigint,
    confirmations: number,
    chunkSize?: number,
  ): ChunkCommit {
    const safe = head - BigInt(confirmations);
    const hashes: BlockHash[] = [];
    const top = to < safe ? to : safe;
    if (top >= from) hashes.push({ number: top, hash: this.hash(top) });
    for (let block = safe + 1n > from ? safe + 1n : from; block <= to; block++) {
      hashes.push({ number: block, hash: this.hash(block) });
    }
    return { from, to, head, settlements: this.range(from, to), hashes, chunkSize };
  }

  /** The canonical-hash callback a store's `reconcile` takes. */
  canonical(head: bigint): (blocks: readonly bigint[]) => Promise<(Hex | null)[]> {
    return (blocks) => Promise.resolve(blocks.map((b) => (b <= head ? this.hash(b) : null)));
  }
}

/** The independent recount of a list of settlements. */
export interface Recount {
  buckets: SettlementBucket[];
  epochs: EpochTotals[];
  providers: ProviderTotals[];
  settlements: number;
}

/** Sums settlements with plain bigint arithmetic, sorted like the store's reads. */
export function recount(settlements: readonly Settlement[]): Recount {
  const sorted = bucketSettlements(settlements);
  const epochs = new Map<bigint, EpochTotals>();
  const providers = new Map<string, ProviderTotals>();
  const payers = new Map<bigint, Set<string>>();
  const empty = (epoch: bigint): EpochTotals => ({
    epoch,
    amount: 0n,
    tokens: 0n,
    settlements: 0,
    providers: 0,
    signedAmount: 0n,
    signedSettlements: 0,
    consumers: 0,
  });
  for (const s of settlements) {
    if (!s.consumer) continue;
    const e = epochs.get(s.epoch) ?? empty(s.epoch);
    e.signedAmount += s.amount;
    e.signedSettlements++;
    const set = payers.get(s.epoch) ?? new Set();
    set.add(s.consumer);
    payers.set(s.epoch, set);
    e.consumers = set.size;
    epochs.set(s.epoch, e);
  }
  for (const b of sorted) {
    const e = epochs.get(b.epoch) ?? empty(b.epoch);
    e.amount += b.amount;
    e.tokens += b.tokens;
    e.settlements += b.settlements;
    e.providers++;
    epochs.set(b.epoch, e);
    const p = providers.get(b.provider) ?? {
      provider: b.provider,
      amount: 0n,
      tokens: 0n,
      settlements: 0,
      epochs: 0,
      firstEpoch: b.epoch,
      lastEpoch: b.epoch,
    };
    p.amount += b.amount;
    p.tokens += b.tokens;
    p.settlements += b.settlements;
    p.epochs++;
    if (b.epoch < p.firstEpoch) p.firstEpoch = b.epoch;
    if (b.epoch > p.lastEpoch) p.lastEpoch = b.epoch;
    providers.set(b.provider, p);
  }
  return {
    buckets: sorted,
    epochs: [...epochs.values()].sort((a, b) => (a.epoch < b.epoch ? -1 : 1)),
    providers: [...providers.values()],
    settlements: settlements.length,
  };
}
