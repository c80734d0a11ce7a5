/**
 * Where the daemon's trust decisions get their facts: the Registry and Staking over RPC
 * (providers' trust roots, commitments and bonds; the approved TEE measurements), from the
 * network profile's chain, or an approved-measurements file.
 *
 * - Reads are reused for a short time (`ttlMs`, 15 s), so a request does not cost an RPC round
 *   trip each time; concurrent callers share one read.
 * - **A failed read is never cached.** While the chain cannot be read, a fact read from it at
 *   most `graceMs` ago (10 minutes by default, `--chain-grace-secs`) is still used, and the
 *   record says how old it is (the verdict shows it). Anything older — or never read — is
 *   refused: the request fails closed with `no_provider` and a message saying what could not
 *   be read and how old the last good read is. Once the chain answers again, fresh reads are
 *   used at once.
 * - The chain client is passed as a getter, so the daemon can start while the chain is
 *   unreachable and connect once it answers.
 *
 * @module
 */

import type { Address } from "viem";
import { type ChainClient, readApprovedMeasurements, readProvider } from "../../chain/mod.ts";
import { ApprovedMeasurements } from "../../crypto/tee/mod.ts";
import { DaemonError } from "../core/mod.ts";
import type { RegistryRecord } from "./provider_trust.ts";

/** Options of the chain-backed sources. */
export interface ChainSourceOptions {
  /** How long a read is reused, in ms. @default {15000} */
  ttlMs?: number;
  /**
   * While the chain cannot be read, how old a good read may be and still be used, in ms
   * (0: never).
   *
   * @default {DEFAULT_CHAIN_GRACE_MS} (10 minutes)
   */
  graceMs?: number;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Told once per outage when a stale read is used. @default {console.warn} */
  log?: (message: string) => void;
}

/** How long on-chain facts stay usable while the chain cannot be read: 10 minutes. */
export const DEFAULT_CHAIN_GRACE_MS = 10 * 60_000;

/** A value read from the chain, and how old it is when it had to stand in for a fresh read. */
interface Anchored<V> {
  value: V;
  /** Set when the chain could not be read and an older read within the grace was used. */
  staleMs?: number;
}

/** Whole minutes or seconds, for messages. */
function age(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds >= 120 ? `${Math.floor(seconds / 60)} min` : `${seconds} s`;
}

/**
 * `read` with the TTL cache, plus the last good value of each key for the grace period: a
 * failed read falls back to it when it is young enough, else rethrows `refuse(error, ageMs)`.
 */
function anchored<K, V>(
  read: (key: K) => Promise<V>,
  options: ChainSourceOptions,
  refuse: (error: unknown, lastGoodAgeMs: number | undefined, graceMs: number) => DaemonError,
): (key: K) => Promise<Anchored<V>> {
  const clock = options.clock ?? (() => new Date());
  const graceMs = options.graceMs ?? DEFAULT_CHAIN_GRACE_MS;
  const log = options.log ?? ((message: string) => console.warn(message));
  const lastGood = new Map<K, { at: number; value: V }>();
  let outage = false;
  const fresh = cached(async (key: K) => {
    const at = clock().getTime();
    const value = await read(key);
    lastGood.delete(key);
    lastGood.set(key, { at, value });
    if (lastGood.size > 10_000) lastGood.delete(lastGood.keys().next().value!);
    if (outage) {
      outage = false;
      log("daemon: the chain answers again; trust is checked on chain afresh");
    }
    return value;
  }, options);
  return async (key) => {
    try {
      return { value: await fresh(key) };
    } catch (error) {
      const good = lastGood.get(key);
      const ageMs = good === undefined ? undefined : clock().getTime() - good.at;
      if (good === undefined || ageMs === undefined || ageMs > graceMs) {
        throw refuse(error, ageMs, graceMs);
      }
      if (!outage) {
        outage = true;
        log(
          `daemon: the chain cannot be read (${firstLine(error)}); using what it said at most ` +
            `${age(graceMs)} ago, then refusing`,
        );
      }
      return { value: good.value, staleMs: ageMs };
    }
  };
}

function firstLine(error: unknown): string {
  if (error instanceof DaemonError) return error.shortMessage;
  return error instanceof Error ? error.message.split("\n")[0] : String(error);
}

