/**
 * Gateway URLs (`docs/protocol.md` §3): what a gateway address may be, and which peer may
 * introduce which address. A gateway URL is plain `http:`/`https:` without credentials, query or
 * fragment, and never a link-local, unspecified or reserved IP literal (`io/host_scope.ts`). A
 * peer may only introduce IP literals at most as private as itself (the Private Network Access
 * rule: a public peer cannot point us at loopback or the LAN; a loopback peer, as in the devnet,
 * may). Also the limits every gateway list is read with, and the one error of the gateway set.
 *
 * @example
 * ```ts
 * import { normalizeGatewayUrl } from "./gateway_url.ts";
 *
 * console.assert(normalizeGatewayUrl("http://127.0.0.1:8701/") === "http://127.0.0.1:8701");
 * ```
 *
 * @module
 */

import { abbreviate, ReasonError } from "../../errors.ts";
import { FORBIDDEN_SCOPES, hostScope, scopeRank } from "../../io/host_scope.ts";

/** Limits applied to gateway lists (`docs/protocol.md` §3). */
export const GATEWAY_LIMITS: {
  readonly maxEntries: number;
  readonly maxPerResponse: number;
  readonly maxPerSource: number;
  readonly maxResponseBytes: number;
  readonly maxUrlLength: number;
} = Object.freeze({
  maxEntries: 256,
  maxPerResponse: 64,
  maxPerSource: 32,
  maxResponseBytes: 256 * 1024,
  maxUrlLength: 2048,
});

/** Why a gateway URL or list was refused. */
export type GatewaySetFailure = "invalid_url" | "malformed_list" | "unreachable";

/** Thrown for invalid gateway URLs and lists, and when a peer cannot be asked. */
export class GatewaySetError extends ReasonError<GatewaySetFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "GatewaySetError" as const;
  /** For `invalid_url`: what is wrong with the URL, without the URL (e.g. "a query is not allowed"). */
  readonly problem: string | undefined;

  /** Creates the error. */
  constructor(
    reason: GatewaySetFailure,
    shortMessage: string,
    options: { cause?: unknown; problem?: string } = {},
  ) {
    super(reason, shortMessage, options);
    this.problem = options.problem;
  }
}

/**
 * Validates a gateway URL and returns its normalized form: `http:` or `https:`, no
 * credentials, query or fragment, at most 2048 characters, no trailing slash, and a host that
 * is not a link-local, unspecified or reserved IP literal (169.254.0.0/16, `fe80::/10`,
 * 0.0.0.0/8, `::`, multicast, …, in any spelling: `io/host_scope.ts`).
 *
 * @throws {GatewaySetError} with reason `invalid_url`, quoting the value.
 */
export function normalizeGatewayUrl(value: unknown): string {
  const bad = (why: string): never => {
    const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 80)) : typeof value;
    throw new GatewaySetError("invalid_url", `Cannot use gateway URL ${shown}: ${why}`, {
      problem: why,
    });
  };
  if (typeof value !== "string") return bad("expected a string");
  if (value.length > GATEWAY_LIMITS.maxUrlLength) {
    return bad(`longer than ${GATEWAY_LIMITS.maxUrlLength} characters`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad("not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return bad(`scheme ${url.protocol} is not http: or https:`);
  }
  if (url.username || url.password) bad("credentials are not allowed");
  if (url.search || value.includes("?")) bad("a query is not allowed");
  if (url.hash || value.includes("#")) bad("a fragment is not allowed");
  const scope = hostScope(url.hostname);
  if (FORBIDDEN_SCOPES.has(scope)) {
    bad(`${url.hostname} is a ${scope.replace("_", "-")} address, never a gateway`);
  }
  return url.href.replace(/\/+$/, "");
}

/**
 * Checks that a peer at `source` may introduce `url` (both normalized): an IP literal may be
 * at most as private as the peer itself (public < private < loopback, `io/host_scope.ts`), so
 * a public peer cannot make this node contact its own loopback or LAN addresses. DNS names
 * are not resolved and count as public.
 *
 * @throws {GatewaySetError} with reason `invalid_url`.
 */
export function checkIntroducedBy(url: string, source: string): void {
  const target = hostScope(new URL(url).hostname);
  const from = hostScope(new URL(source).hostname);
  if ((scopeRank(target) ?? Infinity) > (scopeRank(from) ?? -1)) {
    throw new GatewaySetError(
      "invalid_url",
      `Cannot use gateway URL ${JSON.stringify(abbreviate(url, 80))} from peer ${
        abbreviate(source, 80)
      }: a ${from === "name" ? "public" : from.replace("_", "-")} peer cannot introduce a ${
        target.replace("_", "-")
      } address`,
    );
  }
}
