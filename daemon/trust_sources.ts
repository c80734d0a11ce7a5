/**
 * Where the daemon's trust decisions get their facts: the Registry over RPC (providers'
 * trust roots and commitments, the approved TEE measurements) when `NET_EVM_RPC_URL` and
 * `NET_EVM_REGISTRY` are given, or an approved-measurements file. Reads are cached for a
 * short time, so a request does not cost an RPC round trip each time; a failed read is never
 * cached and fails the request closed. The chain client is passed as a getter, so the daemon
 * can start while the chain is unreachable and connect once it answers.
 *
 * @module
 */

import type { Address } from "viem";
import { type ChainClient, readApprovedMeasurements, readProvider } from "../chain/mod.ts";
import { ApprovedMeasurements } from "../crypto/tee/mod.ts";
import { DaemonError } from "./daemon_error.ts";
import type { RegistryRecord } from "./provider_trust.ts";

/** Options of the chain-backed sources. */
export interface ChainSourceOptions {
  /** How long a read is reused, in ms. @default {15000} */
  ttlMs?: number;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
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

/**
 * Reads providers' Registry records (trust root, tier, active flag, ad commitment) and their
 * bond (Staking), at one block.
 */
export function registryRecords(
  client: () => Promise<ChainClient>,
  contracts: { registry: Address; staking: Address },
  options: ChainSourceOptions = {},
): (provider: Address) => Promise<RegistryRecord | null> {
  return cached(async (provider: Address) => {
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
      };
    } catch (error) {
      throw chainFailure(`the Registry record of ${provider}`, error);
    }
  }, options);
}

/** Reads the Registry's approved TEE measurement set. */
export function chainMeasurements(
  client: () => Promise<ChainClient>,
  registry: Address,
  options: ChainSourceOptions = {},
): () => Promise<ApprovedMeasurements> {
  const read = cached(async (_: null) => {
    try {
      const { measurements } = await readApprovedMeasurements(await client(), registry);
      return ApprovedMeasurements.fromList(measurements, { source: `Registry ${registry}` });
    } catch (error) {
      throw chainFailure("the approved TEE measurements", error);
    }
  }, options);
  return () => read(null);
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
