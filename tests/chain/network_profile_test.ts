/**
 * Network profiles (`chain/network_profile.ts`): the built-in devnet, files read strictly (every
 * bad field named), and the round trip through the file format.
 */

import assert from "node:assert/strict";
import {
  BUILTIN_NETWORKS,
  DEVNET_PROFILE,
  NetworkProfileError,
  networkProfileJson,
  parseNetworkProfile,
  resolveNetworkProfile,
} from "../../chain/network_profile.ts";

const GOOD = networkProfileJson(DEVNET_PROFILE);

function refused(text: string, reason: string, message: RegExp) {
  assert.throws(() => parseNetworkProfile(text, "test.json"), (error: unknown) => {
    assert.ok(error instanceof NetworkProfileError, String(error));
    assert.equal(error.reason, reason);
    assert.match(error.message, /^Cannot use network profile test\.json: /);
    assert.match(error.message, message);
    return true;
  }, text);
}

Deno.test("network profile: the built-in devnet, by name; a round trip through the file format", () => {
  assert.equal(resolveNetworkProfile("devnet"), DEVNET_PROFILE);
  assert.deepEqual(Object.keys(BUILTIN_NETWORKS), ["devnet"]);
  const copy = parseNetworkProfile(JSON.stringify(GOOD), "copy.json");
  assert.deepEqual({ ...copy, source: "built-in" }, DEVNET_PROFILE);
  assert.ok(Object.isFrozen(copy) && Object.isFrozen(copy.contracts));
  // Upper-case addresses are kept lower case; gateways may be left out.
  const { gateways: _, ...rest } = GOOD;
  const lean = parseNetworkProfile(
    JSON.stringify({
      ...rest,
      contracts: {
        ...GOOD.contracts,
        registry: GOOD.contracts.registry.toUpperCase().replace("0X", "0x"),
      },
    }),
    "lean.json",
  );
  assert.equal(lean.contracts.registry, DEVNET_PROFILE.contracts.registry);
  assert.deepEqual(lean.gateways, []);
});

Deno.test("network profile: a name that is not built in, or a file that is not there", () => {
  assert.throws(
    () => resolveNetworkProfile("mainnet"),
    (e: unknown) =>
      e instanceof NetworkProfileError && e.reason === "not_found" &&
      /no built-in network has that name \(built in: devnet\)/.test(e.message),
  );
  assert.throws(
    () => resolveNetworkProfile("./missing.json"),
    (e: unknown) =>
      e instanceof NetworkProfileError && e.reason === "not_found" &&
      /Cannot read network profile \.\/missing\.json: no such file/.test(e.message),
  );
  const read = (path: string) => {
    assert.equal(path, "/etc/net/other.json");
    return JSON.stringify({ ...GOOD, network: "other", chain_id: 7 });
  };
  assert.equal(resolveNetworkProfile("/etc/net/other.json", { readFile: read }).chainId, 7);
});

Deno.test("network profile: every bad field is refused, named, with what was found", () => {
  const text = (changes: Record<string, unknown>) => JSON.stringify({ ...GOOD, ...changes });
  refused("{", "invalid", /not JSON/);
  refused("[]", "invalid", /expected a JSON object/);
  refused('{"version":1,"version":1}', "invalid", /the key "version" is repeated/);
  refused(text({ extra: 1 }), "invalid", /unknown field "extra"/);
  refused(text({ version: 2 }), "invalid", /version is 2; expected 1/);
  refused(text({ network: "a b" }), "invalid", /network is "a b"/);
  refused(text({ chain_id: 0 }), "invalid", /chain_id is 0; expected a positive integer/);
  refused(text({ chain_id: "1" }), "invalid", /chain_id is "1"/);
  refused(text({ rpc_urls: [] }), "invalid", /rpc_urls is \[\]; expected a list of 1 to 64 URLs/);
  refused(
    text({ rpc_urls: ["ws://x"] }),
    "invalid",
    /rpc_urls\[0\] is "ws:\/\/x"; expected an http/,
  );
  refused(text({ gateways: ["ftp://x"] }), "invalid", /gateways\[0\] is "ftp:\/\/x"/);
  refused(
    text({ contracts: { ...GOOD.contracts, staking: "0x1234" } }),
    "invalid",
    /contracts\.staking is "0x1234"; expected 0x and 40 hex digits/,
  );
  refused(
    text({ contracts: { ...GOOD.contracts, multicall: GOOD.contracts.registry } }),
    "invalid",
    /unknown contract "multicall"/,
  );
  refused(text({ deployed_at_block: -1 }), "invalid", /deployed_at_block is -1/);
  refused(" ".repeat(70_000), "invalid", /a profile is at most 65536/);
});
