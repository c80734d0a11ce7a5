/**
 * The sealed exchange of `docs/protocol.md` §7 in one call per step, for both sides:
 *
 * - the client (the daemon) seals an HTTP request (a known-length Binary HTTP request inside
 *   chunked Oblivious HTTP) to an endorsed key configuration, sends the stream, and opens the
 *   sealed reply into `{status, headers, body}` whose body streams as the provider produces it;
 * - the gateway (the provider) opens the sealed request with its key(s) and seals a response
 *   whose head goes out first and whose body goes out one sealed chunk per body chunk (one
 *   per token or server-sent event).
 *
 * Every failure is typed: {@linkcode SealError}, {@linkcode OpenError} (broken, forged or
 * truncated sealing; the body stream errors with it rather than end early) or
 * {@linkcode BinaryHttpError} (a malformed inner message).
 *
 * @example Both sides, end to end
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
 * // daemon: seal the chat request
 * const sealed = await sealHttpRequest(keyConfig, {
 *   body: { model: "devnet/tiny-chat", messages: [{ role: "user", content: "hi" }], stream: true },
 * });
 * // ... POST sealed.body with content-type sealed.contentType to the relay ...
 *
 * // provider: open it and stream the reply, one sealed chunk per event
 * const request = await openHttpRequest(gatewayKey, sealed.body);
 * console.assert(request.path === "/v1/chat/completions");
 * const events = ReadableStream.from(["data: {\"n\":1}\n\n", "data: [DONE]\n\n"])
 *   .pipeThrough(new TextEncoderStream());
 * const sealedReply = request.respond({
 *   status: 200,
 *   headers: { "content-type": "text/event-stream" },
 *   body: events,
 * });
 *
 * // daemon: open the reply as it arrives
 * const reply = await sealed.openResponse(sealedReply);
 * console.assert(reply.status === 200);
 * console.assert((await new Response(reply.body).text()).endsWith("data: [DONE]\n\n"));
 * ```
 *
 * @module
 */

import { bytesLabel } from "../_bytes.ts";
import type { MaybePromise } from "../hpke/_aead.ts";
import { readAll, streamOf } from "../_streams.ts";
import { fieldLines } from "../bhttp/_rules.ts";
import { decodeRequest } from "../bhttp/decode.ts";
import { decodeResponseFrom } from "../bhttp/decode_stream.ts";
import { encodeRequest, encodeResponseReader } from "../bhttp/encode.ts";
import { BinaryHttpError } from "../bhttp/errors.ts";
import type { DecodeOptions, FieldLines, FieldsInit } from "../bhttp/types.ts";
import {
  CHUNKED_REQUEST_MEDIA_TYPE,
  CHUNKED_RESPONSE_MEDIA_TYPE,
  type ChunkedClientExchange,
  type ChunkedGatewayExchange,
  type ChunkedRequestOptions,
  createChunkedRequest,
  openChunkedRequest,
  openChunkedRequestBytes,
  type OpenChunkedRequestOptions,
  openChunkedResponseReader,
  sealChunkedRequestBytes,
} from "./chunked.ts";
import type { SetupPool } from "./setup_pool.ts";
import { rememberDecoded } from "./opened_body_reader.ts";
import { sealChunkedResponseReader } from "./_chunked_gateway.ts";
import type { HpkeSuite } from "../hpke/suite.ts";
import type { GatewayKey, KeyConfig } from "./key_config.ts";
import { SealError } from "./errors.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The HTTP request to seal. */
export interface HttpRequestInit {
  /**
   * Method.
   *
   * @default {"POST"}
   */
  method?: string;
  /**
   * Path and query.
   *
   * @default {"/v1/chat/completions"}
   */
  path?: string;
  /**
   * Scheme of the inner request.
   *
   * @default {"https"}
   */
  scheme?: string;
  /**
   * Authority of the inner request.
   *
   * @default {""}
   */
  authority?: string;
  /**
   * Header fields. `content-type: application/json` is added for a JSON body unless given.
   *
   * @default {[]}
   */
  headers?: FieldsInit;
  /**
   * The body: bytes and strings are sent as they are; any other value is sent as its JSON
   * text.
   *
   * @default {empty}
   */
  body?: unknown;
}

/**
 * Options of {@linkcode sealHttpRequest} and {@linkcode sealHttpRequestBytes}: the sealing
 * options, the reply's decoding limits, and where the HPKE setup comes from.
 */
export interface SealHttpRequestOptions extends ChunkedRequestOptions, DecodeOptions {
  /**
   * Setups prepared ahead for key configurations sealed to again ({@linkcode SetupPool}): this
   * request takes one when there is one, and the pool prepares the next meanwhile. Only for a
   * key configuration given as bytes.
   *
   * @default {undefined} (a fresh setup for this request)
   */
  pool?: SetupPool;
}

