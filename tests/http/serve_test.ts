/**
 * The project's HTTP server (`http/serve.ts`) on real sockets: slow connections are closed (a
 * head trickled line by line, a connection that sends nothing, a kept-alive one left idle, a
 * body that does not arrive), 500 slow connections do not hold up normal requests, `CONNECT`,
 * `TRACE` and methods Node's parser does not know reach the service and are answered `405` in
 * its shape, a client that leaves aborts its request, and every answer carries its request id.
 */

import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import type { Context } from "hono";
import { createService, defineRoute, HttpRequestError, json, z } from "../../http/mod.ts";
import { type HttpServer, serveHttp, type ServeHttpOptions } from "../../http/serve.ts";

function renderError(error: unknown, _c: Context): Response {
  if (error instanceof HttpRequestError) {
    const headers = error.allow.length ? { allow: error.allow.join(", ") } : undefined;
    return Response.json(
      { error: { code: error.reason, message: error.shortMessage } },
      { status: error.status, headers },
    );
  }
  return Response.json({ error: { code: "internal", message: "failed" } }, { status: 500 });
}

let lastSignal: AbortSignal | undefined;

const service = createService({
  info: { title: "serve test", version: "1.0.0" },
  renderError,
  routes: [
    defineRoute({
      method: "get",
      path: "/",
      summary: "Hello",
      responses: { 200: { description: "Hello", content: json(z.object({ hello: z.string() })) } },
      handler: () => Response.json({ hello: "world" }),
    }),
    defineRoute({
      method: "post",
      path: "/echo",
      summary: "Echoes a word",
      body: { schema: z.object({ word: z.string() }).strict() },
      responses: {
        200: { description: "The word", content: json(z.object({ word: z.string() })) },
      },
      handler: (c, { body }) => c.json({ word: body.word }),
    }),
    defineRoute({
      method: "get",
      path: "/wait",
      summary: "Waits until the client leaves",
      responses: { 200: { description: "Never", content: json(z.object({})) } },
      handler: async (c) => {
        lastSignal = c.req.raw.signal;
        await new Promise((resolve) => c.req.raw.signal.addEventListener("abort", resolve));
        return c.json({});
      },
    }),
  ],
});

async function start(options: Partial<ServeHttpOptions> = {}): Promise<HttpServer> {
  return await serveHttp(service.fetch, { hostname: "127.0.0.1", port: 0, ...options });
}

