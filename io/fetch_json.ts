/**
 * Bounded HTTP reads for talking to untrusted peers (routers, gateways, providers): every
 * request has a timeout, every body a size limit enforced while streaming (a peer cannot make
 * us buffer more than the limit by lying in `Content-Length` or by not sending one), redirects
 * are never followed (a peer cannot point our request at a URL of its choosing, such as a
 * service on the local network), and every failure is a typed {@linkcode FetchJsonError} that
 * says what was reached, what came back and what was expected.
 *
 * @example
 * ```ts ignore
 * import { fetchJson } from "./fetch_json.ts";
 * const body = await fetchJson("http://127.0.0.1:9101/v1/ads", { timeoutMs: 2000 });
 * ```
 *
 * @module
 */

import { abbreviate, type NetErrorOptions, ReasonError } from "../errors.ts";
import { readAllLimited } from "./read_limited.ts";
import { duplicateKey } from "./strict_json.ts";

/** Why a bounded fetch failed. */
export type FetchFailure =
  | "unreachable"
  | "timeout"
  | "aborted"
  | "status"
  | "too_large"
  | "invalid_json";

/** Thrown by {@linkcode fetchJson} and {@linkcode readBodyLimited}. */
export class FetchJsonError extends ReasonError<FetchFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "FetchJsonError" as const;
  /** The URL that was fetched. */
  readonly url: string;
  /** The HTTP status, when a response arrived. */
  readonly status: number | undefined;

  /** Creates the error. */
  constructor(
    reason: FetchFailure,
    url: string,
    shortMessage: string,
    options: NetErrorOptions & { status?: number } = {},
  ) {
    super(reason, shortMessage, options);
    this.url = url;
    this.status = options.status;
  }
}

/** Options of {@linkcode readBodyLimited}. */
export interface ReadBodyOptions {
  /** Largest accepted body in bytes. */
  maxBytes: number;
  /** Used in error messages. */
  url?: string;
}

/**
 * Reads a response body into memory, refusing it as soon as it exceeds `maxBytes` (the rest
 * of the stream is cancelled, never buffered).
 *
 * @throws {FetchJsonError} with reason `too_large`.
 */
export async function readBodyLimited(
  response: Response,
  options: ReadBodyOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const url = options.url ?? response.url;
  const declared = Number(response.headers.get("content-length") ?? NaN);
  const tooLarge = (found: string) =>
    new FetchJsonError(
      "too_large",
      url,
      `Cannot read the response of ${url}: body is ${found}, the limit is ${options.maxBytes} bytes`,
      { status: response.status },
    );
  if (Number.isFinite(declared) && declared > options.maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge(`${declared} bytes`);
  }
  const body = await readAllLimited(response.body, options.maxBytes);
  if (body === null) throw tooLarge(`more than ${options.maxBytes} bytes`);
  return body;
}

/** Options of {@linkcode fetchJson}. */
export interface FetchJsonOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Time allowed for the whole exchange, body included, in milliseconds. @default {5000} */
  timeoutMs?: number;
  /** Largest accepted body in bytes. @default {1 MiB} */
  maxBytes?: number;
  /** Cancels the request early. */
  signal?: AbortSignal;
  /** Extra request headers. */
  headers?: HeadersInit;
}

/**
 * GETs `url` and parses its JSON body, bounded in time and size. A non-2xx status is an
 * error that quotes the start of the body. A redirect (3xx) is never followed: it is a
 * `status` error naming where the peer tried to send us, and the body is not read.
 *
 * @throws {FetchJsonError} with reason `unreachable`, `timeout`, `aborted`, `status`,
 * `too_large` or `invalid_json`.
 */
export async function fetchJson(url: string, options: FetchJsonOptions = {}): Promise<unknown> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const doFetch = options.fetch ?? fetch;
  const failed = (cause: unknown): FetchJsonError => {
    if (timeout.aborted) {
      return new FetchJsonError(
        "timeout",
        url,
        `Cannot reach ${url}: no complete answer within ${timeoutMs} ms`,
        { cause },
      );
    }
    if (options.signal?.aborted) {
      return new FetchJsonError("aborted", url, `Cannot reach ${url}: the request was cancelled`, {
        cause,
      });
    }
    return cause instanceof FetchJsonError ? cause : new FetchJsonError(
      "unreachable",
      url,
      `Cannot reach ${url}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  };
  let response: Response;
  try {
    response = await doFetch(url, {
      signal,
      // The peer is untrusted: following its redirect would send our request to any URL it
      // names (any host, path, query or credentials), e.g. a router page on the user's LAN.
      redirect: "manual",
      headers: { accept: "application/json", ...headersObject(options.headers) },
    });
  } catch (cause) {
    throw failed(cause);
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel().catch(() => {});
    const location = response.headers.get("location");
    throw new FetchJsonError(
      "status",
      url,
      `Cannot use the answer of ${url}: status ${response.status} (a redirect${
        location === null ? "" : ` to ${JSON.stringify(abbreviate(location, 80))}`
      }), expected 2xx; redirects are not followed`,
      { status: response.status },
    );
  }
  let body: Uint8Array;
  try {
    body = await readBodyLimited(response, { maxBytes: options.maxBytes ?? 1 << 20, url });
  } catch (cause) {
    throw failed(cause);
  }
  const text = new TextDecoder().decode(body);
  if (!response.ok) {
    throw new FetchJsonError(
      "status",
      url,
      `Cannot use the answer of ${url}: status ${response.status}, expected 2xx`,
      { status: response.status, details: text.slice(0, 200) || undefined },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new FetchJsonError(
      "invalid_json",
      url,
      `Cannot parse the answer of ${url}: not JSON (starts with ${
        JSON.stringify(text.slice(0, 40))
      })`,
      { status: response.status, cause },
    );
  }
  // Peers are untrusted: a repeated key would let two readers see two different documents.
  const repeated = duplicateKey(text);
  if (repeated !== undefined) {
    throw new FetchJsonError(
      "invalid_json",
      url,
      `Cannot accept the answer of ${url}: the key ${
        JSON.stringify(repeated.slice(0, 40))
      } appears twice in one object`,
      { status: response.status },
    );
  }
  return value;
}

function headersObject(init: HeadersInit | undefined): Record<string, string> {
  return init ? Object.fromEntries(new Headers(init).entries()) : {};
}
