/**
 * The built-in devnet profile is what `deno task devnet --ports fixed` and `deno task demo`
 * create: on a fresh chain, dev account 0 deploys the contracts at the profile's addresses, in
 * the profile's block, on its chain id; the devnet's own profile says the same, and its
 * Registry names the other three (the contracts belong together).
 */

import assert from "node:assert/strict";
import { createChainClient } from "../../chain/client.ts";
import { checkNetworkContracts } from "../../chain/contract_check.ts";
import { DEVNET_PROFILE } from "../../chain/network_profile.ts";
import { DEVNET_PORTS, startDevnet } from "../../devnet/network.ts";

Deno.test("a fresh devnet deploys at the built-in devnet profile's addresses, which check out", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0, teeProviders: 0, gateways: 1 });
  assert.deepEqual(devnet.profile.contracts, DEVNET_PROFILE.contracts);
  assert.equal(devnet.profile.deployedAtBlock, DEVNET_PROFILE.deployedAtBlock);
  assert.equal(devnet.profile.chainId, DEVNET_PROFILE.chainId);
  assert.equal(devnet.profilePath, null, "nothing is written without a state directory");
  // The fixed ports are the profile's.
  assert.deepEqual(DEVNET_PROFILE.rpcUrls, [`http://127.0.0.1:${DEVNET_PORTS.anvil}`]);
  assert.deepEqual(DEVNET_PROFILE.gateways, [
    `http://127.0.0.1:${DEVNET_PORTS.gateways}`,
    `http://127.0.0.1:${DEVNET_PORTS.gateways + 1}`,
  ]);
  const client = await createChainClient(devnet.rpcUrl, { chainId: DEVNET_PROFILE.chainId });
  await checkNetworkContracts(client, devnet.profile.contracts);
});
