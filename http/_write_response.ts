/**
 * Writes a `Response` to Node's `ServerResponse`: its status and headers, then its body —
 * streamed with backpressure for event streams and NDJSON (the head goes out with the first
 * piece), otherwise read whole and sent with a `Content-Length`. A client that goes away
 * cancels the body being written.
 *
 * Private to `http/` (`serve.ts`).
 *
 * @module
 */

import type { ServerResponse } from "node:http";

/** Bodies of these media types are streamed as they are produced; others are sent whole. */
const STREAMED = /^(text\/event-stream|application\/x-ndjson)\b/i;

/** Writes `response` to `target.res`: head, then the body streamed or whole. */
export async function writeResponse(
  response: Response,
  target: { res: ServerResponse; method: string; gone: AbortSignal },
): Promise<void> {
  const { res, gone } = target;
  const head: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") head[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) head["set-cookie"] = cookies;
  const body = response.body;
  if (body === null || target.method === "HEAD") {
    await body?.cancel().catch(() => {});
    res.writeHead(response.status, head).end();
    return;
  }
  if (!STREAMED.test(response.headers.get("content-type") ?? "")) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    head["content-length"] = String(bytes.length);
    res.writeHead(response.status, head).end(bytes);
    return;
  }
  // The head goes out with the first piece of the body (the daemon answers once it has one).
  res.writeHead(response.status, head);
  const reader = body.getReader();
  const stop = () => reader.cancel(gone.reason).catch(() => {});
  gone.addEventListener("abort", stop, { once: true });
  try {
    while (!gone.aborted) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await drained(res, gone);
    }
  } finally {
    gone.removeEventListener("abort", stop);
  }
  if (!gone.aborted) res.end();
}

/** Waits until `res` can take more, or its client is gone. */
function drained(res: ServerResponse, gone: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      gone.removeEventListener("abort", done);
      resolve();
    };
    res.once("drain", done);
    gone.addEventListener("abort", done, { once: true });
  });
}
