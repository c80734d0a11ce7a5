/**
 * A sealed bill lookup (`docs/protocol.md` §9): `GET /v1/generation?id=<32 hex>` inside the
 * sealed exchange answers a request's final bill — what it was charged and its tokens — so that
 * a requester that went away mid-stream (or whose reply failed) learns what it paid. The id is
 * the first 16 bytes of `keccak256` of the request's voucher signature: only the consumer and the
 * provider know it, and it is never seen by a relay.
 *
 * @module
 */

import type { OpenedHttpRequest } from "../crypto/mod.ts";
import type { SealedError } from "./provider_chat.ts";
import type { ProviderTill } from "./provider_payments.ts";

/** The path of the sealed bill lookup. */
export const GENERATION_PATH = "/v1/generation";

/**
 * Answers a sealed bill lookup: `200` with `{"id","cost","prompt_tokens","completion_tokens"}`
 * (`cost` a decimal string in the chain's smallest unit), `409 in_progress` while the request is
 * served, `404 unknown_generation` for an id this provider does not keep, `400` for a malformed
 * id, `405` for a method other than GET.
 */
export function answerGeneration(
  opened: OpenedHttpRequest,
  till: ProviderTill,
  sealedError: SealedError,
): ReadableStream<Uint8Array> {
  if (opened.method !== "GET") {
    return sealedError(405, "method_not_allowed", `Use GET ${GENERATION_PATH}?id=…`);
  }
  const query = new URLSearchParams(opened.path.slice(GENERATION_PATH.length + 1));
  const id = query.get("id") ?? "";
  if (!/^[0-9a-f]{32}$/.test(id) || query.getAll("id").length !== 1) {
    return sealedError(
      400,
      "invalid_request_error",
      `The id is ${JSON.stringify(id.slice(0, 40))}; expected 32 lower-case hex digits`,
    );
  }
  const bill = till.bill(id);
  if (bill === "running") {
    return sealedError(409, "in_progress", `Generation ${id} is still being served`);
  }
  if (!bill) {
    return sealedError(404, "unknown_generation", `This provider keeps no generation ${id}`);
  }
  return opened.respond({
    status: 200,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
    body: JSON.stringify({
      id: bill.id,
      cost: bill.cost.toString(),
      prompt_tokens: bill.promptTokens,
      completion_tokens: bill.completionTokens,
    }),
  });
}

/** Whether a sealed request's path is the bill lookup. */
export function isGenerationPath(path: string): boolean {
  return path === GENERATION_PATH || path.startsWith(`${GENERATION_PATH}?`);
}
