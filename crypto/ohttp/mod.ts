/**
 * Oblivious HTTP (RFC 9458 and draft-ietf-ohai-chunked-ohttp) for both sides of the network's
 * sealed exchange (`docs/protocol.md` §7):
 *
 * - {@linkcode sealHttpRequest} (the client) and {@linkcode openHttpRequest} (the gateway): one
 *   call per side — a Binary HTTP request inside chunked OHTTP, and a reply whose head goes out
 *   first and whose body streams one sealed chunk per body chunk.
 * - {@linkcode createChunkedRequest} and {@linkcode openChunkedRequest}: chunked OHTTP over
 *   any content, as Web Streams.
 * - {@linkcode encapsulateRequest} and {@linkcode decapsulateRequest}: the one-shot form
 *   (RFC 9458 §4).
 * - Key configurations (RFC 9458 §3): {@linkcode createGatewayKey} pairs an HPKE key pair with
 *   the configuration a gateway publishes; {@linkcode encodeKeyConfig},
 *   {@linkcode decodeKeyConfig} and the `application/ohttp-keys` list, decoded strictly.
 *
 * Every failure is typed: {@linkcode SealError}, {@linkcode OpenError} (a broken, forged or
 * truncated stream errors with it rather than end early), {@linkcode KeyConfigError}, and
 * `BinaryHttpError` (`@net/consumer/bhttp`) for a malformed inner message. Key pairs come from
 * `@net/consumer/hpke`; a provider endorses its configuration with `@net/consumer/endorsement`.
 *
 * @example Both sides of one exchange: seal a chat request, stream the reply
 * ```ts
 * import { generateKeyPair } from "@net/consumer/hpke";
 * import {
 *   createGatewayKey,
 *   encodeKeyConfig,
 *   openHttpRequest,
 *   sealHttpRequest,
 * } from "@net/consumer/ohttp";
 *
 * // provider: its key, published as a configuration (endorsed elsewhere)
 * const gatewayKey = createGatewayKey(await generateKeyPair(), { keyId: 1 });
 * const keyConfig = encodeKeyConfig(gatewayKey.config);
 *
 * // client: seal the request; POST sealed.body with content-type sealed.contentType
 * const sealed = await sealHttpRequest(keyConfig, {
 *   body: { model: "devnet/tiny-chat", messages: [{ role: "user", content: "hi" }] },
 * });
 *
 * // provider: open it and answer, one sealed chunk per event
 * const request = await openHttpRequest(gatewayKey, sealed.body);
 * const events = ReadableStream.from(["data: 1\n\n", "data: [DONE]\n\n"])
 *   .pipeThrough(new TextEncoderStream());
 * const reply = request.respond({
 *   status: 200,
 *   headers: { "content-type": "text/event-stream" },
 *   body: events,
 * });
 *
 * // client: the head arrives first, the body streams and ends only if it authenticated
 * const opened = await sealed.openResponse(reply);
 * console.assert(opened.status === 200 && request.path === "/v1/chat/completions");
 * console.assert((await new Response(opened.body).text()).endsWith("data: [DONE]\n\n"));
 * ```
 *
 * @module
 */

export { OpenError, type OpenFailure, SealError, type SealFailure } from "./errors.ts";
export {
  createGatewayKey,
  type CreateGatewayKeyOptions,
  decodeKeyConfig,
  decodeKeyConfigList,
  DEFAULT_SUITES,
  encodeKeyConfig,
  encodeKeyConfigList,
  type GatewayKey,
  KEY_CONFIG_MEDIA_TYPE,
  type KeyConfig,
  KeyConfigError,
  type KeyConfigFailure,
  type SymmetricSuite,
} from "./key_config.ts";
export {
  type ClientExchange,
  decapsulateRequest,
  type DecapsulateRequestOptions,
  encapsulateRequest,
  type EncapsulateRequestOptions,
  type GatewayExchange,
  REQUEST_MEDIA_TYPE,
  RESPONSE_MEDIA_TYPE,
} from "./one_shot.ts";
export {
  CHUNKED_REQUEST_MEDIA_TYPE,
  CHUNKED_RESPONSE_MEDIA_TYPE,
  type ChunkedClientExchange,
  type ChunkedGatewayExchange,
  type ChunkedRequestOptions,
  createChunkedRequest,
  DEFAULT_MAX_CHUNK_LENGTH,
  openChunkedRequest,
  type OpenChunkedRequestOptions,
} from "./chunked.ts";
export {
  DEFAULT_MAX_REQUEST_LENGTH,
  type HttpRequestInit,
  type HttpResponseInit,
  type OpenedHttpRequest,
  type OpenedHttpResponse,
  openHttpRequest,
  type OpenHttpRequestOptions,
  type SealedHttpRequest,
  type SealedHttpRequestBytes,
  sealHttpRequest,
  sealHttpRequestBytes,
  type SealHttpRequestOptions,
} from "./sealed_exchange.ts";
export { SetupPool, type SetupPoolOptions } from "./setup_pool.ts";
