/**
 * A provider's error answer inside the sealed exchange, as the daemon's error (private to
 * `sealing/`): a `402` is a refusal of payment (`docs/protocol.md` §9) — `insufficient_deposit`
 * when the consumer's deposit cannot cover the request, `payment_refused` for a voucher the
 * provider did not take; statuses that mean the same to a client pass through; the rest are
 * the provider failing (502). Every such error is marked as answered by the provider
 * ({@linkcode answeredByProvider}): the provider opened the request and refused it, so it was
 * not served and costs nothing.
 *
 * @module
 */

import { DaemonError } from "../core/mod.ts";

/** Provider statuses shown to clients as they are; the rest become 502. */
const PASSED_THROUGH: ReadonlySet<number> = new Set([400, 404, 413, 422, 429]);

const answered = new WeakSet<object>();

/** Marks `error` as a provider's own answer (it refused, nothing was served). */
export function providerAnswer<E extends Error>(error: E): E {
  answered.add(error);
  return error;
}

/** Whether `error` is a provider's own refusal inside the sealed exchange. */
export function answeredByProvider(error: unknown): boolean {
  return typeof error === "object" && error !== null && answered.has(error);
}

/** The daemon's error for a provider's sealed `status` with its JSON `body` (read, limited). */
export function refusalOf(status: number, body: Uint8Array | null): DaemonError {
  const error = body ? providerError(body) : {};
  const message = error.message;
  if (status === 402) {
    const code = error.code ?? "payment_required";
    return providerAnswer(
      new DaemonError(
        code === "insufficient_deposit" ? "insufficient_deposit" : "payment_refused",
        code === "insufficient_deposit"
          ? `The consumer's Escrow deposit cannot cover this request${
            message ? `: ${message}` : ""
          }. Top it up (GET /v1/account shows what is available)`
          : `The provider refused the daemon's voucher (${code})${message ? `: ${message}` : ""}`,
      ),
    );
  }
  return providerAnswer(
    new DaemonError(
      "provider_error",
      `The provider answered ${status}${message ? `: ${message}` : ""}`,
      // Only statuses that mean the same to a client pass through; anything else (auth,
      // proxy, 5xx) is the provider failing: 502. SDKs retry some statuses on their own.
      { status: PASSED_THROUGH.has(status) ? status : 502 },
    ),
  );
}

/** The provider's `error.message` and `error.code`, when its body says them. */
function providerError(body: Uint8Array): { message?: string; code?: string } {
  try {
    const error = JSON.parse(new TextDecoder().decode(body))?.error;
    const message = typeof error?.message === "string" ? error.message.slice(0, 200) : undefined;
    const code = typeof error?.code === "string" && /^[a-z_]{1,40}$/.test(error.code)
      ? error.code
      : undefined;
    return { message, code };
  } catch {
    return {};
  }
}
