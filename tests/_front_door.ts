/**
 * The front door of a real server process (`http/serve.ts` as a service's `main.ts` serves it),
 * checked from outside: a connection that trickles its head line by line is closed at the head
 * deadline (10 s) with no answer while a normal request is answered meanwhile; `CONNECT` and a
 * method no parser knows get the service's `405` with `Allow` and a request id.
 *
 * @module
 */

import assert from "node:assert/strict";
import { connect } from "node:net";

/**
 * Sends `head` on a new connection to `url`'s host; resolves with what came back once closed.
 * With `trickle`, sends it every 500 ms until the server closes the connection: a close that
 * meets a trickled line in flight (or unread at the server) comes as a reset, which is the
 * server's close as well (the kernel answers data for a closed socket with RST), so a reset
 * ends the exchange like a close.
 */
function exchange(url: URL, head: string, trickle?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    let timer: ReturnType<typeof setInterval> | undefined;
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(head);
      if (trickle) timer = setInterval(() => socket.writable && socket.write(trickle), 500);
    });
    socket.on("data", (data) => received += data);
    socket.on("error", (error: Error & { code?: string }) => {
      if (trickle && (error.code === "ECONNRESET" || error.code === "EPIPE")) return;
      reject(error);
    });
    socket.on("close", () => {
      clearInterval(timer);
      resolve(received);
    });
  });
}

/**
 * Checks the front door of the server at `base` (`http://127.0.0.1:PORT`): `probe` is a path
 * that answers 200 to a plain GET (with `headers`).
 */
export async function checkFrontDoor(
  base: string,
  probe: { path: string; headers?: HeadersInit },
): Promise<void> {
  const url = new URL(base);
  const host = `Host: ${url.host}\r\n`;
  const slow = exchange(url, `GET ${probe.path} HTTP/1.1\r\n${host}`, "X-Slow: 1\r\n");
  const normal = await fetch(new URL(probe.path, base), { headers: probe.headers });
  assert.equal(normal.status, 200, "a normal request is answered while a slow one is held");
  assert.ok(normal.headers.get("x-request-id"), "with its request id");
  await normal.body?.cancel();
  assert.equal(await slow, "", "the trickling connection was closed without an answer");
  // With the key a service requires, if any: an unknown method is not a way around it.
  const extra = [...new Headers(probe.headers)].map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  for (const method of ["CONNECT", "FOO"]) {
    const target = method === "CONNECT" ? "example.com:443" : "/";
    const answer = await exchange(
      url,
      `${method} ${target} HTTP/1.1\r\n${host}${extra}Connection: close\r\n\r\n`,
    );
    assert.match(answer, /^HTTP\/1\.1 405 /, `${method}: ${answer.slice(0, 200)}`);
    assert.match(answer, /\r\nallow: [A-Z, ]+\r\n/i, method);
    assert.match(answer, /\r\nx-request-id: \S+\r\n/i, method);
  }
}
