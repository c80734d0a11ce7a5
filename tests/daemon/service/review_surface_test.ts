/**
 * Review of the daemon's surface against a hostile web page and a careless client: bypass
 * attempts against the default browser origins, the Host allowlist and `Sec-Fetch-Site`;
 * `/metrics` label sets a client cannot grow and that carry no content; `/api/pull`'s answers.
 */

import assert from "node:assert/strict";
import { DEFAULT_ALLOWED_ORIGINS } from "../../../daemon/service/hygiene.ts";
import { BASE, get, post, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

Deno.test("origins: look-alikes of the default origins are refused (403, no CORS), nothing reaches the network", async () => {
  const fixture = surface({}, { allowedOrigins: DEFAULT_ALLOWED_ORIGINS });
  const refused = [
    "http://localhost.evil.com",
    "http://127.0.0.1.evil.com",
    "http://0.0.0.0.evil.com",
    "http://localhost:80@evil.com",
    "http://127.0.0.1:3000.evil.com",
    "http://localhost%2eevil.com",
    "http://localhost:3000, https://evil.com",
    "http://localhost:3000/",
    "http://localhost:",
    "http://file",
    "null",
    "chrome-extension://abcdef",
    "http://[::1]:3000", // not in Ollama's list either
  ];
  for (const origin of refused) {
    for (
      const request of [get("/api/tags", { origin }), post("/v1/chat/completions", {}, { origin })]
    ) {
      const answer = await fixture.handler(request);
      assert.equal(answer.status, 403, `${request.method} ${origin}`);
      assert.equal(answer.headers.get("access-control-allow-origin"), null, origin);
      await answer.body?.cancel();
    }
  }
  // Browsers send origins in lower case; one in upper case is the same origin.
  const upper = await fixture.handler(get("/api/tags", { origin: "HTTP://LOCALHOST:3000" }));
  assert.equal(upper.status, 200);
  await upper.body?.cancel();
  assert.equal(fixture.backend.listCalls, 1, "only the allowed request listed models");
  assert.equal(fixture.backend.chats.length, 0);
});

Deno.test("origins: an allowed origin does not lift the Host allowlist; Sec-Fetch-Site is checked without an Origin", async () => {
  const fixture = surface({}, { allowedOrigins: DEFAULT_ALLOWED_ORIGINS });
  for (
    const host of ["evil.com:11435", "127.0.0.1", "127.0.0.1:11435.", "127.0.0.1:11435@evil.com"]
  ) {
    const answer = await fixture.handler(
      new Request(`${BASE}/api/tags`, { headers: { host, origin: "http://localhost:3000" } }),
    );
    assert.equal(answer.status, 403, host);
    assert.equal(answer.headers.get("access-control-allow-origin"), null, host);
    await answer.body?.cancel();
  }
  for (const [site, status] of [["cross-site", 403], ["same-site", 403], ["none", 200]] as const) {
    const answer = await fixture.handler(get("/metrics", { "sec-fetch-site": site }));
    assert.equal(answer.status, status, site);
    await answer.body?.cancel();
  }
});

Deno.test("metrics: random paths, methods, model ids, prompts and keys cannot grow the label sets or appear", async () => {
  const fixture = surface();
  for (let i = 0; i < 100; i++) {
    const method = ["GET", "POST", "PROPFIND", `X${i}`][i % 4];
    const requests = [
      new Request(`${BASE}/secret-path-${i}?q=${i}`, { method }),
      post("/v1/chat/completions", {
        model: `net/verified/user${i}/secret-model`,
        messages: [{ role: "user", content: `PROMPT-${i}` }],
      }, { authorization: `Bearer KEY-${i}` }),
      post("/api/chat", {
        model: `net/verified/user${i}/secret-model`,
        messages: [{ role: "user", content: `PROMPT-${i}` }],
        stream: false,
      }),
      get(`/v1/models/net/verified/acme/model-${i}`),
    ];
    for (const request of requests) await (await fixture.handler(request)).body?.cancel();
  }
  const text = await (await fixture.handler(get("/metrics"))).text();
  assert.doesNotMatch(text, /secret|PROMPT|KEY-|user\d|model-\d|X\d|PROPFIND/);
  const series = text.split("\n").filter((line) =>
    line.startsWith("net_daemon_http_requests_total")
  );
  assert.ok(series.length <= 8, series.join("\n"));
});

Deno.test("/api/pull: an unknown model is 404, a malformed one 400, stream false one JSON object; nothing is sent", async () => {
  const fixture = surface();
  const cases: [Record<string, unknown>, number, string][] = [
    [{ model: "net/verified/nobody/nothing" }, 404, "application/json"],
    [{ model: "nope" }, 400, "application/json"],
    [{ model: `${MODEL}:v2` }, 400, "application/json"],
    [{}, 400, "application/json"],
    [{ model: MODEL, stream: "no" }, 400, "application/json"],
    [{ model: MODEL, stream: false }, 200, "application/json"],
    [{ name: `${MODEL}:latest` }, 200, "application/x-ndjson"],
  ];
  for (const [body, status, type] of cases) {
    const answer = await fixture.handler(post("/api/pull", body));
    assert.equal(answer.status, status, JSON.stringify(body));
    assert.match(answer.headers.get("content-type") ?? "", new RegExp(`^${type}`));
    const parsed = JSON.parse(await answer.text());
    if (status === 200) assert.deepEqual(parsed, { status: "success" });
    else assert.equal(typeof parsed.error, "string", JSON.stringify(body));
  }
  assert.equal(fixture.backend.chats.length, 0);
});