/** A sealed request ready to send, and the way to open its reply. */
export interface SealedHttpRequest {
  /** Key identifier the request is sealed to. */
  readonly keyId: number;
  /** The suite used. */
  readonly suite: HpkeSuite;
  /** `message/ohttp-chunked-req`: the content type to send the body with. */
  readonly contentType: typeof CHUNKED_REQUEST_MEDIA_TYPE;
  /** The sealed request body. */
  readonly body: ReadableStream<Uint8Array>;
  /**
   * Opens the sealed reply (`message/ohttp-chunked-res`). Resolves once the status and header
   * fields have arrived; the body then streams. Check the relay's own HTTP status and content
   * type first: an error page from a gateway is not a sealed reply and fails here.
   *
   * @throws {OpenError} when the sealing is broken, forged or truncated before the head.
   * @throws {BinaryHttpError} when the inner response head is malformed.
   */
  openResponse(sealed: ReadableStream<Uint8Array>): Promise<OpenedHttpResponse>;
}

/** A sealed request held whole (see {@linkcode sealHttpRequestBytes}). */
export interface SealedHttpRequestBytes extends Omit<SealedHttpRequest, "body"> {
  /** The sealed request body, whole: the bytes {@linkcode SealedHttpRequest.body} streams. */
  readonly bytes: Uint8Array<ArrayBuffer>;
}

/** An opened reply. */
export interface OpenedHttpResponse {
  /** Final status. */
  readonly status: number;
  /** Header fields. */
  readonly headers: Headers;
  /** Informational (1xx) responses that came first. */
  readonly informational: readonly { status: number; headers: Headers }[];
  /**
   * The content as it arrives. It ends normally only after the sealed stream's final chunk
   * authenticated; otherwise it errors with an {@linkcode OpenError} or
   * {@linkcode BinaryHttpError}.
   */
  readonly body: ReadableStream<Uint8Array>;
  /** Trailer fields; settle after `body` has been read to its end. */
  readonly trailers: Promise<Headers>;
}

/**
 * Seals an HTTP request (by default `POST /v1/chat/completions` with a JSON body) to a key
 * configuration, as a known-length Binary HTTP request inside chunked Oblivious HTTP.
 *
 * @throws {SealError} with reason `invalid_key_config`, `unsupported_suite`,
 * `invalid_input` or `crypto`.
 * @throws {BinaryHttpError} when the method, path or a header is invalid.
 */
export async function sealHttpRequest(
  keyConfig: Uint8Array | KeyConfig,
  request: HttpRequestInit,
  options: SealHttpRequestOptions = {},
): Promise<SealedHttpRequest> {
  const { inner, exchange } = await prepareRequest(keyConfig, request, options);
  return {
    keyId: exchange.keyId,
    suite: exchange.suite,
    contentType: CHUNKED_REQUEST_MEDIA_TYPE,
    body: exchange.sealRequest(inner),
    openResponse: (sealed) => openSealedResponse(exchange, sealed, options),
  };
}

/**
 * {@linkcode sealHttpRequest} for a request sent whole: the same sealed bytes, at once, without
 * a stream (a small request, such as a chat's, goes out in one write with a `Content-Length`).
 *
 * @throws {SealError} with reason `invalid_key_config`, `unsupported_suite`,
 * `invalid_input` or `crypto`.
 * @throws {BinaryHttpError} when the method, path or a header is invalid.
 */
export async function sealHttpRequestBytes(
  keyConfig: Uint8Array | KeyConfig,
  request: HttpRequestInit,
  options: SealHttpRequestOptions = {},
): Promise<SealedHttpRequestBytes> {
  const { inner, exchange } = await prepareRequest(keyConfig, request, options);
  return {
    keyId: exchange.keyId,
    suite: exchange.suite,
    contentType: CHUNKED_REQUEST_MEDIA_TYPE,
    bytes: await sealChunkedRequestBytes(exchange, inner),
    openResponse: (sealed) => openSealedResponse(exchange, sealed, options),
  };
}

/** The inner request encoded, and the exchange (its setup from the pool when given one). */
async function prepareRequest(
  keyConfig: Uint8Array | KeyConfig,
  request: HttpRequestInit,
  options: SealHttpRequestOptions,
): Promise<{ inner: Uint8Array; exchange: ChunkedClientExchange }> {
  const { bytes, json } = bodyBytes(request.body);
  const headers = fieldLines(request.headers);
  if (json && !headers.some(([name]) => name === "content-type")) {
    headers.push(["content-type", "application/json"]);
  }
  const inner = encodeRequest({
    method: request.method ?? "POST",
    scheme: request.scheme ?? "https",
    authority: request.authority ?? "",
    path: request.path ?? "/v1/chat/completions",
    headers,
    content: bytes,
  });
  const { pool } = options;
  if (pool && !(keyConfig instanceof Uint8Array)) {
    throw new SealError(
      "invalid_input",
      "Cannot seal request: a setup pool needs the key configuration as bytes",
    );
  }
  const exchange = pool
    ? await pool.take(keyConfig as Uint8Array, options)
    : await createChunkedRequest(keyConfig, options);
  return { inner, exchange };
}

