import assert from "node:assert/strict";
import { FORBIDDEN_SCOPES, type HostScope, hostScope, scopeRank } from "../../io/host_scope.ts";

/** The scope of a URL's host, as every caller sees it. */
const scopeOf = (url: string) => hostScope(new URL(url).hostname);

Deno.test("every spelling of a forbidden address is classified as forbidden", () => {
  const cases: [string, HostScope][] = [
    ["http://169.254.169.254/", "link_local"],
    ["http://169.254.0.1:8080/", "link_local"],
    ["http://2852039166/", "link_local"], // 169.254.169.254 as one decimal number
    ["http://0xa9fea9fe/", "link_local"],
    ["http://0251.0376.0251.0376/", "link_local"], // octal
    ["http://169.254.43518/", "link_local"],
    ["http://[fe80::1]:8080/", "link_local"],
    ["http://[febf:ffff::1]/", "link_local"],
    ["http://[::ffff:169.254.169.254]/", "link_local"], // IPv4-mapped
    ["http://[::169.254.169.254]/", "link_local"], // IPv4-compatible
    ["http://[64:ff9b::a9fe:a9fe]/", "link_local"], // NAT64
    ["http://0.0.0.0:11434/", "unspecified"],
    ["http://0/", "unspecified"],
    ["http://0.1.2.3/", "unspecified"],
    ["http://[::]:8545/", "unspecified"],
    ["http://[0:0:0:0:0:0:0:0]/", "unspecified"],
    ["http://[::ffff:0.0.0.0]/", "unspecified"],
    ["http://224.0.0.1/", "reserved"],
    ["http://255.255.255.255/", "reserved"],
    ["http://240.0.0.1/", "reserved"],
    ["http://[ff02::1]/", "reserved"],
  ];
  for (const [url, scope] of cases) {
    assert.equal(scopeOf(url), scope, url);
    assert.ok(FORBIDDEN_SCOPES.has(scopeOf(url)), url);
    assert.equal(scopeRank(scopeOf(url)), undefined, url);
  }
});

Deno.test("loopback, private, public and names are told apart", () => {
  const cases: [string, HostScope][] = [
    ["http://127.0.0.1:9201/", "loopback"],
    ["http://127.1/", "loopback"],
    ["http://2130706433/", "loopback"],
    ["http://[::1]:9201/", "loopback"],
    ["http://[::ffff:127.0.0.1]/", "loopback"],
    ["http://localhost:11435/", "loopback"],
    ["http://LOCALHOST/", "loopback"],
    ["http://gw.localhost/", "loopback"],
    ["http://10.0.0.1/", "private"],
    ["http://172.16.0.1/", "private"],
    ["http://172.31.255.255/", "private"],
    ["http://192.168.1.1/", "private"],
    ["http://100.64.0.1/", "private"],
    ["http://[fd00::1]/", "private"],
    ["http://[fec0::1]/", "private"],
    ["http://[::ffff:192.168.0.1]/", "private"],
    ["http://172.32.0.1/", "public"],
    ["http://8.8.8.8/", "public"],
    ["http://169.253.255.255/", "public"],
    ["http://[2001:db8::1]/", "public"],
    ["http://[fe7f::1]/", "public"],
    ["https://gateway.example/", "name"],
    ["http://localhost.example/", "name"],
  ];
  for (const [url, scope] of cases) assert.equal(scopeOf(url), scope, url);
  assert.deepEqual(
    (["public", "name", "private", "loopback"] as HostScope[]).map(scopeRank),
    [0, 0, 1, 2],
  );
});

Deno.test("hosts not in URL.hostname form are normalized before they are classified", () => {
  assert.equal(hostScope("fe80::1"), "link_local");
  assert.equal(hostScope("0x7f.1"), "loopback");
  assert.equal(hostScope("[::]"), "unspecified");
  assert.equal(hostScope("[not-an-address]"), "name");
  assert.equal(hostScope("bad host name"), "name");
});
