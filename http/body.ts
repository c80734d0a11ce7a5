/**
 * Reading a JSON request body the strict way, before its route's schema sees it: at most the
 * service's byte limit (enforced while streaming, whatever `Content-Length` claims), UTF-8,
 * JSON, no repeated key in any object (a parser differential: `JSON.parse` keeps the last, other
 * parsers the first), and no nesting deeper than a limit. Every refusal is an
 * {@linkcode HttpRequestError} that says what was found and what was expected.
 *
 * The media type is the service's to check before (`service.ts`: a JSON route refuses any
 * other `Content-Type` with a 415).
 *
 * @example
 * ```ts
 * import { readJsonBody } from "./body.ts";
 *
 * const request = new Request("http://127.0.0.1/", { method: "POST", body: '{"a":[1,2]}' });
 * const body = await readJsonBody(request, { maxBytes: 1024 });
 * console.assert(JSON.stringify(body) === '{"a":[1,2]}');
 * ```
 *
 * @module
 */

import { abbreviate } from "../errors.ts";
import { readAllLimited } from "../io/read_limited.ts";
import { duplicateKey } from "../io/strict_json.ts";
import { HttpRequestError } from "./errors.ts";
import { fieldPath } from "./issues.ts";

/** The default deepest nesting of arrays and objects in a request body. */
export const DEFAULT_MAX_JSON_DEPTH = 32;

/** Options of {@linkcode readJsonBody}. */
export interface ReadJsonBodyOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** Deepest nesting of arrays and objects accepted. @default {32} */
  maxDepth?: number;
  /** What to do about a body over the limit, e.g. `Start the daemon with a larger --max-body-bytes`. */
  tooLargeHint?: string;
}

/** Formats a byte count for messages: `4 MiB`, `1.5 KiB`, `12 bytes`. */
export function formatBytes(bytes: number): string {
  const units = [["MiB", 1024 * 1024], ["KiB", 1024]] as const;
  for (const [unit, size] of units) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} byte${bytes === 1 ? "" : "s"}`;
}

/**
 * Reads the whole body, at most `maxBytes`; the rest of a larger one is cancelled, never
 * buffered.
 *
 * @throws {HttpRequestError} `request_too_large` (413).
 */
export async function readBodyLimited(
  request: Request,
  options: Pick<ReadJsonBodyOptions, "maxBytes" | "tooLargeHint">,
): Promise<Uint8Array> {
  const { maxBytes } = options;
  const tooLarge = (found: string) =>
    new HttpRequestError(
      "request_too_large",
      `Cannot read the request: the body is ${found}, more than the limit of ${
        formatBytes(maxBytes)
      }`,
      { hints: options.tooLargeHint ? [options.tooLargeHint] : [] },
    );
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    await request.body?.cancel().catch(() => {});
    throw tooLarge(formatBytes(Number(declared)));
  }
  const body = await readAllLimited(request.body, maxBytes);
  if (body === null) throw tooLarge(`more than ${formatBytes(maxBytes)}`);
  return body;
}

function invalid(what: string, field: string | null = null, cause?: unknown): HttpRequestError {
  return new HttpRequestError("invalid_request", `Cannot parse the request body: ${what}`, {
    field,
    cause,
  });
}

/**
 * The path of the first array or object nested deeper than `maxDepth`, or `undefined`. An
 * explicit stack: no recursion, whatever the input.
 */
export function tooDeep(value: unknown, maxDepth: number): (string | number)[] | undefined {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current !== "object" || current === null) continue;
    if (path.length >= maxDepth) return path;
    const entries = Array.isArray(current)
      ? current.map((item, i) => [i, item] as const)
      : Object.entries(current);
    for (const [key, item] of entries) {
      if (typeof item === "object" && item !== null) {
        stack.push({ value: item, path: [...path, key] });
      }
    }
  }
  return undefined;
}

/**
 * Reads the body as one JSON value (any JSON; the route's schema decides its shape).
 *
 * @throws {HttpRequestError} `request_too_large` (413), or `invalid_request` (400) for a body
 * that is empty, not UTF-8, not JSON, repeats a key, or nests too deep.
 */
export async function readJsonBody(
  request: Request,
  options: ReadJsonBodyOptions,
): Promise<unknown> {
  const bytes = await readBodyLimited(request, options);
  if (bytes.length === 0) throw invalid("it is empty; expected a JSON object");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw invalid("it is not valid UTF-8", null, cause);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw invalid(`it is not valid JSON (${(cause as Error).message})`, null, cause);
  }
  const repeated = duplicateKey(text);
  if (repeated !== undefined) {
    throw invalid(
      `the key ${JSON.stringify(abbreviate(repeated, 60))} appears twice in one object; ` +
        "expected each key once",
    );
  }
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const deep = tooDeep(value, maxDepth);
  if (deep !== undefined) {
    const field = fieldPath(deep);
    throw invalid(
      `${field} is nested more than ${maxDepth} levels deep; expected at most ${maxDepth}`,
      field,
    );
  }
  return value;
}