/** Opens the reply of `exchange`, decoded straight from its opened chunks with `limits`. */
async function openSealedResponse(
  exchange: ChunkedClientExchange,
  sealed: ReadableStream<Uint8Array>,
  limits: DecodeOptions,
): Promise<OpenedHttpResponse> {
  const response = await decodeResponseFrom(openChunkedResponseReader(exchange, sealed), limits);
  const trailers = response.trailers.then(toHeaders);
  trailers.catch(() => {}); // a caller that ignores trailers must not see an unhandled rejection
  const opened: OpenedHttpResponse = {
    status: response.status,
    headers: toHeaders(response.headers),
    informational: response.informational.map((interim) => ({
      status: interim.status,
      headers: toHeaders(interim.headers),
    })),
    // Made when first asked for: `openedBodyReader` may read the content instead.
    get body() {
      return response.body;
    },
    trailers,
  };
  rememberDecoded(opened, response);
  return opened;
}

/** Options of {@linkcode openHttpRequest}. */
export interface OpenHttpRequestOptions extends OpenChunkedRequestOptions, DecodeOptions {
  /**
   * Largest inner request accepted, in bytes (Binary HTTP encoding).
   *
   * @default {DEFAULT_MAX_REQUEST_LENGTH} (8 MiB)
   */
  maxRequestLength?: number;
}

/** Default of {@linkcode OpenHttpRequestOptions.maxRequestLength}: 8 MiB. */
export const DEFAULT_MAX_REQUEST_LENGTH = 8 * 1024 * 1024;

/** The response to seal. */
export interface HttpResponseInit {
  /** Final status, 200 to 599. */
  status: number;
  /**
   * Header fields. Connection-specific fields (`connection`, `keep-alive`,
   * `proxy-connection`, `transfer-encoding`, `upgrade`, `te`) are dropped, as a proxy does.
   *
   * @default {[]}
   */
  headers?: FieldsInit;
  /**
   * The body. A stream is sealed chunk by chunk as it is read (one sealed chunk per stream
   * chunk); bytes and strings go out as one chunk.
   *
   * @default {empty}
   */
  body?: ReadableStream<Uint8Array> | Uint8Array | string | null;
  /**
   * Trailer fields, or a function called after the body ends that returns them.
   *
   * @default {[]}
   */
  trailers?: FieldsInit | (() => FieldsInit | Promise<FieldsInit>);
}

/** An opened request and the way to answer it. */
export interface OpenedHttpRequest {
  /** Key identifier the request was sealed to. */
  readonly keyId: number;
  /** The suite the client chose. */
  readonly suite: HpkeSuite;
  /** Method. */
  readonly method: string;
  /** Scheme. */
  readonly scheme: string;
  /** Authority. */
  readonly authority: string;
  /** Path and query. */
  readonly path: string;
  /** Header fields. */
  readonly headers: Headers;
  /** The request content. */
  readonly body: Uint8Array;
  /** The content decoded as UTF-8. */
  text(): string;
  /**
   * Seals the response as `message/ohttp-chunked-res`: the head is the first sealed chunk,
   * then one sealed chunk per body chunk as soon as it is read. Call once.
   *
   * @throws {SealError} with reason `already_used` on a second call.
   * @throws {BinaryHttpError} for an invalid status or header.
   */
  respond(response: HttpResponseInit): ReadableStream<Uint8Array>;
  /** `message/ohttp-chunked-res`: the content type of what {@linkcode OpenedHttpRequest.respond} returns. */
  readonly responseContentType: typeof CHUNKED_RESPONSE_MEDIA_TYPE;
}

/**
 * Opens a sealed request with the gateway's key(s): reads the whole chunked OHTTP stream
 * (up to `maxRequestLength`), checks its final chunk, and decodes the Binary HTTP request.
 *
 * @throws {OpenError} for an unknown key or suite, a broken, forged or truncated stream, or
 * a request above `maxRequestLength` (reason `chunk_too_large`).
 * @throws {BinaryHttpError} for a malformed inner request.
 */
export async function openHttpRequest(
  keys: GatewayKey | readonly GatewayKey[],
  sealed: ReadableStream<Uint8Array>,
  options: OpenHttpRequestOptions = {},
): Promise<OpenedHttpRequest> {
  const maxRequestLength = checkMaxRequestLength(options);
  const exchange = await openChunkedRequest(keys, sealed, options);
  const bytes = await readAll(
    exchange.request,
    maxRequestLength,
    (received) => requestTooLarge(maxRequestLength, received),
  );
  return openedRequest(exchange, bytes, options);
}

