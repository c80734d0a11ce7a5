/**
 * Sealing a request to a provider's trusted key (`docs/protocol.md` §7: a known-length Binary
 * HTTP request inside chunked Oblivious HTTP), with `crypto/ohttp`'s sealed exchange: sealed
 * whole (it goes out in one write), its HPKE setup taken from a pool of setups prepared ahead
 * when the key will be sealed to again (a verified-tier key stays trusted until its endorsement
 * expires), and its reply opened within the daemon's limits on a reply's head
 * ({@linkcode REPLY_HEAD_LIMITS}).
 *
 * @module
 */

import {
  type DecodeOptions,
  DEFAULT_MAX_FIELD_LENGTH,
  DEFAULT_MAX_FIELD_SECTION_LENGTH,
  type SealedHttpRequestBytes,
  sealHttpRequestBytes,
  type SetupPool,
} from "../../crypto/mod.ts";

/**
 * What the head of a provider's reply may hold: a field (name or value) of at most 16 KiB, a
 * header or trailer section of at most 64 KiB, and at most 8 informational responses before
 * the final one. A provider's head is a status and a few fields; these are the limits of
 * `crypto/bhttp`, given here so the daemon says what it accepts.
 */
export const REPLY_HEAD_LIMITS: Readonly<DecodeOptions> = Object.freeze({
  maxFieldLength: DEFAULT_MAX_FIELD_LENGTH,
  maxFieldSectionLength: DEFAULT_MAX_FIELD_SECTION_LENGTH,
  maxInformationalResponses: 8,
});

/**
 * A request to seal: its JSON body, its header fields and its path; or a provider's bill asked
 * for (`GET /v1/generation?id=…`, `docs/protocol.md` §9), which has no body.
 */
export interface RequestToSeal {
  /** The body, sent as its JSON text (`content-type: application/json`); ignored for `GET`. */
  readonly body: unknown;
  /** The body's JSON text, when the caller already has it (then `body` is not serialized). */
  readonly text?: string;
  /** Header fields, before `content-type`. */
  readonly headers: readonly (readonly [string, string])[];
  /** To this path. */
  readonly path: "/v1/chat/completions" | "/v1/embeddings" | `/v1/generation?id=${string}`;
  /** @default {"POST"} (`GET` has no body: `body` and `text` are ignored) */
  readonly method?: "POST" | "GET";
}

/** A sealed request, with the content it carries (the JSON text sealed). */
export interface SealedChat extends SealedHttpRequestBytes {
  /** The inner request's content (the JSON text sealed), which a TEE receipt digests. */
  readonly content: Uint8Array;
}

const encoder = new TextEncoder();

/**
 * Seals `request` to `keyConfig`, whole. With `pool`, the key will be sealed to again: a setup
 * prepared earlier is used when there is one, and the next is prepared meanwhile.
 *
 * @throws {SealError} for an unusable key configuration.
 * @throws {BinaryHttpError} for a header that cannot be encoded.
 */
export async function sealRequest(
  keyConfig: Uint8Array,
  request: RequestToSeal,
  options: { pool?: SetupPool } = {},
): Promise<SealedChat> {
  const get = request.method === "GET";
  const content = get
    ? new Uint8Array()
    : encoder.encode(request.text ?? JSON.stringify(request.body));
  const sealed = await sealHttpRequestBytes(keyConfig, {
    method: get ? "GET" : "POST",
    path: request.path,
    headers: get
      ? [...request.headers]
      : [...request.headers, ["content-type", "application/json"]],
    body: content,
  }, { ...REPLY_HEAD_LIMITS, pool: options.pool });
  return { ...sealed, content };
}