function cached<K, V>(
  read: (key: K) => Promise<V>,
  options: ChainSourceOptions,
): (key: K) => Promise<V> {
  const ttl = options.ttlMs ?? 15_000;
  const clock = options.clock ?? (() => new Date());
  const entries = new Map<K, { at: number; value: Promise<V> }>();
  return (key) => {
    const now = clock().getTime();
    const hit = entries.get(key);
    if (hit && now - hit.at < ttl) return hit.value;
    const value = read(key);
    entries.set(key, { at: now, value });
    if (entries.size > 10_000) entries.delete(entries.keys().next().value!);
    // A failure is never reused.
    value.catch(() => entries.get(key)?.value === value && entries.delete(key));
    return value;
  };
}

function chainFailure(what: string, error: unknown): DaemonError {
  return new DaemonError(
    "no_provider",
    `Cannot read ${what} from the chain, so no provider can be trusted: ${
      error instanceof Error ? error.message.split("\n")[0] : String(error)
    }`,
    { cause: error },
  );
}

/** The refusal when the chain cannot be read and no read is young enough to stand in. */
function tooOld(what: string) {
  return (error: unknown, ageMs: number | undefined, graceMs: number): DaemonError => {
    const failure = error instanceof DaemonError ? error : chainFailure(what, error);
    if (ageMs === undefined) return failure;
    return new DaemonError(
      "no_provider",
      `${failure.shortMessage}; it was last read on chain ${age(ageMs)} ago, longer than the ` +
        `${age(graceMs)} grace`,
      {
        cause: failure.cause ?? error,
        hints: ["Check the chain's RPC endpoint; --chain-grace-secs sets the grace period."],
      },
    );
  };
}

/**
 * Reads providers' Registry records (trust root, tier, active flag, ad commitment) and their
 * bond (Staking), at one block.
 */
export function registryRecords(
  client: () => Promise<ChainClient>,
  contracts: { registry: Address; staking: Address },
  options: ChainSourceOptions = {},
): (provider: Address) => Promise<RegistryRecord | null> {
  const read = anchored(
    async (provider: Address): Promise<RegistryRecord | null> => {
      try {
        const { provider: record, bond } = await readProvider(
          await client(),
          contracts.registry,
          provider,
          { staking: contracts.staking },
        );
        return record && {
          trustRoot: record.trustRoot,
          tier: record.tier,
          active: record.active,
          adCommitment: record.adCommitment,
          bonded: bond?.bonded ?? false,
          ...(bond ? { stake: bond.stake } : {}),
        };
      } catch (error) {
        throw chainFailure(`the Registry record of ${provider}`, error);
      }
    },
    options,
    tooOld("the Registry record"),
  );
  return async (provider) => {
    const { value, staleMs } = await read(provider);
    if (value === null || staleMs === undefined) return value;
    return { ...value, note: `read ${age(staleMs)} ago, chain unreachable` };
  };
}

/** Reads the Registry's approved TEE measurement set. */
export function chainMeasurements(
  client: () => Promise<ChainClient>,
  registry: Address,
  options: ChainSourceOptions = {},
): () => Promise<ApprovedMeasurements> {
  const read = anchored(
    async (_: null) => {
      try {
        const { measurements } = await readApprovedMeasurements(await client(), registry);
        return ApprovedMeasurements.fromList(measurements, { source: `Registry ${registry}` });
      } catch (error) {
        throw chainFailure("the approved TEE measurements", error);
      }
    },
    options,
    tooOld("the approved TEE measurements"),
  );
  return async () => (await read(null)).value;
}

/** Reads the approved set from a file, again whenever it changes. */
export function fileMeasurements(path: string): () => Promise<ApprovedMeasurements> {
  let loaded: { mtime: number; set: ApprovedMeasurements } | undefined;
  return async () => {
    let mtime = 0;
    try {
      mtime = (await Deno.stat(path)).mtime?.getTime() ?? 0;
    } catch {
      // fromFile reports the missing file below
    }
    if (!loaded || loaded.mtime !== mtime) {
      try {
        loaded = { mtime, set: await ApprovedMeasurements.fromFile(path) };
      } catch (error) {
        throw new DaemonError(
          "no_provider",
          error instanceof Error ? error.message.split("\n")[0] : String(error),
          { cause: error },
        );
      }
    }
    return loaded.set;
  };
}
