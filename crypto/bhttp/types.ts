/**
 * The shapes of Binary HTTP (RFC 9292): decoded messages, what the encoders take, the
 * decoders' limits and their defaults.
 *
 * @module
 */

/** Media type of a binary HTTP message. */
export const BHTTP_MEDIA_TYPE = "message/bhttp";

/** Field lines in order, names in lower case, duplicates kept. */
export type FieldLines = readonly (readonly [name: string, value: string])[];

/** How a message is framed: with length prefixes, or with terminators. */
export type Framing = "known-length" | "indeterminate-length";

/** A decoded request. */
export interface BhttpRequest {
  /** How the message was framed. */
  readonly framing: Framing;
  /** Method, e.g. `POST`. */
  readonly method: string;
  /** Scheme, e.g. `https` (empty for CONNECT). */
  readonly scheme: string;
  /** Authority; may be empty. */
  readonly authority: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** Header fields. */
  readonly headers: FieldLines;
  /** Content. */
  readonly content: Uint8Array;
  /** Trailer fields. */
  readonly trailers: FieldLines;
}

/** An informational (1xx) response that precedes the final one. */
export interface InformationalResponse {
  /** Status, 100 to 199. */
  readonly status: number;
  /** Its header fields. */
  readonly headers: FieldLines;
}

/** A decoded response. */
export interface BhttpResponse {
  /** How the message was framed. */
  readonly framing: Framing;
  /** Informational responses, in order. */
  readonly informational: readonly InformationalResponse[];
  /** Final status, 200 to 599. */
  readonly status: number;
  /** Header fields. */
  readonly headers: FieldLines;
  /** Content. */
  readonly content: Uint8Array;
  /** Trailer fields. */
  readonly trailers: FieldLines;
}

/** Fields to encode: a `Headers`, `[name, value]` pairs (order kept; {@linkcode FieldLines} too) or a record. */
export type FieldsInit = HeadersInit | FieldLines;

/** A request to encode. */
export interface BhttpRequestInit {
  /** Method, a token such as `POST`. */
  method: string;
  /**
   * Scheme.
   *
   * @default {"https"}
   */
  scheme?: string;
  /**
   * Authority.
   *
   * @default {""}
   */
  authority?: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  path: string;
  /**
   * Header fields.
   *
   * @default {[]}
   */
  headers?: FieldsInit;
  /**
   * Content.
   *
   * @default {empty}
   */
  content?: Uint8Array;
  /**
   * Trailer fields.
   *
   * @default {[]}
   */
  trailers?: FieldsInit;
}

/** A response head (status and fields) to encode. */
export interface BhttpResponseHeadInit {
  /** Final status, 200 to 599. */
  status: number;
  /**
   * Header fields.
   *
   * @default {[]}
   */
  headers?: FieldsInit;
  /**
   * Informational responses to send first.
   *
   * @default {[]}
   */
  informational?: readonly { status: number; headers?: FieldsInit }[];
}

/** A response to encode. */
export interface BhttpResponseInit extends BhttpResponseHeadInit {
  /**
   * Content.
   *
   * @default {empty}
   */
  content?: Uint8Array;
  /**
   * Trailer fields.
   *
   * @default {[]}
   */
  trailers?: FieldsInit;
}

/** Options of {@linkcode encodeRequest} and {@linkcode encodeResponse}. */
export interface EncodeOptions {
  /**
   * Framing to use.
   *
   * @default {"known-length"}
   */
  framing?: Framing;
  /**
   * Omit empty trailing parts (trailers; then content; then headers) as RFC 9292 §3.8 allows.
   *
   * @default {false}
   */
  truncate?: boolean;
  /**
   * Zero bytes of padding to append.
   *
   * @default {0}
   */
  padding?: number;
}

/** Limits of the decoders, each refused with reason `too_large` when exceeded. */
export interface DecodeOptions {
  /**
   * Largest field name, field value, method, scheme, authority or path, in bytes.
   *
   * @default {DEFAULT_MAX_FIELD_LENGTH} (16 KiB)
   */
  maxFieldLength?: number;
  /**
   * Largest header or trailer section, in encoded bytes (names, values and their lengths).
   *
   * @default {DEFAULT_MAX_FIELD_SECTION_LENGTH} (64 KiB)
   */
  maxFieldSectionLength?: number;
  /**
   * Most informational (1xx) responses before the final one.
   *
   * @default {DEFAULT_MAX_INFORMATIONAL_RESPONSES} (8)
   */
  maxInformationalResponses?: number;
}

/** Default of {@linkcode DecodeOptions.maxFieldLength}: 16 KiB. */
export const DEFAULT_MAX_FIELD_LENGTH = 16 * 1024;
/** Default of {@linkcode DecodeOptions.maxFieldSectionLength}: 64 KiB. */
export const DEFAULT_MAX_FIELD_SECTION_LENGTH = 64 * 1024;
/** Default of {@linkcode DecodeOptions.maxInformationalResponses}: 8. */
export const DEFAULT_MAX_INFORMATIONAL_RESPONSES = 8;
