import assert from "node:assert/strict";
import { type BindAddress, BindAddressError, parseBindAddress } from "../../io/bind_address.ts";

Deno.test("bind address: good inputs parse to a lower-case host and a port", () => {
  const cases: [string, BindAddress][] = [
    ["127.0.0.1:8088", { hostname: "127.0.0.1", port: 8088 }],
    ["0.0.0.0:0", { hostname: "0.0.0.0", port: 0 }],
    ["[::1]:11435", { hostname: "::1", port: 11435 }],
    ["[::]:80", { hostname: "::", port: 80 }],
    ["[FE80::1]:1", { hostname: "fe80::1", port: 1 }],
    ["[::ffff:127.0.0.1]:5", { hostname: "::ffff:127.0.0.1", port: 5 }],
    ["localhost:80", { hostname: "localhost", port: 80 }],
    ["LocalHost:80", { hostname: "localhost", port: 80 }],
    ["daemon.example-net.internal:65535", { hostname: "daemon.example-net.internal", port: 65535 }],
    ["a:1", { hostname: "a", port: 1 }],
    ["host:00080", { hostname: "host", port: 80 }],
  ];
  for (const [input, expected] of cases) {
    assert.deepEqual(parseBindAddress(input), expected, input);
  }
});

Deno.test("bind address: bad inputs are refused with what is wrong", () => {
  const cases: [string, RegExp][] = [
    ["", /not of the form host:port/],
    ["127.0.0.1", /not of the form host:port/],
    [":8080", /not of the form host:port/],
    ["127.0.0.1:", /not of the form host:port/],
    ["::1:80", /not of the form host:port/], // IPv6 needs brackets
    ["[::1]", /not of the form host:port/],
    ["[]:80", /not of the form host:port/],
    ["host:123456", /not of the form host:port/], // six digits
    ["host:-1", /not of the form host:port/],
    ["host:8o", /not of the form host:port/],
    ["host:80 ", /not of the form host:port/],
    [" host:80", /not of the form host:port/],
    ["host name:80", /not of the form host:port/],
    ["host_name:80", /not of the form host:port/],
    ["http://host:80", /not of the form host:port/],
    ["user@host:80", /not of the form host:port/],
    ["[zz::1]:80", /not of the form host:port/],
    ["host:65536", /port 65536 is above 65535/],
    ["127.0.0.1:99999", /port 99999 is above 65535/],
    ["[127.0.0.1]:80", /brackets are for IPv6 addresses/],
    ["-host:80", /the host is malformed/],
    [".host:80", /the host is malformed/],
  ];
  for (const [input, message] of cases) {
    assert.throws(
      () => parseBindAddress(input),
      (error: unknown) => {
        assert.ok(error instanceof BindAddressError, `${JSON.stringify(input)}: got ${error}`);
        assert.equal(error.name, "BindAddressError");
        assert.match(error.shortMessage, message, JSON.stringify(input));
        return true;
      },
      JSON.stringify(input),
    );
  }
});
