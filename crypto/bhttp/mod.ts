/**
 * Binary HTTP messages (RFC 9292): known-length and indeterminate-length requests and
 * responses, encoded and decoded, plus a streaming encoder and an incremental decoder for
 * responses, so a reply can be relayed while it is produced.
 *
 * ```
 * Request  = framing (0 known | 2 indeterminate) ‖ method ‖ scheme ‖ authority ‖ path
 *            ‖ header section ‖ content ‖ trailer section ‖ padding
 * Response = framing (1 known | 3 indeterminate) ‖ (1xx status ‖ header section)*
 *            ‖ final status ‖ header section ‖ content ‖ trailer section ‖ padding
 * ```
 *
 * - {@linkcode encodeRequest}, {@linkcode encodeResponse}: whole messages, either framing.
 * - {@linkcode decodeRequest}, {@linkcode decodeResponse}: whole messages, either framing.
 * - {@linkcode encodeResponseStream}: the head first, then one content chunk per body chunk.
 * - {@linkcode decodeResponseStream}: resolves with the head; the content streams.
 *
 * Decoding is strict: an unknown framing indicator, a length running past the input, a
 * truncation anywhere but the points RFC 9292 §3.8 allows, non-zero padding, an invalid
 * status, an invalid field name or value (HTTP/2 rules, RFC 9113 §8.2), a connection-specific
 * field, or a field or section above the limits is refused with a {@linkcode BinaryHttpError}.
 * Field names are lower case; values are byte strings mapped one byte to one character
 * (as `Headers` does).
 *
 * @example Encode a request, decode it again
 * ```ts
 * import { decodeRequest, encodeRequest } from "@net/consumer/bhttp";
 *
 * const bytes = encodeRequest({
 *   method: "POST",
 *   path: "/v1/chat/completions",
 *   headers: { "content-type": "application/json" },
 *   content: new TextEncoder().encode('{"model":"devnet/tiny-chat"}'),
 * });
 * const request = decodeRequest(bytes);
 * console.assert(request.method === "POST" && request.headers[0][1] === "application/json");
 * ```
 *
 * @example Stream a response and read it incrementally
 * ```ts
 * import { decodeResponseStream, encodeResponseStream } from "@net/consumer/bhttp";
 *
 * const events = ReadableStream.from(["data: 1\n\n", "data: 2\n\n"])
 *   .pipeThrough(new TextEncoderStream());
 * const wire = encodeResponseStream({ status: 200, headers: { "content-type": "text/event-stream" } }, events);
 * const response = await decodeResponseStream(wire);
 * console.assert(response.status === 200);
 * console.assert(await new Response(response.body).text() === "data: 1\n\ndata: 2\n\n");
 * ```
 *
 * @module
 */

export {
  BHTTP_MEDIA_TYPE,
  type BhttpRequest,
  type BhttpRequestInit,
  type BhttpResponse,
  type BhttpResponseHeadInit,
  type BhttpResponseInit,
  type DecodeOptions,
  DEFAULT_MAX_FIELD_LENGTH,
  DEFAULT_MAX_FIELD_SECTION_LENGTH,
  DEFAULT_MAX_INFORMATIONAL_RESPONSES,
  type EncodeOptions,
  type FieldLines,
  type FieldsInit,
  type Framing,
  type InformationalResponse,
} from "./types.ts";
export { BinaryHttpError, type BinaryHttpFailure } from "./errors.ts";
export {
  encodeRequest,
  encodeResponse,
  encodeResponseStream,
  type EncodeResponseStreamOptions,
} from "./encode.ts";
export { decodeRequest, decodeResponse } from "./decode.ts";
export { decodeResponseStream, type StreamedResponse } from "./decode_stream.ts";
