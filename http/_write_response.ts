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
/** Statuses that carry no content (and no `Content-Length`). */
const NO_CONTENT = new Set([101, 103, 204, 205, 304]);

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
  const whole = !STREAMED.test(response.headers.get("content-type") ?? "");
  if (whole && target.method !== "HEAD" && !NO_CONTENT.has(response.status)) {
    // Read without touching `response.body`: a body held as bytes (most answers) is taken as
    // it is, without a stream made for it and read back into a copy.
    const bytes = new Uint8Array(await response.arrayBuffer());
    head["content-length"] = String(bytes.length);
    res.writeHead(response.status, head).end(bytes);
    return;
  }
  const body = response.body;
  if (body === null || target.method === "HEAD") {
    await body?.cancel().catch(() => {});
    res.writeHead(response.status, head).end();
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
