/**
 * Looking up an attempt's bill at its provider (`docs/protocol.md` §9): the provider is found in
 * the gateway's list for the attempt's model and tier, its key trusted as for any request
 * (`trust/`), and a sealed `GET /v1/generation?id=<bill id>` relayed to it. What the daemon
 * learns this way is the cost of a reply it did not read to its end (the client went away, the
 * stream failed): the provider's bill, at most the worst case the daemon signed for.
 *
 * @module
 */

import { type Bill, type BillQuery, DaemonError } from "../core/mod.ts";
import type { GatewayClient } from "../gateway/mod.ts";
import type { SetupPool } from "../../crypto/mod.ts";
import { openSealedJson, sealRequest } from "../sealing/mod.ts";
import { type ProviderTrustOptions, trustProvider } from "../trust/mod.ts";
import type { CandidateCache } from "./candidate_cache.ts";

/** What a lookup needs of the network backend. */
export interface BillLookupParts {
  /** The candidate lists. */
  readonly candidates: CandidateCache;
  /** The HPKE setups prepared ahead for verified-tier keys. */
  readonly setups: SetupPool;
  /** How the provider's key is trusted. */
  readonly trust: ProviderTrustOptions;
  /** The clock (the sealed `date`). */
  readonly clock: () => Date;
}

const DECIMAL = /^(0|[1-9][0-9]{0,77})$/;

/**
 * Asks the provider of `query` for its bill through `gateway`.
 *
 * @throws {DaemonError} `no_provider` when the gateway does not list the provider now, or any
 * failure to trust, reach or read it (the caller tries again later).
 */
export async function lookupBill(
  gateway: GatewayClient,
  query: BillQuery,
  parts: BillLookupParts,
  signal: AbortSignal,
): Promise<Bill | "unknown" | "running"> {
  const provider = query.provider.toLowerCase();
  const list = await parts.candidates.get(
    gateway,
    { model: query.model, tier: query.tier },
    signal,
  );
  const candidate = list.find((c) => c.provider.toLowerCase() === provider);
  if (!candidate) {
    throw new DaemonError(
      "no_provider",
      `Cannot look up bill ${query.id}: gateway ${gateway.url} does not list provider ${provider}`,
    );
  }
  const trusted = await trustProvider(candidate, gateway, parts.trust, signal);
  const sealed = await sealRequest(trusted.keyConfig, {
    body: undefined,
    method: "GET",
    path: `/v1/generation?id=${query.id}`,
    headers: [["date", parts.clock().toUTCString()]],
  }, { pool: candidate.tier === "verified" ? parts.setups : undefined });
  const stream = await gateway.relay(candidate.provider, sealed.bytes, { signal });
  let answer: unknown;
  try {
    answer = await openSealedJson(sealed, stream, { maxBytes: 4096, signal });
  } catch (error) {
    if (error instanceof DaemonError && error.code === "provider_error") {
      if (error.status === 404) return "unknown";
      if (/answered 409/.test(error.shortMessage)) return "running";
    }
    throw error;
  }
  return billOf(answer, query.id);
}

/** The bill in a provider's answer, checked. */
function billOf(answer: unknown, id: string): Bill {
  const bill = answer as Record<string, unknown>;
  const counts = [bill?.prompt_tokens, bill?.completion_tokens];
  if (
    typeof bill !== "object" || bill === null || bill.id !== id ||
    typeof bill.cost !== "string" || !DECIMAL.test(bill.cost) ||
    !counts.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)
  ) {
    throw new DaemonError(
      "provider_error",
      `The provider's bill ${id} is not {"id","cost","prompt_tokens","completion_tokens"}`,
    );
  }
  return {
    cost: BigInt(bill.cost as string),
    promptTokens: bill.prompt_tokens as number,
    completionTokens: bill.completion_tokens as number,
  };
}
