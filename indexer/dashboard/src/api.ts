/**
 * The dashboard's requests to the indexer's own API, with relative URLs (the page works behind
 * a proxy at any path prefix), and what each answer means for the page: a body, an endpoint
 * this indexer does not serve (404: its section is hidden), or a failure that says what is
 * unreachable in the indexer's own words (`{code, message}` of its 503). Pure: the fetch
 * function is passed in, so the tests drive it without a browser.
 *
 * @module
 */

import type { ErrorDetail } from "./types.ts";

/** A request's answer, as the page uses it. */
export type Answer<T> =
  | { kind: "ok"; path: string; status: number; body: T }
  | { kind: "absent"; path: string; status: 404; message?: string }
  | Failure;

/** Why a request gave no data: the indexer's error, or why there was no usable answer. */
export interface Failure extends ErrorDetail {
  /** The answer's kind. */
  kind: "failed";
  /** The path asked for, e.g. `stats`. */
  path: string;
  /** The HTTP status, or `null` when nothing answered. */
  status: number | null;
  /** The answer's `Retry-After` in seconds, or `null`. */
  retryAfterSecs: number | null;
}

/** The fetch function the page uses (`globalThis.fetch` in the browser). */
export type Fetcher = (input: string, init?: RequestInit) => Promise<Response>;

/** Options of {@linkcode getJson}. */
export interface GetOptions {
  /**
   * Statuses whose body is data; `/health` answers 503 with its usual body.
   *
   * @default {[200]}
   */
  dataStatuses?: readonly number[];
  /**
   * Time allowed for the answer, milliseconds.
   *
   * @default {10_000}
   */
  timeoutMs?: number;
}

function retryAfter(response: Response): number | null {
  const value = Number(response.headers.get("retry-after"));
  return Number.isFinite(value) && value > 0 ? value : null;
}

function isErrorBody(body: unknown): body is { error: ErrorDetail } {
  if (typeof body !== "object" || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return typeof error === "object" && error !== null &&
    typeof (error as ErrorDetail).code === "string" &&
    typeof (error as ErrorDetail).message === "string";
}

async function readBody(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return undefined;
  }
}

/**
 * Asks the indexer for `path` (relative, e.g. `stats` or `providers?limit=25`) and classifies
 * the answer. Never throws: a network failure, a timeout, a non-JSON answer and an error
 * answer are all {@linkcode Failure}s with a code and a message.
 */
export async function getJson<T>(
  fetcher: Fetcher,
  path: string,
  options: GetOptions = {},
): Promise<Answer<T>> {
  const dataStatuses = options.dataStatuses ?? [200];
  const failure = (
    status: number | null,
    code: string,
    message: string,
    retry = null as number | null,
  ): Failure => ({
    kind: "failed",
    path,
    status,
    code,
    message,
    retryAfterSecs: retry,
  });
  let response: Response;
  try {
    response = await fetcher(path, {
      headers: { accept: "application/json" },
      // Revalidated every time (a 304 when unchanged): the browser's cache never shows an older
      // snapshot than the indexer serves now. A shared cache in front still answers within the
      // indexer's max-age.
      cache: "no-cache",
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === "TimeoutError";
    return timedOut
      ? failure(null, "timeout", `The indexer did not answer /${path} in time`)
      : failure(
        null,
        "unreachable",
        `The indexer did not answer /${path}: ${(error as Error).message}`,
      );
  }
  const body = await readBody(response);
  if (response.status === 404) {
    return isErrorBody(body)
      ? { kind: "absent", path, status: 404, message: body.error.message }
      : { kind: "absent", path, status: 404 };
  }
  if (dataStatuses.includes(response.status) && body !== undefined && !isErrorBody(body)) {
    return { kind: "ok", path, status: response.status, body: body as T };
  }
  if (isErrorBody(body)) {
    return failure(response.status, body.error.code, body.error.message, retryAfter(response));
  }
  const what = body === undefined ? "a body that is not JSON" : "an unexpected body";
  return failure(
    response.status,
    `http_${response.status}`,
    `The indexer answered /${path} with ${response.status} ${response.statusText} and ${what}`,
    retryAfter(response),
  );
}

/**
 * Every failure among answers, in the order given, for the outage banner (empty when none
 * failed).
 */
export function failuresOf(answers: readonly Answer<unknown>[]): Failure[] {
  return answers.filter((answer): answer is Failure => answer.kind === "failed");
}
