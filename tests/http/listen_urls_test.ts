/**
 * The start-up URLs of a server: a specific address is itself; a wildcard bind names loopback
 * first, then each interface's address — never `0.0.0.0` or `::`, which no client can use.
 */

import assert from "node:assert/strict";
import { listenUrls } from "../../http/listen_urls.ts";

const interfaces = (): Deno.NetworkInterfaceInfo[] =>
  [
    { family: "IPv4", address: "127.0.0.1" },
    { family: "IPv6", address: "::1" },
    { family: "IPv4", address: "192.168.1.5" },
    { family: "IPv6", address: "fe80::1" },
    { family: "IPv6", address: "2001:db8::5" },
    { family: "IPv4", address: "10.0.0.7" },
  ] as Deno.NetworkInterfaceInfo[];

Deno.test("listenUrls: a specific address is itself", () => {
  assert.deepEqual(listenUrls({ hostname: "127.0.0.1", port: 11435 }, { interfaces }), [
    "http://127.0.0.1:11435",
  ]);
  assert.deepEqual(listenUrls({ hostname: "::1", port: 80 }, { interfaces }), ["http://[::1]:80"]);
  assert.deepEqual(listenUrls({ hostname: "192.168.1.5", port: 8 }, { interfaces }), [
    "http://192.168.1.5:8",
  ]);
});

Deno.test("listenUrls: 0.0.0.0 names loopback, then each IPv4 interface", () => {
  assert.deepEqual(listenUrls({ hostname: "0.0.0.0", port: 11435 }, { interfaces }), [
    "http://127.0.0.1:11435",
    "http://192.168.1.5:11435",
    "http://10.0.0.7:11435",
  ]);
});

Deno.test("listenUrls: :: names IPv6 loopback, then every address but link-local ones", () => {
  assert.deepEqual(listenUrls({ hostname: "::", port: 1 }, { interfaces }), [
    "http://[::1]:1",
    "http://192.168.1.5:1",
    "http://[2001:db8::5]:1",
    "http://10.0.0.7:1",
  ]);
});

Deno.test("listenUrls: interfaces that cannot be listed leave loopback", () => {
  const refused = () => {
    throw new Deno.errors.NotCapable("Requires sys access");
  };
  assert.deepEqual(listenUrls({ hostname: "0.0.0.0", port: 2 }, { interfaces: refused }), [
    "http://127.0.0.1:2",
  ]);
});

Deno.test("listenUrls: this machine's interfaces, for real", () => {
  const urls = listenUrls({ hostname: "0.0.0.0", port: 3 });
  assert.equal(urls[0], "http://127.0.0.1:3");
  assert.ok(urls.every((u) => !u.includes("0.0.0.0")), urls.join(" "));
});
