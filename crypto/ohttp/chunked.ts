/**
 * Chunked Oblivious HTTP (draft-ietf-ohai-chunked-ohttp) for both directions, as Web Streams:
 * every chunk is sealed or opened as it passes, so a reply can be read while it is produced.
 *
 * ```
 * Chunked Encapsulated Request  = hdr ‖ enc ‖ chunk* ‖ 0x00 ‖ final chunk
 * Chunked Encapsulated Response = response_nonce ‖ chunk* ‖ 0x00 ‖ final chunk
 * chunk                         = varint(length) ‖ sealed chunk      (length ≥ 1)
 * ```
 *
 * - Request chunks are sealed with the HPKE context (`info` label
 *   `"message/bhttp chunked request"`), whose sequence number orders them.
 * - Response chunks are sealed with the key and nonce derived from the export
 *   `"message/bhttp chunked response"`; chunk `i` uses `aead_nonce XOR i`.
 * - Non-final chunks have an empty AAD and must carry data; the final chunk has AAD
 *   `"final"`, may be empty, and runs to the end of the stream.
 *
 * Receiving is fail-closed: a stream that ends without an authenticated final chunk errors
 * with {@linkcode OpenError} (`truncated`), never ends normally; a length prefix above
 * `maxChunkLength` is refused before the chunk is buffered (and so is a final chunk that
 * grows past it); a zero-length non-final chunk is refused. Chunks that authenticated before
 * the error have already been delivered: a consumer must treat the error as the outcome.
 *
 * Sending: each plaintext chunk written becomes one sealed chunk (split when longer than
 * `maxChunkLength` minus the tag), empty writes are skipped, and closing the stream seals an
 * empty final chunk. A body given as bytes ends with its last piece sealed as the final chunk.
 *
 * @example One streamed exchange, client and gateway in one place
 * ```ts
 * import { generateKeyPair } from "@net/consumer/hpke";
 * import {
 *   createChunkedRequest,
 *   createGatewayKey,
 *   encodeKeyConfig,
 *   openChunkedRequest,
 * } from "@net/consumer/ohttp";
 *
 * const gatewayKey = createGatewayKey(await generateKeyPair(), { keyId: 1 });
 * const text = new TextEncoder();
 *
 * // client: seal the request body
 * const client = await createChunkedRequest(encodeKeyConfig(gatewayKey.config));
 * const sealedRequest = client.sealRequest(text.encode("hello"));
 *
 * // gateway: open it, answer with two chunks
 * const gateway = await openChunkedRequest(gatewayKey, sealedRequest);
 * const request = await new Response(gateway.request).text();
 * const answer = ReadableStream.from([text.encode(request), text.encode(" back")]);
 * const sealedResponse = gateway.sealResponse(answer);
 *
 * // client: open the reply as it arrives
 * const reply = await new Response(client.openResponse(sealedResponse)).text();
 * console.assert(reply === "hello back");
 * ```
 *
 * @module
 */

import { bytesLabel } from "../_bytes.ts";
import {
  CHUNKED_LABELS,
  chunkNonce,
  deriveResponseKeys,
  EMPTY,
  FINAL_AAD,
  gatewayKeys,
  HEADER_LENGTH,
  parseRequestHeader,
  prefixLength,
  responseNonceLength,
  selectGatewayKey,
  setupClient,
  setupGateway,
} from "./_encapsulation.ts";
import { type RandomSource, systemRandom } from "../hpke/key_pair.ts";
import type { HpkeSuite } from "../hpke/suite.ts";
import type { MaybePromise } from "../hpke/_aead.ts";
import { openBytes, openReader, openStream, sealBytesWhole, sealStream } from "./_chunk_stream.ts";
import { type ByteReader, streamOfReader } from "../_streams.ts";
import {
  checkMaxChunkLength,
  gatewayExchange,
  readRequestPrefix,
  requestOpener,
} from "./_chunked_gateway.ts";
import { OpenError, SealError } from "./errors.ts";
import type { GatewayKey, KeyConfig } from "./key_config.ts";

