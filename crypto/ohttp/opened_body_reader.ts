/**
 * The content of a reply opened by `SealedHttpRequest.openResponse` (`sealed_exchange.ts`) as a
 * reader in place of its `body` stream: how the daemon reads each event, without a stream between
 * the Binary HTTP decoding and its reader. Not in the library's entry point.
 *
 * @module
 */

import { contentReader, type StreamedResponse } from "../bhttp/decode_stream.ts";
import type { OpenedHttpResponse } from "./sealed_exchange.ts";

/** What {@linkcode openedBodyReader} returns: the reading half of a stream's reader. */
export type BodyReader = Pick<
  ReadableStreamDefaultReader<Uint8Array>,
  "read" | "cancel" | "releaseLock"
>;

/** The decoded response behind each reply `openResponse` opened. */
const decodedResponses = new WeakMap<OpenedHttpResponse, StreamedResponse>();

/** Notes the decoded response behind `opened` (called by `sealed_exchange.ts` as it opens one). */
export function rememberDecoded(opened: OpenedHttpResponse, response: StreamedResponse): void {
  decodedResponses.set(opened, response);
}

/**
 * The content of a reply opened by `SealedHttpRequest.openResponse`, as a reader in place of its
 * `body` stream — the same pieces, end and errors — or `undefined` for a reply opened elsewhere.
 * Either this or `body` reads the content, once.
 *
 * @throws {TypeError} when the content is already being read.
 */
export function openedBodyReader(opened: OpenedHttpResponse): BodyReader | undefined {
  const response = decodedResponses.get(opened);
  return response ? contentReader(response) : undefined;
}
