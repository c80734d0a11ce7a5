/**
 * The API key (`daemon/service/auth.ts`) at the handler level: which requests need it, the 401 in each
 * dialect with `WWW-Authenticate`, the lockout after repeated failures (per client address, in
 * bounded memory), the constant-time comparison, and where the key comes from (variable, file,
 * or generated with mode 0600). The same rules over a real network, with the real clients, are
 * in `auth_network_test.ts`.
 */

import assert from "node:assert/strict";
import {
  API_KEY_FILE_NAME,
  clientKey,
  FailureThrottle,
  isOpenRequest,
  keysMatch,
  OPEN_ENDPOINTS,
  resolveApiKey,
} from "../../../daemon/service/auth.ts";
import { type Dialect, dialectOf } from "../../../daemon/core/http_error.ts";
import { createDaemonHandler, createDaemonService } from "../../../daemon/service/handler.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { SettingError } from "../../../settings/mod.ts";
import { assertRoutesDocumented } from "../../_routes.ts";
import { BASE, PORT, post } from "../_surface.ts";
import { TestBackend } from "../_test_backend.ts";

const KEY = "net_test-key-0123456789abcdef";
const MODEL = "net/verified/devnet/tiny-chat";

function info(hostname: string): Deno.ServeHandlerInfo {
  return {
    remoteAddr: { transport: "tcp", hostname, port: 50000 },
    completed: Promise.resolve(),
  } as Deno.ServeHandlerInfo;
}

function protectedHandler(
  options: { clock?: () => Date; throttle?: FailureThrottle; anyHostWithKey?: boolean } = {},
) {
  return createDaemonHandler({
    backend: new TestBackend(),
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: PORT,
    apiKey: Promise.resolve(KEY),
    authThrottle: options.throttle,
    clock: options.clock,
    anyHostWithKey: options.anyHostWithKey,
    log: () => {},
  });
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

Deno.test("auth: every endpoint but discovery needs the key; 401 in the path's dialect", async () => {
  const handler = protectedHandler();
  const from = info("192.0.2.10");
  // Open: liveness, version, gateway discovery (GET and HEAD), and CORS preflights.
  for (
    const [method, path] of [["GET", "/"], ["HEAD", "/"], ["GET", "/api/version"], [
      "HEAD",
      "/api/version",
    ], ["GET", "/v1/gateways"]]
  ) {
    const response = await handler(new Request(`${BASE}${path}`, { method }), from);
    assert.equal(response.status, 200, `${method} ${path}`);
    await response.body?.cancel();
  }
  // Protected: every declared operation but the open ones (from the route table, so a route
  // added later is covered), the document and the metrics included; unknown paths and wrong
  // methods too.
  const declared = Object.entries(
    createDaemonService({
      backend: new TestBackend(),
      gateways: () => [],
      verdicts: new VerdictLog(),
      version: "0.1.0",
      port: PORT,
      log: () => {},
    }).document().paths as Record<string, Record<string, unknown>>,
  ).flatMap(([path, item]) => Object.keys(item).map((method) => [method.toUpperCase(), path]));
  const cases: [string, string, Dialect][] = [
    ...declared
      .filter(([method, path]) => !OPEN_ENDPOINTS.includes(`${method} ${path}`))
      .map(([method, path]): [string, string, Dialect] => {
        const concrete = path.replace("{model}", MODEL);
        return [method, concrete, dialectOf(concrete)];
      }),
    ["GET", "/v1/nothing", "openai"],
    ["POST", "/v1/gateways", "openai"],
    ["GET", "/api/pull", "ollama"],
  ];
  assert.ok(cases.length >= 20, `${cases.length} protected cases`);
  for (
    const operation of [
      "POST /v1/completions",
      "POST /v1/responses",
      "POST /v1/embeddings",
      "POST /api/embed",
      "GET /metrics",
      "GET /openapi.json",
    ]
  ) {
    assert.ok(cases.some(([method, path]) => `${method} ${path}` === operation), operation);
  }
  const throttle = new FailureThrottle({ freeFailures: 1000 });
  const counted = protectedHandler({ throttle });
  for (const [method, path, dialect] of cases) {
    const request = new Request(`${BASE}${path}`, {
      method,
      body: method === "POST" ? JSON.stringify({ model: MODEL, messages: [] }) : undefined,
    });
    const response = await counted(request, from);
    assert.equal(response.status, 401, `${method} ${path}`);
    assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer realm=/);
    assert.ok(response.headers.get("x-request-id"), "the layer's headers are kept");
    const body = await response.json();
    if (dialect === "openai") {
      assert.equal(body.error.code, "invalid_api_key");
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, /requires an API key: send Authorization: Bearer <key>/);
    } else if (dialect === "anthropic") {
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "authentication_error");
      assert.match(body.error.message, /requires an API key/);
    } else {
      assert.match(body.error, /requires an API key/);
    }
  }
  // A wrong key, another scheme, a key with junk: all 401.
  for (
    const authorization of [`Bearer ${KEY}x`, `Basic ${btoa(`x:${KEY}`)}`, `Bearer ${KEY} x`, KEY]
  ) {
    const response = await counted(
      new Request(`${BASE}/v1/models`, { headers: { authorization } }),
      from,
    );
    assert.equal(response.status, 401, authorization);
    await response.body?.cancel();
  }
  // The right key, whatever the case of the scheme.
  for (const scheme of ["Bearer", "bearer", "BEARER"]) {
    const response = await counted(
      new Request(`${BASE}/v1/models`, { headers: { authorization: `${scheme} ${KEY}` } }),
      from,
    );
    assert.equal(response.status, 200, scheme);
    await response.body?.cancel();
  }
  const chat = await counted(
    post(
      "/api/chat",
      { model: MODEL, stream: false, messages: [{ role: "user", content: "hi" }] },
      bearer(KEY),
    ),
    from,
  );
  assert.equal(chat.status, 200);
  await chat.body?.cancel();
});