/** Media type of a chunked encapsulated request. */
export const CHUNKED_REQUEST_MEDIA_TYPE = "message/ohttp-chunked-req";
/** Media type of a chunked encapsulated response. */
export const CHUNKED_RESPONSE_MEDIA_TYPE = "message/ohttp-chunked-res";
/** Default upper bound on one sealed chunk: 64 KiB (`docs/protocol.md` §7). */
export const DEFAULT_MAX_CHUNK_LENGTH = 64 * 1024;

/** Options of {@linkcode createChunkedRequest}. */
export interface ChunkedRequestOptions {
  /**
   * The AEAD to use; the key configuration must offer it.
   *
   * @default AES-128-GCM when offered, else the first suite the configuration lists
   */
  aead?: number;
  /**
   * Where the ephemeral key's bytes come from. Inject a fixed source only in tests.
   *
   * @default {crypto.getRandomValues}
   */
  random?: RandomSource;
  /**
   * Largest sealed chunk sent or accepted, in bytes (tag included), from 64
   * bytes to 16 MiB.
   *
   * @default {DEFAULT_MAX_CHUNK_LENGTH} (64 KiB)
   */
  maxChunkLength?: number;
}

/** The client's side of one chunked exchange. */
export interface ChunkedClientExchange {
  /** Key identifier the request is sealed to. */
  readonly keyId: number;
  /** The suite used. */
  readonly suite: HpkeSuite;
  /**
   * Seals the request body into `message/ohttp-chunked-req` bytes: `hdr ‖ enc` first, then
   * one chunk per plaintext chunk as it arrives (see the module doc). Call once.
   *
   * @throws {SealError} with reason `already_used` on a second call; the returned stream
   * errors with a {@linkcode SealError} when sealing fails.
   */
  sealRequest(body: ReadableStream<Uint8Array> | Uint8Array): ReadableStream<Uint8Array>;
  /**
   * Opens a `message/ohttp-chunked-res` stream into the plaintext response, chunk by chunk.
   * Call once.
   *
   * @throws {OpenError} with reason `already_used` on a second call; the returned stream
   * errors with an {@linkcode OpenError} for any broken, forged or truncated input.
   */
  openResponse(sealed: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
}

/**
 * Starts a chunked request to a key configuration (bytes or decoded): sets up the HPKE
 * sender context.
 *
 * @throws {SealError} with reason `invalid_key_config`, `unsupported_suite`,
 * `invalid_input` or `crypto`.
 */
export async function createChunkedRequest(
  keyConfig: Uint8Array | KeyConfig,
  options: ChunkedRequestOptions = {},
): Promise<ChunkedClientExchange> {
  const maxChunkLength = checkMaxChunkLength(
    options.maxChunkLength,
    SealError,
    "seal chunked request",
  );
  const setup = await setupClient(keyConfig, CHUNKED_LABELS, options);
  const { suite, context } = setup;
  let sealed = false;
  let opened = false;
  const spec = { what: "request", tagLength: suite.aead.tagLength, maxChunkLength } as const;
  const start = () => ({
    prefix: setup.prefix,
    seal: (plaintext: Uint8Array, final: boolean) =>
      context.seal(plaintext, final ? FINAL_AAD : EMPTY),
  });
  const useOnce = () => {
    if (sealed) {
      throw new SealError(
        "already_used",
        "Cannot seal chunked request: this exchange already sealed one",
      );
    }
    sealed = true;
  };
  const exchange: ChunkedClientExchange = {
    keyId: setup.keyId,
    suite,
    sealRequest(body) {
      useOnce();
      return sealStream(body, { ...spec, start });
    },
    openResponse(sealedResponse) {
      return streamOfReader(openResponseReader(sealedResponse, false));
    },
  };
  const openResponseReader = (
    sealedResponse: ReadableStream<Uint8Array>,
    join: boolean,
  ): ByteReader => {
    if (opened) {
      throw new OpenError(
        "already_used",
        "Cannot open chunked response: this exchange already opened one",
      );
    }
    opened = true;
    return openReader(sealedResponse, {
      what: "response",
      prefixLength: responseNonceLength(suite),
      tagLength: suite.aead.tagLength,
      maxChunkLength,
      start(responseNonce) {
        const keys = deriveResponseKeys(
          suite,
          context,
          setup.enc,
          responseNonce,
          CHUNKED_LABELS.response,
        );
        let counter = 0;
        const nonce = new Uint8Array(keys.nonce.length);
        return (ciphertext, final) =>
          keys.open(
            chunkNonce(keys.nonce, counter++, nonce),
            ciphertext,
            final ? FINAL_AAD : EMPTY,
          );
      },
    }, { join });
  };
  responseReaders.set(exchange, openResponseReader);
  wholeSealers.set(exchange, (body) => {
    useOnce();
    return sealBytesWhole(body, spec, start());
  });
  return exchange;
}

const responseReaders = new WeakMap<
  ChunkedClientExchange,
  (sealed: ReadableStream<Uint8Array>, join: boolean) => ByteReader
>();

/**
 * {@linkcode ChunkedClientExchange.openResponse} as a reader of the opened chunks, without a
 * stream between it and its reader (`sealed_exchange.ts` decodes the response straight from
 * it). What one read of `sealed` opened is given as one piece (every chunk it held, joined: a
 * reader of the plaintext as a byte stream, which is what the decoder is). Counts as the
 * exchange's one response.
 *
 * @throws {OpenError} with reason `already_used` when the exchange already opened one,
 * `malformed` for an exchange not made by {@linkcode createChunkedRequest} or a `sealed` that
 * is not a stream.
 */
export function openChunkedResponseReader(
  exchange: ChunkedClientExchange,
  sealed: ReadableStream<Uint8Array>,
): ByteReader {
  const open = responseReaders.get(exchange);
  if (!open) {
    throw new OpenError(
      "malformed",
      "Cannot open chunked response: the exchange was not made by createChunkedRequest",
    );
  }
  return open(sealed, true);
}

const wholeSealers = new WeakMap<
  ChunkedClientExchange,
  (body: Uint8Array) => MaybePromise<Uint8Array<ArrayBuffer>>
>();

/**
 * Seals a request body held whole into the `message/ohttp-chunked-req` bytes that
 * `exchange.sealRequest(body)` would stream, at once and without a stream (synchronous unless a
 * piece is large enough to be sealed on WebCrypto). Counts as the exchange's one request.
 *
 * @throws {SealError} with reason `already_used` when the exchange already sealed one,
 * `invalid_input` for an exchange not made by {@linkcode createChunkedRequest}, `crypto` (or
 * rejects with it) when sealing fails.
 */
export function sealChunkedRequestBytes(
  exchange: ChunkedClientExchange,
  body: Uint8Array,
): MaybePromise<Uint8Array<ArrayBuffer>> {
  const seal = wholeSealers.get(exchange);
  if (!seal) {
    throw new SealError(
      "invalid_input",
      "Cannot seal chunked request: the exchange was not made by createChunkedRequest",
    );
  }
  if (!(body instanceof Uint8Array)) {
    throw new SealError(
      "invalid_input",
      `Cannot seal chunked request: expected bytes, found ${typeof body}`,
    );
  }
  return seal(body);
}

/** Options of {@linkcode openChunkedRequest}. */
export interface OpenChunkedRequestOptions {
  /**
   * Where the response nonce comes from. Inject a fixed source only in tests.
   *
   * @default {crypto.getRandomValues}
   */
  random?: RandomSource;
  /**
   * Largest sealed chunk accepted or sent, in bytes (tag included), from 64
   * bytes to 16 MiB.
   *
   * @default {DEFAULT_MAX_CHUNK_LENGTH} (64 KiB)
   */
  maxChunkLength?: number;
}

/** The gateway's side of one chunked exchange. */
export interface ChunkedGatewayExchange {
  /** Key identifier the request was sealed to. */
  readonly keyId: number;
  /** The suite the client chose. */
  readonly suite: HpkeSuite;
  /**
   * The plaintext request, chunk by chunk as it arrives. Errors with an
   * {@linkcode OpenError} for any broken, forged or truncated input.
   */
  readonly request: ReadableStream<Uint8Array>;
  /**
   * Seals the response body into `message/ohttp-chunked-res` bytes: the nonce first, then one
   * sealed chunk per plaintext chunk as soon as it is written. Call once.
   *
   * @throws {SealError} with reason `already_used` on a second call.
   */
  sealResponse(body: ReadableStream<Uint8Array> | Uint8Array): ReadableStream<Uint8Array>;
}

/**
 * Opens a chunked request with the gateway's key(s). Reads the header and encapsulated key
 * from the stream before returning, so an unknown key or suite is refused before any reply.
 *
 * @throws {OpenError} with reason `truncated`, `unknown_key`, `unsupported_suite` or
 * `malformed` (the stream is cancelled). When the input stream itself errors (a transport
 * failure), its own error is passed on unchanged.
 */
export async function openChunkedRequest(
  keys: GatewayKey | readonly GatewayKey[],
  sealed: ReadableStream<Uint8Array>,
  options: OpenChunkedRequestOptions = {},
): Promise<ChunkedGatewayExchange> {
  const list = gatewayKeys(keys);
  const maxChunkLength = checkMaxChunkLength(
    options.maxChunkLength,
    OpenError,
    "open chunked request",
  );
  const reader = sealed.getReader();
  try {
    const { key, suite, header, enc, rest } = await readRequestPrefix(reader, list);
    const setup = setupGateway(key, suite, header, enc, CHUNKED_LABELS);
    const request = openStream(rest, {
      what: "request",
      prefixLength: 0,
      tagLength: suite.aead.tagLength,
      maxChunkLength,
      start: () => requestOpener(setup),
    });
    return gatewayExchange(setup, request, maxChunkLength, options.random ?? systemRandom);
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    throw error;
  }
}

/**
 * {@linkcode openChunkedRequest} for a request held whole in memory (a gateway that read it
 * whole, bounded): the same checks, the same errors, in the same order, but with no stream per
 * step — synchronous unless a chunk is large enough to be opened on WebCrypto. The request comes
 * back as its chunks; the exchange seals the response as
 * {@linkcode ChunkedGatewayExchange.sealResponse} does.
 *
 * @throws {OpenError} with reason `truncated`, `unknown_key`, `unsupported_suite`,
 * `malformed`, `chunk_too_large`, `empty_chunk` or `authentication`.
 */
export function openChunkedRequestBytes(
  keys: GatewayKey | readonly GatewayKey[],
  sealed: Uint8Array,
  options: OpenChunkedRequestOptions = {},
): MaybePromise<Omit<ChunkedGatewayExchange, "request"> & { readonly request: Uint8Array[] }> {
  const list = gatewayKeys(keys);
  const maxChunkLength = checkMaxChunkLength(
    options.maxChunkLength,
    OpenError,
    "open chunked request",
  );
  const what = CHUNKED_LABELS.what;
  if (sealed.length < HEADER_LENGTH) {
    throw new OpenError(
      "truncated",
      `Cannot open ${what}: the stream ended after ${
        bytesLabel(sealed.length)
      }, inside the ${HEADER_LENGTH}-byte header`,
    );
  }
  const header = sealed.slice(0, HEADER_LENGTH);
  const { key, suite } = selectGatewayKey(list, parseRequestHeader(header), what);
  const prefix = prefixLength(suite.kem.id)!;
  if (sealed.length < prefix) {
    throw new OpenError(
      "truncated",
      `Cannot open ${what}: the stream ended after ${
        bytesLabel(sealed.length)
      }, inside the ${suite.kem.encLength}-byte encapsulated key`,
    );
  }
  const setup = setupGateway(
    key,
    suite,
    header,
    sealed.slice(HEADER_LENGTH, prefix),
    CHUNKED_LABELS,
  );
  const request = openBytes(
    sealed.subarray(prefix),
    { what: "request", tagLength: suite.aead.tagLength, maxChunkLength },
    requestOpener(setup),
  );
  const random = options.random ?? systemRandom;
  if (request instanceof Promise) {
    return request.then((chunks) => gatewayExchange(setup, chunks, maxChunkLength, random));
  }
  return gatewayExchange(setup, request, maxChunkLength, random);
}
