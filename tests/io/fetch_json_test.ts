import assert from "node:assert/strict";
import { type FetchFailure, fetchJson, FetchJsonError } from "../../io/fetch_json.ts";
import { closedPort, serve } from "../_http.ts";

function isFailure(reason: FetchFailure) {
  return (error: unknown) => {
    assert.ok(error instanceof FetchJsonError, `expected FetchJsonError, got ${error}`);
    assert.equal(error.reason, reason, error.message);
    return true;
  };
}

Deno.test("fetchJson reads JSON and sends accept", async () => {
  await using server = serve((req) => Response.json({ accept: req.headers.get("accept") }));
  assert.deepEqual(await fetchJson(server.url), { accept: "application/json" });
});

Deno.test("fetchJson refuses a body over the limit, declared or streamed", async () => {
  await using declared = serve(() => new Response("x".repeat(2000)));
  await assert.rejects(fetchJson(declared.url, { maxBytes: 1000 }), isFailure("too_large"));
  // No Content-Length and a body that never ends: without the limit this would read forever.
  await using streamed = serve(() =>
    new Response(
      new ReadableStream({
        pull(controller) {
          controller.enqueue(new Uint8Array(512));
        },
      }),
    )
  );
  await assert.rejects(fetchJson(streamed.url, { maxBytes: 4096 }), isFailure("too_large"));
});

Deno.test("fetchJson times out on a peer that never finishes", async () => {
  await using server = serve(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("{"));
        },
      }),
    )
  );
  await assert.rejects(fetchJson(server.url, { timeoutMs: 200 }), isFailure("timeout"));
});

Deno.test("fetchJson reports status, invalid JSON, unreachable and abort", async () => {
  await using server = serve((req) =>
    new URL(req.url).pathname === "/bad"
      ? new Response("not json")
      : new Response("nope", { status: 503 })
  );
  await assert.rejects(fetchJson(server.url), (e: unknown) => {
    isFailure("status")(e);
    assert.equal((e as FetchJsonError).status, 503);
    assert.match((e as FetchJsonError).message, /nope/);
    return true;
  });
  await assert.rejects(fetchJson(`${server.url}/bad`), isFailure("invalid_json"));
  await assert.rejects(
    fetchJson(`http://127.0.0.1:${closedPort()}/`),
    isFailure("unreachable"),
  );
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(fetchJson(server.url, { signal: controller.signal }), isFailure("aborted"));
});

// Attack: an untrusted peer answers with a redirect to a URL of its choosing (a service on the
// user's LAN, a cloud metadata endpoint). Following it would send our request there.
Deno.test("fetchJson never follows a redirect: every 3xx is a status failure naming the target", async () => {
  let internalHits = 0;
  await using internal = serve(() => {
    internalHits++;
    return Response.json({ ok: true });
  });
  for (const status of [301, 302, 303, 307, 308]) {
    await using peer = serve(() =>
      new Response("moved", {
        status,
        headers: { location: `${internal.url}/admin?x=1` },
      })
    );
    await assert.rejects(fetchJson(peer.url), (e: unknown) => {
      isFailure("status")(e);
      assert.equal((e as FetchJsonError).status, status);
      assert.match((e as FetchJsonError).shortMessage, /redirect to ".*\/admin\?x=1"/);
      assert.match((e as FetchJsonError).shortMessage, /redirects are not followed/);
      return true;
    });
  }
  // A redirect without a Location header is refused the same way.
  await using bare = serve(() => new Response(null, { status: 302 }));
  await assert.rejects(fetchJson(bare.url), isFailure("status"));
  assert.equal(internalHits, 0, "a redirect was followed");
});