/**
 * {@linkcode openHttpRequest} for a sealed request held whole in memory (a provider that read
 * it whole, bounded): the same checks and errors, without a stream per step (synchronous unless
 * a chunk is large enough to be opened on WebCrypto).
 *
 * @throws {OpenError} for an unknown key or suite, a broken, forged or truncated request.
 * @throws {BinaryHttpError} for a malformed inner request, or one above `maxRequestLength`.
 */
export function openHttpRequestBytes(
  keys: GatewayKey | readonly GatewayKey[],
  sealed: Uint8Array,
  options: OpenHttpRequestOptions = {},
): MaybePromise<OpenedHttpRequest> {
  const maxRequestLength = checkMaxRequestLength(options);
  const exchange = openChunkedRequestBytes(keys, sealed, options);
  if (exchange instanceof Promise) {
    return exchange.then((opened) => openedRequestOf(opened, maxRequestLength, options));
  }
  return openedRequestOf(exchange, maxRequestLength, options);
}

function openedRequestOf(
  exchange: Omit<ChunkedGatewayExchange, "request"> & { readonly request: Uint8Array[] },
  maxRequestLength: number,
  options: OpenHttpRequestOptions,
): OpenedHttpRequest {
  let length = 0;
  for (const chunk of exchange.request) {
    length += chunk.length;
    if (length > maxRequestLength) throw requestTooLarge(maxRequestLength, length);
  }
  const bytes = exchange.request.length === 1 ? exchange.request[0] : new Uint8Array(length);
  if (exchange.request.length !== 1) {
    let at = 0;
    for (const chunk of exchange.request) {
      bytes.set(chunk, at);
      at += chunk.length;
    }
  }
  return openedRequest(exchange, bytes, options);
}

function checkMaxRequestLength(options: OpenHttpRequestOptions): number {
  const maxRequestLength = options.maxRequestLength ?? DEFAULT_MAX_REQUEST_LENGTH;
  if (!Number.isSafeInteger(maxRequestLength) || maxRequestLength < 0) {
    throw new BinaryHttpError(
      "malformed",
      `Cannot open request: maxRequestLength must be a non-negative integer, found ${options.maxRequestLength}`,
    );
  }
  return maxRequestLength;
}

function requestTooLarge(maxRequestLength: number, received: number): BinaryHttpError {
  return new BinaryHttpError(
    "too_large",
    `Cannot open request: it is more than ${bytesLabel(maxRequestLength)} (${
      bytesLabel(received)
    } received so far)`,
  );
}

/** The opened request of an exchange whose request bytes are all read. */
function openedRequest(
  exchange: Pick<ChunkedGatewayExchange, "keyId" | "suite" | "sealResponse">,
  bytes: Uint8Array,
  options: DecodeOptions,
): OpenedHttpRequest {
  const request = decodeRequest(bytes, options);
  return {
    keyId: exchange.keyId,
    suite: exchange.suite,
    method: request.method,
    scheme: request.scheme,
    authority: request.authority,
    path: request.path,
    headers: toHeaders(request.headers),
    body: request.content,
    text: () => decoder.decode(request.content),
    responseContentType: CHUNKED_RESPONSE_MEDIA_TYPE,
    respond(response) {
      const body = response.body ?? new Uint8Array(0);
      const stream = body instanceof ReadableStream
        ? body
        : streamOf(typeof body === "string" ? encoder.encode(body) : body);
      // Encoded and sealed piece by piece in one pipeline of readers: no stream in between.
      const inner = encodeResponseReader(
        {
          status: response.status,
          headers: fieldLines(response.headers).filter(([name]) => !HOP_BY_HOP.has(name)),
        },
        stream.getReader(),
        { trailers: response.trailers },
      );
      return sealChunkedResponseReader(exchange, inner);
    },
  };
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
]);

function bodyBytes(body: unknown): { bytes: Uint8Array; json: boolean } {
  if (body === undefined || body === null) return { bytes: new Uint8Array(0), json: false };
  if (body instanceof Uint8Array) return { bytes: body, json: false };
  if (typeof body === "string") return { bytes: encoder.encode(body), json: false };
  let text: string | undefined;
  try {
    text = JSON.stringify(body);
  } catch (cause) {
    throw new SealError("invalid_input", "Cannot seal request: the body is not JSON-serializable", {
      cause,
    });
  }
  if (text === undefined) {
    throw new SealError(
      "invalid_input",
      `Cannot seal request: a ${typeof body} body has no JSON form`,
    );
  }
  return { bytes: encoder.encode(text), json: true };
}

function toHeaders(lines: FieldLines): Headers {
  const headers = new Headers();
  for (const [name, value] of lines) headers.append(name, value);
  return headers;
}