Deno.test("auth: a spoofed loopback Host does not stand in for the key", async () => {
  const handler = protectedHandler();
  const response = await handler(
    new Request(`${BASE}/v1/verdicts`, { headers: { host: `127.0.0.1:${PORT}` } }),
    info("198.51.100.7"),
  );
  assert.equal(response.status, 401);
  await response.body?.cancel();
});

Deno.test("auth: an allowed origin's preflight needs no key, and its 401 carries CORS headers", async () => {
  const handler = createDaemonHandler({
    backend: new TestBackend(),
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: PORT,
    apiKey: KEY,
    allowedOrigins: ["http://localhost:*"],
    log: () => {},
  });
  const preflight = await handler(
    new Request(`${BASE}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:3000",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    }),
  );
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /authorization/);
  const refused = await handler(
    new Request(`${BASE}/v1/models`, { headers: { origin: "http://localhost:3000" } }),
  );
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("access-control-allow-origin"), "http://localhost:3000");
  await refused.body?.cancel();
});

Deno.test("auth: repeated failures lock the address out (429, Retry-After), others are not", async () => {
  let now = Date.parse("2026-11-22T12:00:00Z");
  const clock = () => new Date(now);
  const handler = protectedHandler({ clock });
  const attacker = info("203.0.113.9");
  const ask = async (key: string, from = attacker) => {
    const response = await handler(
      new Request(`${BASE}/v1/models`, { headers: bearer(key) }),
      from,
    );
    const body = await response.json();
    return { status: response.status, retry: response.headers.get("retry-after"), body };
  };
  for (let i = 0; i < 5; i++) assert.equal((await ask("guess")).status, 401, `guess ${i + 1}`);
  // Locked out: even the right key is not looked at until the lockout ends.
  const locked = await ask(KEY);
  assert.equal(locked.status, 429);
  assert.equal(locked.retry, "1");
  assert.equal(locked.body.error.code, "too_many_auth_failures");
  // Another client is not affected.
  assert.equal((await ask(KEY, info("192.0.2.44"))).status, 200);
  // After the lockout, the right key works and clears the record.
  now += 1000;
  assert.equal((await ask(KEY)).status, 200);
  for (let i = 0; i < 5; i++) await ask("guess");
  now += 1000;
  // Each further failure doubles the lockout.
  assert.equal((await ask("guess")).status, 401);
  assert.equal((await ask("guess")).retry, "2");
});

Deno.test("auth: 50 wrong keys at once get exactly 5 comparisons; the other 45 are 429 unread", async () => {
  const handler = protectedHandler({ clock: () => new Date("2026-11-22T12:00:00Z") });
  const attacker = info("203.0.113.50");
  const statuses = await Promise.all(
    Array.from({ length: 50 }, async (_, i) => {
      const response = await handler(
        new Request(`${BASE}/v1/models`, { headers: bearer(`guess-${i}`) }),
        attacker,
      );
      await response.body?.cancel();
      return response.status;
    }),
  );
  assert.equal(statuses.filter((s) => s === 401).length, 5, "compared, and wrong");
  assert.equal(statuses.filter((s) => s === 429).length, 45, "refused without a comparison");
  // The address is locked out now: the right key is not looked at either.
  const locked = await handler(
    new Request(`${BASE}/v1/models`, { headers: bearer(KEY) }),
    attacker,
  );
  assert.equal(locked.status, 429);
  await locked.body?.cancel();
});

Deno.test("auth: x-api-key is a key like Bearer's; a wrong one counts; Anthropic's 401 shape", async () => {
  const handler = protectedHandler();
  const from = info("192.0.2.60");
  const ok = await handler(
    new Request(`${BASE}/v1/models`, { headers: { "x-api-key": KEY } }),
    from,
  );
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  const message = await handler(
    post("/v1/messages", {
      model: MODEL,
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    }, { "x-api-key": KEY }),
    from,
  );
  assert.equal(message.status, 200);
  await message.body?.cancel();
  const wrong = await handler(
    post("/v1/messages", { model: MODEL, max_tokens: 8, messages: [] }, { "x-api-key": "nope" }),
    from,
  );
  assert.equal(wrong.status, 401);
  const body = await wrong.json();
  assert.deepEqual(body, {
    type: "error",
    error: { type: "authentication_error", message: "The API key is not valid for this daemon" },
  });
  assert.match(wrong.headers.get("www-authenticate") ?? "", /^Bearer realm=/);
});

Deno.test("auth: beyond loopback, a request with the key is served whatever its Host", async () => {
  const handler = protectedHandler({ anyHostWithKey: true });
  const from = info("192.0.2.70");
  // How another host reaches it: by the machine's address or name, not a loopback one.
  for (const host of ["192.168.1.20:11435", "workstation.lan:11435", "[fd00::5]:11435"]) {
    const keyed = await handler(
      new Request(`${BASE}/v1/models`, { headers: { host, ...bearer(KEY) } }),
      from,
    );
    assert.equal(keyed.status, 200, host);
    await keyed.body?.cancel();
    const anthropic = await handler(
      new Request(`${BASE}/v1/models`, { headers: { host, "x-api-key": KEY } }),
      from,
    );
    assert.equal(anthropic.status, 200, `${host} with x-api-key`);
    await anthropic.body?.cancel();
    // Without a key: refused by the Host rule, exactly as before.
    const bare = await handler(new Request(`${BASE}/v1/models`, { headers: { host } }), from);
    assert.equal(bare.status, 403, host);
    assert.equal((await bare.json()).error.code, "forbidden_host");
  }
  // A wrong key and a foreign Host: the key is checked (and counted), not waved through.
  const wrong = await handler(
    new Request(`${BASE}/v1/models`, { headers: { host: "evil.example", ...bearer("guess") } }),
    from,
  );
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();
  // Without the option (loopback with --require-api-key), a foreign Host is refused even with it.
  const loopback = protectedHandler();
  const refused = await loopback(
    new Request(`${BASE}/v1/models`, { headers: { host: "evil.example", ...bearer(KEY) } }),
    from,
  );
  assert.equal(refused.status, 403);
  await refused.body?.cancel();
});

Deno.test("auth: the failure table is bounded and forgets idle addresses", () => {
  const throttle = new FailureThrottle({ maxClients: 100, forgetAfterMs: 60_000 });
  const t0 = new Date(0);
  for (let i = 0; i < 10_000; i++) throttle.fail(`10.0.${i >> 8}.${i & 255}`, t0);
  assert.equal(throttle.size, 100, "at most maxClients addresses are kept");
  for (let i = 0; i < 5; i++) throttle.fail("198.51.100.1", t0);
  assert.equal(throttle.lockedFor("198.51.100.1", t0), 1000);
  assert.equal(throttle.lockedFor("198.51.100.1", new Date(500)), 500);
  // Long after its last failure (and its lockout), an address is forgotten.
  assert.equal(throttle.lockedFor("198.51.100.1", new Date(61_001)), 0);
  assert.equal(throttle.fail("198.51.100.1", new Date(61_001)), 0, "it starts over");
  // The lockout has a ceiling.
  const capped = new FailureThrottle({ maxLockoutMs: 5_000 });
  let last = 0;
  for (let i = 0; i < 40; i++) last = capped.fail("x", t0);
  assert.equal(last, 5_000);
});

Deno.test("auth: clients count by IPv4 address and by IPv6 /64", () => {
  assert.equal(clientKey(info("192.0.2.1")), "192.0.2.1");
  assert.equal(clientKey(info("::ffff:192.0.2.1")), "192.0.2.1");
  assert.equal(clientKey(info("2001:db8:1:2:3:4:5:6")), "2001:db8:1:2::/64");
  assert.equal(clientKey(info("2001:db8:1:2::99")), "2001:db8:1:2::/64");
  assert.equal(clientKey(info("fd00::2")), "fd00:0:0:0::/64");
  assert.equal(clientKey(undefined), "unknown");
});

Deno.test("auth: keys compare by their digests, whatever their lengths", () => {
  assert.ok(keysMatch(KEY, KEY));
  assert.ok(!keysMatch(KEY, `${KEY}x`));
  assert.ok(!keysMatch("", KEY));
  assert.ok(!keysMatch(`x${KEY.slice(1)}`, KEY));
  assert.ok(isOpenRequest("HEAD", "/api/version"));
  assert.ok(!isOpenRequest("POST", "/v1/gateways"));
  assert.ok(!isOpenRequest("GET", "/openapi.json"));
});

Deno.test("auth: the key comes from the variable, a file, or is generated once (0600)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const required = { required: true, apiKey: null, apiKeyFile: null };
    assert.equal(await resolveApiKey({ ...required, required: false }, dir), null);
    assert.deepEqual(await resolveApiKey({ ...required, apiKey: KEY }, dir), {
      key: KEY,
      source: "NET_DAEMON_API_KEY",
      generated: false,
    });
    // Generated on first need, atomically, readable by its owner only; reused afterwards.
    await Deno.writeTextFile(`${dir}/.${API_KEY_FILE_NAME}.0123456789ab.tmp`, "half");
    const first = await resolveApiKey(required, dir);
    assert.ok(first?.generated);
    assert.match(first.key, /^net_[A-Za-z0-9_-]{43}$/);
    assert.equal(first.source, `${dir}/${API_KEY_FILE_NAME}`);
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(first.source)).mode! & 0o777, 0o600);
    }
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), [API_KEY_FILE_NAME]);
    const again = await resolveApiKey(required, dir);
    assert.deepEqual(again, { ...first, generated: false });
    // A file given with --api-key-file; a warning when others can read it.
    const file = `${dir}/given`;
    await Deno.writeTextFile(file, `  ${KEY}\n`, { mode: 0o644 });
    await Deno.chmod(file, 0o644);
    const warnings: string[] = [];
    const fromFile = await resolveApiKey({ ...required, apiKeyFile: file }, dir, {
      log: (line) => warnings.push(line),
    });
    assert.equal(fromFile?.key, KEY);
    if (Deno.build.os !== "windows") assert.match(warnings.join(), /can be read by other users/);
    await Deno.writeTextFile(file, "short");
    await assert.rejects(
      resolveApiKey({ ...required, apiKeyFile: file }, dir),
      (e: unknown) => e instanceof SettingError && /it is 5 characters/.test(e.message),
    );
    await assert.rejects(
      resolveApiKey({ ...required, apiKeyFile: `${dir}/missing` }, dir),
      Deno.errors.NotFound,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("auth: the document lists 401 and 429 on every protected operation", () => {
  const service = createDaemonService({
    backend: new TestBackend(),
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: PORT,
    apiKey: KEY,
  });
  assertRoutesDocumented(service);
  const paths = service.document().paths as Record<
    string,
    Record<string, { responses: Record<string, { description: string }> }>
  >;
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const open = isOpenRequest(method.toUpperCase(), path);
      assert.equal("401" in operation.responses, !open, `${method} ${path}`);
      if (!open) assert.match(operation.responses["429"].description, /too_many_auth_failures/);
    }
  }
  // A chat keeps its own 429 (the provider's) in the description.
  assert.match(
    paths["/v1/chat/completions"].post.responses["429"].description,
    /provider_error.*Or `too_many_auth_failures`/,
  );
});
