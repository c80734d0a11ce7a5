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
 * import {
 *   createChunkedRequest,
 *   createGatewayKey,
 *   encodeKeyConfig,
 *   generateKeyPair,
 *   openChunkedRequest,
 * } from "@net/consumer/crypto";
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

import { ByteQueue } from "./_byte_queue.ts";
import { bytesLabel, view } from "./_bytes.ts";
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
import { prepend } from "./_streams.ts";
import { readVarint, VARINT_TOO_LARGE, varintLength, varintSize, writeVarint } from "./_varint.ts";
import { type HpkeSuite, randomBytes, type RandomSource, systemRandom } from "./hpke.ts";
import type { GatewayKey, KeyConfig } from "./key_config.ts";
import { OpenError, SealError } from "./ohttp_errors.ts";

/** Media type of a chunked encapsulated request. */
export const CHUNKED_REQUEST_MEDIA_TYPE = "message/ohttp-chunked-req";
/** Media type of a chunked encapsulated response. */
export const CHUNKED_RESPONSE_MEDIA_TYPE = "message/ohttp-chunked-res";
/** Default upper bound on one sealed chunk: 64 KiB (`docs/protocol.md` §7). */
export const DEFAULT_MAX_CHUNK_LENGTH = 64 * 1024;
/** Smallest accepted `maxChunkLength`. */
export const MIN_MAX_CHUNK_LENGTH = 64;
/** Largest accepted `maxChunkLength`: 16 MiB. */
export const MAX_MAX_CHUNK_LENGTH = 16 * 1024 * 1024;

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
   * @default {systemRandom}
   */
  random?: RandomSource;
  /**
   * Largest sealed chunk sent or accepted, in bytes (tag included), from
   * {@linkcode MIN_MAX_CHUNK_LENGTH} to {@linkcode MAX_MAX_CHUNK_LENGTH}.
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
  return {
    keyId: setup.keyId,
    suite,
    sealRequest(body) {
      if (sealed) {
        throw new SealError(
          "already_used",
          "Cannot seal chunked request: this exchange already sealed one",
        );
      }
      sealed = true;
      return sealStream(body, {
        what: "request",
        tagLength: suite.aead.tagLength,
        maxChunkLength,
        start: () =>
          Promise.resolve({
            prefix: setup.prefix,
            seal: async (plaintext, final) =>
              view(
                await context.seal(plaintext.slice(), final ? FINAL_AAD.slice() : EMPTY.slice()),
              ),
          }),
      });
    },
    openResponse(sealedResponse) {
      if (opened) {
        throw new OpenError(
          "already_used",
          "Cannot open chunked response: this exchange already opened one",
        );
      }
      opened = true;
      return openStream(sealedResponse, {
        what: "response",
        prefixLength: responseNonceLength(suite),
        tagLength: suite.aead.tagLength,
        maxChunkLength,
        async start(responseNonce) {
          const keys = await deriveResponseKeys(
            suite,
            context,
            setup.enc,
            responseNonce,
            CHUNKED_LABELS.response,
          );
          let counter = 0;
          return (ciphertext, final) =>
            keys.open(chunkNonce(keys.nonce, counter++), ciphertext, final ? FINAL_AAD : EMPTY);
        },
      });
    },
  };
}

/** Options of {@linkcode openChunkedRequest}. */
export interface OpenChunkedRequestOptions {
  /**
   * Where the response nonce comes from. Inject a fixed source only in tests.
   *
   * @default {systemRandom}
   */
  random?: RandomSource;
  /**
   * Largest sealed chunk accepted or sent, in bytes (tag included), from
   * {@linkcode MIN_MAX_CHUNK_LENGTH} to {@linkcode MAX_MAX_CHUNK_LENGTH}.
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
  const what = CHUNKED_LABELS.what;
  const reader = sealed.getReader();
  const queue = new ByteQueue();
  const fill = async (count: number): Promise<boolean> => {
    while (queue.length < count) {
      const { done, value } = await reader.read();
      if (done) return false;
      if (!(value instanceof Uint8Array)) {
        throw new OpenError(
          "malformed",
          `Cannot open ${what}: the stream yielded ${typeof value}, expected bytes`,
        );
      }
      queue.push(value);
    }
    return true;
  };
  let exchange: ChunkedGatewayExchange;
  try {
    if (!await fill(HEADER_LENGTH)) {
      throw new OpenError(
        "truncated",
        `Cannot open ${what}: the stream ended after ${
          bytesLabel(queue.length)
        }, inside the ${HEADER_LENGTH}-byte header`,
      );
    }
    const header = queue.take(HEADER_LENGTH).slice();
    const parsed = parseRequestHeader(header);
    const { key, suite } = selectGatewayKey(list, parsed, what);
    const encLength = prefixLength(suite.kem.id)! - HEADER_LENGTH;
    if (!await fill(encLength)) {
      throw new OpenError(
        "truncated",
        `Cannot open ${what}: the stream ended after ${
          bytesLabel(HEADER_LENGTH + queue.length)
        }, inside the ${suite.kem.encLength}-byte encapsulated key`,
      );
    }
    const enc = queue.take(encLength).slice();
    const setup = await setupGateway(key, suite, header, enc, CHUNKED_LABELS);
    const rest = prepend(queue.takeAll().slice(), reader);
    const request = openStream(rest, {
      what: "request",
      prefixLength: 0,
      tagLength: suite.aead.tagLength,
      maxChunkLength,
      start: () =>
        Promise.resolve(async (ciphertext, final) =>
          view(
            await setup.context.open(ciphertext.slice(), final ? FINAL_AAD.slice() : EMPTY.slice()),
          )
        ),
    });
    let used = false;
    exchange = {
      keyId: setup.keyId,
      suite,
      request,
      sealResponse(body) {
        if (used) {
          throw new SealError(
            "already_used",
            "Cannot seal chunked response: this exchange already sealed one",
          );
        }
        used = true;
        return sealStream(body, {
          what: "response",
          tagLength: suite.aead.tagLength,
          maxChunkLength,
          async start() {
            let responseNonce: Uint8Array;
            try {
              responseNonce = randomBytes(
                options.random ?? systemRandom,
                responseNonceLength(suite),
                "response nonce",
              );
            } catch (cause) {
              throw new SealError(
                "crypto",
                "Cannot seal chunked response: the random source failed",
                {
                  cause,
                },
              );
            }
            const keys = await deriveResponseKeys(
              suite,
              setup.context,
              setup.enc,
              responseNonce,
              CHUNKED_LABELS.response,
            );
            let counter = 0;
            return {
              prefix: responseNonce,
              seal: (plaintext, final) =>
                keys.seal(chunkNonce(keys.nonce, counter++), plaintext, final ? FINAL_AAD : EMPTY),
            };
          },
        });
      },
    };
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    throw error;
  }
  return exchange;
}

// ---------------------------------------------------------------------------------------------
// Framing shared by both directions.

type ChunkSeal = (plaintext: Uint8Array, final: boolean) => Promise<Uint8Array>;
type ChunkOpen = (ciphertext: Uint8Array, final: boolean) => Promise<Uint8Array>;

interface SealSpec {
  what: "request" | "response";
  tagLength: number;
  maxChunkLength: number;
  start(): Promise<{ prefix: Uint8Array; seal: ChunkSeal }>;
}

interface OpenSpec {
  what: "request" | "response";
  prefixLength: number;
  tagLength: number;
  maxChunkLength: number;
  start(prefix: Uint8Array): Promise<ChunkOpen>;
}

function checkMaxChunkLength(
  value: number | undefined,
  ErrorClass: typeof SealError | typeof OpenError,
  action: string,
): number {
  const length = value ?? DEFAULT_MAX_CHUNK_LENGTH;
  if (!Number.isInteger(length) || length < MIN_MAX_CHUNK_LENGTH || length > MAX_MAX_CHUNK_LENGTH) {
    const message =
      `Cannot ${action}: maxChunkLength must be an integer from ${MIN_MAX_CHUNK_LENGTH} to ${MAX_MAX_CHUNK_LENGTH}, found ${value}`;
    throw ErrorClass === SealError
      ? new SealError("invalid_input", message)
      : new OpenError("malformed", message);
  }
  return length;
}

function frame(ciphertext: Uint8Array, final: boolean): Uint8Array {
  const length = final ? 0 : ciphertext.length;
  const out = new Uint8Array(varintSize(length) + ciphertext.length);
  const at = writeVarint(out, 0, length);
  out.set(ciphertext, at);
  return out;
}

async function sealChunk(
  seal: ChunkSeal,
  plaintext: Uint8Array,
  final: boolean,
  what: string,
): Promise<Uint8Array> {
  try {
    return frame(await seal(plaintext, final), final);
  } catch (cause) {
    throw new SealError("crypto", `Cannot seal chunked ${what}: the AEAD failed`, { cause });
  }
}

function sealStream(
  body: ReadableStream<Uint8Array> | Uint8Array,
  spec: SealSpec,
): ReadableStream<Uint8Array> {
  const maxPlaintext = spec.maxChunkLength - spec.tagLength;
  if (body instanceof Uint8Array) return sealBytes(body.slice(), spec, maxPlaintext);
  if (!(body instanceof ReadableStream)) {
    throw new SealError(
      "invalid_input",
      `Cannot seal chunked ${spec.what}: expected bytes or a ReadableStream, found ${typeof body}`,
    );
  }
  let seal: ChunkSeal;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async start(controller) {
        const started = await spec.start();
        seal = started.seal;
        controller.enqueue(started.prefix);
      },
      async transform(chunk, controller) {
        if (!(chunk instanceof Uint8Array)) {
          throw new SealError(
            "invalid_input",
            `Cannot seal chunked ${spec.what}: the body yielded ${typeof chunk}, expected bytes`,
          );
        }
        for (let at = 0; at < chunk.length; at += maxPlaintext) {
          const piece = chunk.subarray(at, Math.min(chunk.length, at + maxPlaintext));
          controller.enqueue(await sealChunk(seal, piece, false, spec.what));
        }
      },
      async flush(controller) {
        controller.enqueue(await sealChunk(seal, EMPTY, true, spec.what));
      },
    }),
  );
}

function sealBytes(
  body: Uint8Array,
  spec: SealSpec,
  maxPlaintext: number,
): ReadableStream<Uint8Array> {
  let seal: ChunkSeal;
  let at = 0;
  let done = false;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const started = await spec.start();
      seal = started.seal;
      controller.enqueue(started.prefix);
    },
    async pull(controller) {
      if (done) return;
      const end = Math.min(body.length, at + maxPlaintext);
      const final = end === body.length;
      controller.enqueue(await sealChunk(seal, body.subarray(at, end), final, spec.what));
      at = end;
      if (final) {
        done = true;
        controller.close();
      }
    },
  }, { highWaterMark: 0 });
}

function openStream(
  sealed: ReadableStream<Uint8Array>,
  spec: OpenSpec,
): ReadableStream<Uint8Array> {
  if (!(sealed instanceof ReadableStream)) {
    throw new OpenError(
      "malformed",
      `Cannot open chunked ${spec.what}: expected a ReadableStream, found ${typeof sealed}`,
    );
  }
  const queue = new ByteQueue();
  const what = `chunked ${spec.what}`;
  let open: ChunkOpen | undefined;
  let state: "prefix" | "length" | "body" | "final" = spec.prefixLength > 0 ? "prefix" : "length";
  let bodyLength = 0;
  let chunks = 0;

  const openChunk = async (ciphertext: Uint8Array, final: boolean): Promise<Uint8Array> => {
    try {
      return await open!(ciphertext, final);
    } catch (cause) {
      throw new OpenError(
        "authentication",
        `Cannot open ${what}: ${final ? "final chunk" : `chunk ${chunks}`} failed authentication`,
        {
          cause,
          details: "the chunk was altered, reordered, sealed with another key, or the final " +
            "chunk was replaced",
        },
      );
    }
  };

  const drain = async (controller: TransformStreamDefaultController<Uint8Array>) => {
    while (true) {
      switch (state) {
        case "prefix": {
          if (queue.length < spec.prefixLength) return;
          open = await spec.start(queue.take(spec.prefixLength).slice());
          state = "length";
          break;
        }
        case "length": {
          const first = queue.peek(0);
          if (first === undefined) return;
          const size = varintLength(first);
          if (queue.length < size) return;
          const { value } = readVarint(queue.take(size), 0);
          if (value === 0) {
            state = "final";
            break;
          }
          if (value === VARINT_TOO_LARGE || value > spec.maxChunkLength) {
            throw new OpenError(
              "chunk_too_large",
              `Cannot open ${what}: chunk ${chunks} is ${
                value === VARINT_TOO_LARGE ? "over 2^53 bytes" : bytesLabel(value)
              }, more than the ${bytesLabel(spec.maxChunkLength)} allowed`,
            );
          }
          if (value <= spec.tagLength) {
            throw new OpenError(
              value === spec.tagLength ? "empty_chunk" : "malformed",
              value === spec.tagLength
                ? `Cannot open ${what}: non-final chunk ${chunks} carries no data`
                : `Cannot open ${what}: chunk ${chunks} is ${
                  bytesLabel(value)
                }, shorter than the ${spec.tagLength}-byte tag`,
            );
          }
          bodyLength = value;
          state = "body";
          break;
        }
        case "body": {
          if (queue.length < bodyLength) return;
          const plaintext = await openChunk(queue.take(bodyLength).slice(), false);
          if (plaintext.length === 0) {
            throw new OpenError(
              "empty_chunk",
              `Cannot open ${what}: non-final chunk ${chunks} carries no data`,
            );
          }
          chunks++;
          controller.enqueue(plaintext);
          state = "length";
          break;
        }
        case "final": {
          if (queue.length > spec.maxChunkLength) {
            throw new OpenError(
              "chunk_too_large",
              `Cannot open ${what}: the final chunk exceeds the ${
                bytesLabel(spec.maxChunkLength)
              } allowed`,
            );
          }
          return;
        }
      }
    }
  };

  return sealed.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async start() {
        if (state !== "prefix") open = await spec.start(EMPTY);
      },
      async transform(chunk, controller) {
        if (!(chunk instanceof Uint8Array)) {
          throw new OpenError(
            "malformed",
            `Cannot open ${what}: the stream yielded ${typeof chunk}, expected bytes`,
          );
        }
        queue.push(chunk);
        await drain(controller);
      },
      async flush(controller) {
        if (state !== "final") {
          const where = state === "prefix"
            ? `inside the ${spec.prefixLength}-byte response nonce`
            : state === "body"
            ? `inside chunk ${chunks} (${bytesLabel(queue.length)} of ${bytesLabel(bodyLength)})`
            : queue.length > 0
            ? `inside the length of chunk ${chunks}`
            : `after ${chunks} chunk${chunks === 1 ? "" : "s"}`;
          throw new OpenError(
            "truncated",
            `Cannot open ${what}: the stream ended ${where}, without the final chunk`,
          );
        }
        if (queue.length < spec.tagLength) {
          throw new OpenError(
            "truncated",
            `Cannot open ${what}: the final chunk is ${
              bytesLabel(queue.length)
            }, shorter than the ${spec.tagLength}-byte tag`,
          );
        }
        const plaintext = await openChunk(queue.takeAll().slice(), true);
        if (plaintext.length > 0) controller.enqueue(plaintext);
      },
    }),
  );
}
