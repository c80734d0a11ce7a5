/**
 * Asking a peer gateway for the gateways it knows (`GET /v1/gateways`, `docs/protocol.md` §3) and
 * merging its answer into a {@linkcode GatewaySet} as hearsay from that peer.
 *
 * @module
 */

import { fetchJson, FetchJsonError } from "../../io/fetch_json.ts";
import type { GatewaySet } from "./gateway_set.ts";
import { GATEWAY_LIMITS, GatewaySetError, normalizeGatewayUrl } from "./gateway_url.ts";

/** Options of {@linkcode askPeer}. */
export interface AskPeerOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Time allowed for the answer. @default {3000} */
  timeoutMs?: number;
  /** Cancels the request. */
  signal?: AbortSignal;
}

/**
 * Asks one gateway for its peers (`GET /v1/gateways`, body at most 256 KiB, redirects not
 * followed), marks it reached and merges its answer into `set` as hearsay from that gateway.
 *
 * @throws {GatewaySetError} with reason `unreachable` (the peer could not be asked) or
 * `malformed_list` (it answered nonsense).
 */
export async function askPeer(
  set: GatewaySet,
  url: string,
  options: AskPeerOptions = {},
): Promise<{ added: number; refused: number }> {
  const base = normalizeGatewayUrl(url);
  let answer: unknown;
  try {
    answer = await fetchJson(`${base}/v1/gateways`, {
      fetch: options.fetch,
      timeoutMs: options.timeoutMs ?? 3000,
      maxBytes: GATEWAY_LIMITS.maxResponseBytes,
      signal: options.signal,
    });
  } catch (cause) {
    const why = cause instanceof FetchJsonError ? cause.shortMessage : String(cause);
    throw new GatewaySetError("unreachable", `Cannot ask gateway ${base} for peers: ${why}`, {
      cause,
    });
  }
  // mergeList validates the whole answer first: a malformed one changes nothing, and the peer
  // only counts as reached once it has answered sensibly.
  const result = set.mergeList(answer, { source: base });
  set.markReached(base);
  return result;
}
