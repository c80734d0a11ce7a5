/**
 * Fail closed when the chain is down, without failing at once (issue: "trust verified on chain
 * within a bounded window is used and anything older is refused"). The real daemon in front of
 * the devnet reads the chain through a proxy that can be switched off: while the chain cannot
 * be read, a provider checked on chain within the grace period is still served, and the
 * verdict says how old the check is; past the grace, requests are refused with `no_provider`
 * and a message saying why; once the chain answers again, trust is checked afresh.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { startDevnet } from "../../../devnet/network.ts";
import { serve } from "../../_http.ts";
import { startDaemon } from "../_e2e.ts";

const GRACE_SECS = 8;

Deno.test("chain down: trust inside the grace is used and marked, outside refused; chain back: fresh", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
    gateways: 1,
  });
  let chainUp = true;
  await using rpc = serve(async (req) => {
    if (!chainUp) return new Response("the chain is down", { status: 503 });
    return await fetch(devnet.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: await req.text(),
    });
  });
  const lines: string[] = [];
  await using daemon = await startDaemon({
    gateway: devnet.gateways[0],
    evm: {
      rpcUrl: rpc.url,
      registry: devnet.contracts.registry,
      staking: devnet.contracts.staking,
    },
    // Long enough that the request inside it is answered on a loaded machine (2 s was not).
    chainGraceSecs: GRACE_SECS,
    chainReuseMs: 0, // every request reads the chain (the default reuses a read for 15 s)
    log: (line: string) => lines.push(line),
  });
  const client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const ask = () =>
    client.chat.completions.create({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "hello" }],
    }).withResponse();
  const verdict = async () => (await ask()).response.headers.get("x-net-verdict") ?? "";

  assert.match(await verdict(), /, on-chain trust root$/, "fresh from the chain");

  chainUp = false;
  assert.match(
    await verdict(),
    /, on-chain trust root \(read \d+ s ago, chain unreachable\)$/,
    "inside the grace: the last check on chain stands in, and says so",
  );
  assert.match(
    lines.join("\n"),
    new RegExp(`the chain cannot be read .*; using what it said at most ${GRACE_SECS} s ago`),
  );

  // Past the grace (a lower bound: waiting longer only makes the check older).
  await new Promise((resolve) => setTimeout(resolve, GRACE_SECS * 1000 + 500));
  await assert.rejects(ask(), (error: unknown) => {
    assert.ok(error instanceof OpenAI.APIError, String(error));
    assert.equal(error.status, 503);
    assert.equal(error.code, "no_provider");
    assert.match(
      error.message,
      new RegExp(
        "Cannot read the Registry record of 0x[0-9a-f]{40} from the chain, so no provider can " +
          `be trusted: .*; it was last read on chain \\d+ s ago, longer than the ${GRACE_SECS} s grace`,
      ),
    );
    return true;
  });

  chainUp = true;
  assert.match(await verdict(), /, on-chain trust root$/, "the chain is back: checked afresh");
  assert.match(lines.at(-1)!, /the chain answers again/);
});
