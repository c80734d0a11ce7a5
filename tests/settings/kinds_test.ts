/**
 * Every kind of setting value: a table of good values with what they read as, and of bad
 * values with the problem named.
 */

import assert from "node:assert/strict";
import {
  address,
  bindAddress,
  blockNumber,
  choice,
  host,
  integer,
  type Kind,
  list,
  rpcUrl,
  text,
  toggle,
  url,
} from "../../settings/mod.ts";

// deno-lint-ignore no-explicit-any
const cases: [string, Kind<any>, [string, unknown][], [string, RegExp][]][] = [
  ["bindAddress", bindAddress(), [
    ["127.0.0.1:8088", { hostname: "127.0.0.1", port: 8088 }],
    ["[::1]:0", { hostname: "::1", port: 0 }],
    ["LOCALHOST:80", { hostname: "localhost", port: 80 }],
  ], [
    ["127.0.0.1", /host:port/],
    ["127.0.0.1:70000", /above 65535/],
    ["[127.0.0.1]:1", /brackets are for IPv6/],
    ["-x:1", /malformed/],
  ]],
  ["url", url(), [
    ["http://127.0.0.1:8545", "http://127.0.0.1:8545"],
    ["https://rpc.example/v1/", "https://rpc.example/v1"],
  ], [
    ["ws://127.0.0.1:8545", /scheme ws: is not accepted/],
    ["wss://rpc.example", /scheme wss: is not accepted/],
    ["127.0.0.1:8545", /not an absolute URL|scheme/],
    ["http://user:pw@rpc.example", /credentials/],
    ["not a url", /not an absolute URL/],
  ]],
  ["rpcUrl", rpcUrl(), [
    ["https://user:key@rpc.example", "https://user:key@rpc.example"],
    ["http://127.0.0.1:8545/", "http://127.0.0.1:8545"],
  ], [
    ["ws://127.0.0.1:8545", /scheme ws: is not accepted/],
  ]],
  ["address", address(), [
    ["0x5FbDB2315678afecb367f032d93F642f64180aa3", "0x5fbdb2315678afecb367f032d93f642f64180aa3"],
  ], [
    ["0x5fbdb2315678afecb367f032d93f642f64180aa", /not an address/],
    ["5fbdb2315678afecb367f032d93f642f64180aa3", /not an address/],
    ["0xzzzdb2315678afecb367f032d93f642f64180aa3", /not an address/],
  ]],
  ["integer 1..10", integer({ min: 1, max: 10 }), [["1", 1], ["10", 10]], [
    ["0", /out of range/],
    ["11", /out of range/],
    ["1.5", /not a whole number/],
    ["-1", /not a whole number/],
    ["1e3", /not a whole number/],
    ["0x10", /not a whole number/],
  ]],
  ["blockNumber", blockNumber(), [["0", 0n], [
    "123456789012345678901234567890",
    123456789012345678901234567890n,
  ]], [
    ["-5", /not a whole number/],
    ["latest", /not a whole number/],
  ]],
  ["choice", choice(["fixed", "ephemeral"]), [["fixed", "fixed"]], [["random", /not one of/]]],
  ["host", host(), [["Devnet", "devnet"], ["[::1]", "::1"], ["10.0.0.1", "10.0.0.1"]], [
    ["a b", /not a host/],
    ["host:80", /not a host/],
    ["...", /not a host/],
    ["1:::2", /not a host/],
  ]],
  ["text", text(), [["a path/with spaces", "a path/with spaces"]], []],
  ["list of urls", list(url()), [["http://a, ,http://b", ["http://a", "http://b"]], ["", []]], [
    ["http://a,ftp://b", /"ftp:\/\/b" is the scheme ftp: is not accepted/],
  ]],
  ["toggle", toggle(), [["1", true], ["TRUE", true], ["no", false]], [["maybe", /not an on\/off/]]],
];

for (const [name, kind, good, bad] of cases) {
  Deno.test(`settings kind ${name}: good values read, bad ones name the problem`, () => {
    for (const [input, expected] of good) {
      assert.deepEqual(kind.schema.parse(input), expected, `${name} ${input}`);
    }
    for (const [input, problem] of bad) {
      const result = kind.schema.safeParse(input);
      assert.equal(result.success, false, `${name} accepted ${input}`);
      assert.match(result.error!.issues[0].message, problem, `${name} ${input}`);
    }
  });
}