/** Waits for `done()`, failing after `limitMs` (a bound for a broken server, not a timing). */
async function until(done: () => boolean, label: () => string, limitMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > limitMs) assert.fail(`still waiting: ${label()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface RawClient {
  socket: Socket;
  received: () => string;
  closed: () => boolean;
}

function open(server: HttpServer): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    let received = "";
    let closed = false;
    const socket = connect(
      server.port,
      "127.0.0.1",
      () => resolve({ socket, received: () => received, closed: () => closed }),
    );
    socket.on("data", (data) => received += data);
    socket.on("close", () => closed = true);
    socket.on("error", reject);
  });
}

/** Sends `head` on a new connection and reads until the server closes it. */
async function exchange(server: HttpServer, head: string): Promise<string> {
  const client = await open(server);
  client.socket.write(head);
  await until(client.closed, () => `an answer to ${JSON.stringify(head.slice(0, 40))}`);
  return client.received();
}

function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
}

function headerOf(answer: string, name: string): string | undefined {
  const head = answer.split("\r\n\r\n")[0];
  const line = head.split("\r\n").find((l) => l.toLowerCase().startsWith(`${name}:`));
  return line?.slice(name.length + 1).trim();
}

Deno.test("serve: a normal request is answered, with its request id", async () => {
  await using server = asyncDisposable(await start());
  const answer = await fetch(`${server.value.url}/`);
  assert.equal(answer.status, 200);
  assert.deepEqual(await answer.json(), { hello: "world" });
  assert.match(answer.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  const echo = await fetch(`${server.value.url}/echo`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ word: "hi" }),
  });
  assert.equal(echo.status, 200);
  assert.deepEqual(await echo.json(), { word: "hi" });
});

Deno.test("serve: a head trickled line by line is closed at the headers deadline", async () => {
  await using server = asyncDisposable(await start({ headersTimeoutMs: 500 }));
  const client = await open(server.value);
  client.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const trickle = setInterval(() => client.socket.write("X-Slow: 1\r\n"), 50);
  try {
    await until(client.closed, () => "the trickling connection to be closed");
  } finally {
    clearInterval(trickle);
  }
  assert.equal(client.received(), "", "no answer to a head that never ended");
  await until(() => server.value.connections === 0, () => `${server.value.connections} open`);
});

Deno.test("serve: a connection that sends nothing is closed; one kept alive is closed when idle", async () => {
  await using server = asyncDisposable(await start({ headersTimeoutMs: 300, idleTimeoutMs: 300 }));
  const silent = await open(server.value);
  const kept = await open(server.value);
  kept.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  await until(() => silent.closed() && kept.closed(), () => "both connections to be closed");
  assert.equal(silent.received(), "");
  assert.equal(statusOf(kept.received()), 200);
});

Deno.test("serve: a kept-alive connection announces its idle limit in Keep-Alive", async () => {
  await using server = asyncDisposable(await start({ idleTimeoutMs: 5000 }));
  const kept = await open(server.value);
  kept.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  await until(() => kept.received().includes("world"), () => "the answer");
  assert.equal(headerOf(kept.received(), "keep-alive"), "timeout=5");
  kept.socket.destroy();
});

Deno.test("serve: a body that does not arrive in time is answered 408 and closed", async () => {
  await using server = asyncDisposable(await start({ bodyTimeoutMs: 400 }));
  const client = await open(server.value);
  client.socket.write(
    "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      'Content-Length: 100\r\n\r\n{"word":',
  );
  const trickle = setInterval(() => client.socket.writable && client.socket.write(" "), 50);
  try {
    await until(client.closed, () => "the connection to be closed");
  } finally {
    clearInterval(trickle);
  }
  assert.equal(statusOf(client.received()), 408, client.received());
  assert.match(client.received(), /did not arrive within 0\.4 s/);
});

Deno.test("serve: a chunked body that does not arrive in time is answered 408 and closed", async () => {
  await using server = asyncDisposable(await start({ bodyTimeoutMs: 400 }));
  const client = await open(server.value);
  client.socket.write(
    "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      'Transfer-Encoding: chunked\r\n\r\n8\r\n{"word":\r\n',
  );
  const trickle = setInterval(
    () => client.socket.writable && client.socket.write("1\r\n \r\n"),
    50,
  );
  try {
    await until(client.closed, () => "the connection to be closed");
  } finally {
    clearInterval(trickle);
  }
  assert.equal(statusOf(client.received()), 408, client.received());
  assert.match(client.received(), /did not arrive within 0\.4 s/);
});

Deno.test("serve: normal requests are answered while 500 slow connections are held", async () => {
  await using server = asyncDisposable(await start({ headersTimeoutMs: 120_000 }));
  const slow = await Promise.all(Array.from({ length: 500 }, () => open(server.value)));
  for (const client of slow) client.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const trickle = setInterval(() => {
    for (const client of slow) if (!client.closed()) client.socket.write("X-Slow: 1\r\n");
  }, 200);
  try {
    await until(() => server.value.connections >= 500, () => `${server.value.connections} open`);
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const answer = await fetch(`${server.value.url}/echo`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ word: `w${i}` }),
        });
        assert.equal(answer.status, 200);
        return (await answer.json()).word;
      }),
    );
    assert.deepEqual(answers, Array.from({ length: 40 }, (_, i) => `w${i}`));
    assert.equal(slow.filter((c) => c.closed()).length, 0, "the slow ones are still held");
  } finally {
    clearInterval(trickle);
    for (const client of slow) client.socket.destroy();
  }
});

Deno.test("serve: 500 slow connections are all closed at the headers deadline", async () => {
  await using server = asyncDisposable(await start({ headersTimeoutMs: 1000 }));
  const slow = await Promise.all(Array.from({ length: 500 }, () => open(server.value)));
  for (const client of slow) client.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const trickle = setInterval(() => {
    for (const client of slow) if (!client.closed()) client.socket.write("X-Slow: 1\r\n");
  }, 200);
  try {
    await until(
      () => slow.every((c) => c.closed()),
      () => `${slow.filter((c) => !c.closed()).length} of 500 still open`,
    );
    const answer = await fetch(`${server.value.url}/`);
    assert.equal(answer.status, 200);
    await answer.body?.cancel();
  } finally {
    clearInterval(trickle);
  }
});

for (
  const [label, head] of [
    ["CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"],
    ["TRACE", "TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"],
    ["an unknown method", "FOO / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
    ["a lower-case get", "get / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
    ["PROPFIND", "PROPFIND / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"],
  ] as const
) {
  Deno.test(`serve: ${label} is answered 405 with Allow, in the service's shape`, async () => {
    await using server = asyncDisposable(await start());
    const answer = await exchange(server.value, head);
    assert.equal(statusOf(answer), 405, answer);
    assert.equal(headerOf(answer, "allow"), "GET, HEAD");
    assert.match(headerOf(answer, "x-request-id") ?? "", /^[0-9a-f-]{36}$/);
    const body = JSON.parse(answer.split("\r\n\r\n")[1]);
    assert.equal(body.error.code, "method_not_allowed");
    assert.match(body.error.message, /^Cannot \S+ \/: allowed GET, HEAD$/);
    assert.ok(!body.error.message.startsWith("Cannot GET"), body.error.message);
  });
}

