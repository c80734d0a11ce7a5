/**
 * The gateway's side of chunked Oblivious HTTP, in parts `chunked.ts` composes (private):
 * reading the request's `hdr ‖ enc`, the exchange object, sealing the response, and the
 * `maxChunkLength` check both sides share.
 *
 * @module
 */

import { ByteQueue } from "../_byte_queue.ts";
import { bytesLabel } from "../_bytes.ts";
import { randomBytes, type RandomSource } from "../hpke/key_pair.ts";
import type { HpkeSuite } from "../hpke/suite.ts";
import { type ByteReader, prepend, streamOfReader } from "../_streams.ts";
import { type ChunkOpen, sealReader, type SealSpec, sealStream } from "./_chunk_stream.ts";
import {
  CHUNKED_LABELS,
  chunkNonce,
  deriveResponseKeys,
  EMPTY,
  FINAL_AAD,
  type GatewaySetup,
  HEADER_LENGTH,
  parseRequestHeader,
  prefixLength,
  responseNonceLength,
  selectGatewayKey,
} from "./_encapsulation.ts";
import { type ChunkedGatewayExchange, DEFAULT_MAX_CHUNK_LENGTH } from "./chunked.ts";
import { OpenError, SealError } from "./errors.ts";
import type { GatewayKey } from "./key_config.ts";

/** Smallest accepted `maxChunkLength`. */
const MIN_MAX_CHUNK_LENGTH = 64;
/** Largest accepted `maxChunkLength`: 16 MiB. */
const MAX_MAX_CHUNK_LENGTH = 16 * 1024 * 1024;

/** Opens the request's chunks in order with the HPKE context. */
export function requestOpener(setup: GatewaySetup): ChunkOpen {
  return (ciphertext, final) => setup.context.open(ciphertext, final ? FINAL_AAD : EMPTY);
}

/** The gateway's exchange: the request, and the response sealed once. */
export function gatewayExchange<Request>(
  setup: GatewaySetup,
  request: Request,
  maxChunkLength: number,
  random: RandomSource,
): Omit<ChunkedGatewayExchange, "request"> & { readonly request: Request } {
  let used = false;
  const useOnce = () => {
    if (used) {
      throw new SealError(
        "already_used",
        "Cannot seal chunked response: this exchange already sealed one",
      );
    }
    used = true;
  };
  const exchange = {
    keyId: setup.keyId,
    suite: setup.suite,
    request,
    sealResponse(body: ReadableStream<Uint8Array> | Uint8Array) {
      useOnce();
      return sealGatewayResponse(body, setup, maxChunkLength, random);
    },
  };
  readerSealers.set(exchange, (reader) => {
    useOnce();
    return sealGatewayResponse(reader, setup, maxChunkLength, random);
  });
  return exchange;
}

const readerSealers = new WeakMap<
  Pick<ChunkedGatewayExchange, "sealResponse">,
  (reader: ByteReader) => ReadableStream<Uint8Array>
>();

/**
 * {@linkcode ChunkedGatewayExchange.sealResponse} of what a reader gives (a pipeline of readers,
 * such as the Binary HTTP encoding of a response, with no stream between its steps and the
 * sealing). Counts as the exchange's one response.
 *
 * @throws {SealError} with reason `already_used` when the exchange already sealed one,
 * `invalid_input` for an exchange this module did not make.
 */
export function sealChunkedResponseReader(
  exchange: Pick<ChunkedGatewayExchange, "sealResponse">,
  reader: ByteReader,
): ReadableStream<Uint8Array> {
  const seal = readerSealers.get(exchange);
  if (!seal) {
    throw new SealError(
      "invalid_input",
      "Cannot seal chunked response: the exchange was not made by openChunkedRequest",
    );
  }
  return seal(reader);
}

/** The start of a chunked request: the key and suite its header names, and what follows. */
export interface RequestPrefix {
  readonly key: GatewayKey;
  readonly suite: HpkeSuite;
  /** The 7-byte header. */
  readonly header: Uint8Array;
  /** The encapsulated key. */
  readonly enc: Uint8Array;
  /** The rest of the stream: the sealed chunks. */
  readonly rest: ReadableStream<Uint8Array>;
}

/**
 * Reads `hdr ‖ enc` from the stream and finds the gateway key the header names, so an
 * unknown key or suite is refused before any reply.
 */
export async function readRequestPrefix(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  keys: readonly GatewayKey[],
): Promise<RequestPrefix> {
  const what = CHUNKED_LABELS.what;
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
  if (!await fill(HEADER_LENGTH)) {
    throw new OpenError(
      "truncated",
      `Cannot open ${what}: the stream ended after ${
        bytesLabel(queue.length)
      }, inside the ${HEADER_LENGTH}-byte header`,
    );
  }
  const header = queue.take(HEADER_LENGTH).slice();
  const { key, suite } = selectGatewayKey(keys, parseRequestHeader(header), what);
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
  return { key, suite, header, enc, rest: prepend(queue.takeAll().slice(), reader) };
}

/** Seals the gateway's response: a fresh response nonce first, then the chunks. */
export function sealGatewayResponse(
  body: ReadableStream<Uint8Array> | Uint8Array | ByteReader,
  setup: GatewaySetup,
  maxChunkLength: number,
  random: RandomSource,
): ReadableStream<Uint8Array> {
  const { suite } = setup;
  const spec: SealSpec = {
    what: "response",
    tagLength: suite.aead.tagLength,
    maxChunkLength,
    start() {
      let responseNonce: Uint8Array;
      try {
        responseNonce = randomBytes(random, responseNonceLength(suite), "response nonce");
      } catch (cause) {
        throw new SealError(
          "crypto",
          "Cannot seal chunked response: the random source failed",
          { cause },
        );
      }
      const keys = deriveResponseKeys(
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
  };
  return body instanceof ReadableStream || body instanceof Uint8Array
    ? sealStream(body, spec)
    : streamOfReader(sealReader(body, spec));
}

/** Checks the `maxChunkLength` option: refused with the side's own error. */
export function checkMaxChunkLength(
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
