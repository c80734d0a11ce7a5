/**
 * Found by review: with the chain configured, the daemon seals to providers that are not
 * bonded.
 *
 * Architecture §3: a provider is *bonded* when the Registry lists it active **and** its stake in
 * the canonical Staking contract is at least the minimum bond; the indexer lists only bonded
 * providers as live-verified. The daemon's chain check (`daemon/trust/provider_trust.ts`,
 * `registryMismatch`) reads only the Registry record (registered, active, tier, trust root,
 * commitment) and never the stake: a provider that unstaked (or was never staked above the
 * bond) keeps receiving sealed requests while the indexer reports it as not bonded. In the
 * verified tier the stake is the only thing that makes a provider answerable for what it does
 * with the plaintext it decrypts.
 *
 * The test guards the fix.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { stakingAbi } from "../../../chain/abi.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../../../devnet/signer.ts";
import { devnetEvm, startDaemon } from "../_e2e.ts";

Deno.test("a daemon reading the chain does not seal to a provider that is not bonded", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  // The bond is raised above every stake: no provider is bonded any more (the indexer's
  // /stats would say bonded 0, live_verified 0).
  const owner = createSigner(devnet.rpcUrl, devAccounts().owner, { chainId: devnet.chainId });
  await sendAndConfirm(owner, {
    address: devnet.contracts.staking,
    abi: stakingAbi,
    functionName: "setMinProviderBond",
    args: [10n ** 30n],
  });
  await using daemon = await startDaemon({
    bootstrap: devnet.gateways,
    evm: devnetEvm(devnet),
  });
  const client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const outcome = await client.chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: "for a bonded provider only" }],
  }).withResponse().then(
    ({ response }) => `served by ${response.headers.get("x-net-provider")}`,
    (error) => `refused: ${error}`,
  );
  assert.match(outcome, /^refused/, `an unbonded provider got the request: ${outcome}`);
});
