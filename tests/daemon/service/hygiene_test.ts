import assert from "node:assert/strict";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import {
  allowedHosts,
  checkHost,
  checkOrigin,
  OriginPatternError,
  parseOriginPatterns,
  preflightResponse,
} from "../../../daemon/service/hygiene.ts";

function withHost(host: string | null, url = "http://127.0.0.1:11435/api/tags"): Request {
  const request = new Request(url);
  if (host !== null) request.headers.set("host", host);
  return request;
}

function refusedHost(request: Request, options: Parameters<typeof checkHost>[1]): DaemonError {
  try {
    checkHost(request, options);
  } catch (error) {
    assert.ok(error instanceof DaemonError);
    assert.equal(error.code, "forbidden_host");
    return error;
  }
  throw new Error(`host ${request.headers.get("host")} was accepted`);
}

Deno.test("hygiene: only loopback hosts with the bound port pass", () => {
  const options = { port: 11435 };
  for (const host of ["127.0.0.1:11435", "localhost:11435", "[::1]:11435", "LocalHost:11435"]) {
    checkHost(withHost(host), options);
  }
  for (
    const host of [
      "evil.example:11435",
      "127.0.0.1",
      "localhost:11434",
      "127.0.0.1:11435.evil.example",
      "localhost.:11435",
      "[::ffff:127.0.0.1]:11435",
      "0.0.0.0:11435",
      "",
    ]
  ) {
    const error = refusedHost(withHost(host), options);
    assert.match(
      error.shortMessage,
      /expected one of 127\.0\.0\.1:11435, localhost:11435, \[::1\]:11435/,
    );
    assert.match(error.shortMessage, /DNS rebinding/);
  }
  // Without a Host header, the URL's host is checked (handler-level tests).
  checkHost(new Request("http://localhost:11435/"), options);
  refusedHost(new Request("http://evil.example:11435/"), options);
});

Deno.test("hygiene: port 80 also allows a bare hostname; extra hostnames can be added", () => {
  assert.deepEqual([...allowedHosts({ port: 80 })], [
    "127.0.0.1:80",
    "127.0.0.1",
    "localhost:80",
    "localhost",
    "[::1]:80",
    "[::1]",
  ]);
  const lan = { port: 11435, hostnames: ["192.168.1.5", "MyBox.local"] };
  checkHost(withHost("192.168.1.5:11435"), lan);
  checkHost(withHost("mybox.local:11435"), lan);
  refusedHost(withHost("192.168.1.6:11435"), lan);
});

Deno.test("hygiene: origin patterns match exactly, with * for any run but /", () => {
  const table: [string, string, boolean][] = [
    ["*", "https://anything.example", true],
    ["http://localhost:*", "http://localhost:3000", true],
    ["http://localhost:*", "http://localhost", false],
    ["http://localhost:*", "https://localhost:3000", false],
    ["http://localhost:*", "http://localhost.evil.example:3000", false],
    ["http://localhost:*", "http://localhost:3000.evil.example", false],
    ["http://localhost:*", "http://localhost:evil", false],
    ["http://*:3000", "http://evil.example:3000", true],
    ["http://*:3000", "http://a:1:3000", false],
    ["http://[::1]:*", "http://[::1]:8080", true],
    ["https://*.example.com", "https://app.example.com", true],
    ["https://*.example.com", "https://example.com", false],
    ["https://*.example.com", "https://evil.com/.example.com", false],
    ["https://app.example.com", "https://APP.example.com", true],
    ["https://app.example.com", "https://app.example.com.evil", false],
    ["https://a.b", "https://axb", false],
    ["app://*", "app://desktop", true],
    ["null", "null", true],
    ["http://localhost:3000", "null", false],
  ];
  for (const [pattern, origin, expected] of table) {
    const [compiled] = parseOriginPatterns([pattern]);
    assert.equal(compiled.test(origin.toLowerCase()), expected, `${pattern} vs ${origin}`);
  }
});

Deno.test("hygiene: malformed origin patterns are refused, quoting them", () => {
  for (
    const bad of ["localhost", "http://localhost:3000/", "http://a/b", "", "http:// x", "*.com"]
  ) {
    assert.throws(
      () => parseOriginPatterns([bad]),
      (error: unknown) =>
        error instanceof OriginPatternError && error.name === "OriginPatternError" &&
        error.shortMessage.includes(JSON.stringify(bad)),
      bad,
    );
  }
});

Deno.test("hygiene: requests without Origin pass; others must match", () => {
  const allowed = parseOriginPatterns(["http://localhost:*"]);
  assert.equal(checkOrigin(new Request("http://127.0.0.1:11435/"), allowed), null);
  assert.equal(
    checkOrigin(
      new Request("http://127.0.0.1:11435/", { headers: { origin: "http://localhost:5173" } }),
      allowed,
    ),
    "http://localhost:5173",
  );
  for (
    const [patterns, listed] of [[[], "no origins are allowed"], [
      allowed,
      "allowed: http://localhost:*",
    ]] as const
  ) {
    assert.throws(
      () =>
        checkOrigin(
          new Request("http://127.0.0.1:11435/", { headers: { origin: "https://evil.example" } }),
          patterns,
        ),
      (error: unknown) =>
        error instanceof DaemonError && error.code === "forbidden_origin" &&
        error.shortMessage.includes(listed) &&
        error.message.includes("--allowed-origins https://evil.example"),
    );
  }
});

Deno.test("hygiene: cross-site browser requests without an Origin are refused unless * is allowed", () => {
  const request = (site: string) =>
    new Request("http://127.0.0.1:11435/v1/verdicts", { headers: { "sec-fetch-site": site } });
  const allowed = parseOriginPatterns(["http://localhost:*"]);
  for (const site of ["cross-site", "same-site"]) {
    assert.throws(
      () => checkOrigin(request(site), allowed),
      (error: unknown) =>
        error instanceof DaemonError && error.code === "forbidden_origin" &&
        error.shortMessage.includes(`Sec-Fetch-Site: ${site}`),
    );
    assert.equal(checkOrigin(request(site), parseOriginPatterns(["*"])), null);
  }
  assert.equal(checkOrigin(request("none"), allowed), null, "the user typed the URL");
  assert.equal(checkOrigin(request("same-origin"), allowed), null);
});

Deno.test("hygiene: preflight echoes well-formed requested headers only", () => {
  const request = (headers: Record<string, string>) =>
    new Request("http://127.0.0.1:11435/v1/models", { method: "OPTIONS", headers });
  const ok = preflightResponse(
    request({ "access-control-request-headers": "X-Api-Key,Content-Type" }),
    "http://localhost:1",
  );
  assert.equal(ok.headers.get("access-control-allow-headers"), "X-Api-Key,Content-Type");
  assert.equal(ok.headers.get("access-control-allow-private-network"), null);
  const bad = preflightResponse(
    request({ "access-control-request-headers": 'x-a, bad header, "quoted"' }),
    "http://localhost:1",
  );
  assert.equal(bad.headers.get("access-control-allow-headers"), "authorization, content-type");
  assert.equal(bad.status, 204);
  assert.equal(bad.headers.get("access-control-max-age"), "600");
});
