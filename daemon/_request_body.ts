/**
 * Reads a client's JSON request body with a size limit enforced while streaming: a client
 * cannot make the daemon buffer more than the limit by lying in `Content-Length` or by not
 * sending one.
 *
 * @module
 */

import { readAllLimited } from "../io/read_limited.ts";
import { DaemonError } from "./daemon_error.ts";

/** Formats a byte count for messages: `4 MiB`, `1.5 KiB`, `12 bytes`. */
export function formatBytes(bytes: number): string {
  const units = [["MiB", 1024 * 1024], ["KiB", 1024]] as const;
  for (const [unit, size] of units) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} byte${bytes === 1 ? "" : "s"}`;
}

function tooLarge(found: string, maxBytes: number): DaemonError {
  return new DaemonError(
    "request_too_large",
    `Cannot read the request: the body is ${found}, more than the limit of ${
      formatBytes(maxBytes)
    }`,
    { hints: ["Start the daemon with a larger --max-body-bytes to accept it."] },
  );
}

/**
 * Reads the whole body, at most `maxBytes`.
 *
 * @throws {DaemonError} `request_too_large` (413) when the body is larger.
 */
export async function readBodyLimited(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    await request.body?.cancel().catch(() => {});
    throw tooLarge(formatBytes(Number(declared)), maxBytes);
  }
  const body = await readAllLimited(request.body, maxBytes);
  if (body === null) throw tooLarge(`more than ${formatBytes(maxBytes)}`, maxBytes);
  return body;
}

/**
 * Reads the body as one JSON object.
 *
 * @throws {DaemonError} `request_too_large` (413), or `invalid_request_error` (400) for a body
 * that is empty, not UTF-8, not JSON, or not a JSON object.
 */
export async function readJsonObject(
  request: Request,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const bytes = await readBodyLimited(request, maxBytes);
  const bad = (what: string, cause?: unknown) =>
    new DaemonError("invalid_request_error", `Cannot parse the request body: ${what}`, { cause });
  if (bytes.length === 0) throw bad("it is empty; expected a JSON object");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw bad("it is not valid UTF-8", cause);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw bad(`it is not valid JSON (${(cause as Error).message})`, cause);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad(
      `expected a JSON object, found ${
        value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`
      }`,
    );
  }
  return value as Record<string, unknown>;
}