Deno.test("serve: a head that cannot be parsed gets a bare 400, one over 64 KiB a 431", async () => {
  await using server = asyncDisposable(await start());
  assert.equal(statusOf(await exchange(server.value, "GET / HTTP/1.1\r\nBad Header\r\n\r\n")), 400);
  const huge = `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(70_000)}\r\n\r\n`;
  assert.equal(statusOf(await exchange(server.value, huge)), 431);
});

Deno.test("serve: a client that leaves aborts its request's signal", async () => {
  await using server = asyncDisposable(await start());
  lastSignal = undefined;
  const client = await open(server.value);
  client.socket.write("GET /wait HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  await until(() => lastSignal !== undefined, () => "the request to reach the handler");
  client.socket.destroy();
  await until(() => lastSignal!.aborted, () => "the signal to abort");
});

/** A server closed at the end of the test. */
function asyncDisposable(server: HttpServer): AsyncDisposable & { value: HttpServer } {
  return { value: server, [Symbol.asyncDispose]: () => server.close() };
}

Deno.test("serve: a GET's reply that streams past the body and idle deadlines is never cut", async () => {
  // A change stream or a long generation: the request has no body, its reply takes longer than
  // both deadlines. Neither may end it (the dashboard's /events was cut at the body deadline).
  const chunks = 8;
  const streaming = (): Promise<Response> => {
    let sent = 0;
    const encoder = new TextEncoder();
    return Promise.resolve(
      new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            controller.enqueue(encoder.encode(`chunk ${sent}\n`));
            if (++sent === chunks) controller.close();
          },
        }),
        { headers: { "content-type": "text/plain" } },
      ),
    );
  };
  await using server = asyncDisposable(
    await serveHttp(streaming, {
      hostname: "127.0.0.1",
      port: 0,
      bodyTimeoutMs: 200,
      idleTimeoutMs: 200,
    }),
  );
  const answer = await fetch(server.value.url);
  assert.equal(answer.status, 200);
  assert.deepEqual(
    (await answer.text()).trim().split("\n"),
    Array.from({ length: chunks }, (_, i) => `chunk ${i}`),
  );
});
