/**
 * Found by review: one gateway can deny the daemon service indefinitely.
 *
 * Gateways are untrusted relays (architecture §5); the only defence the daemon has against a
 * gateway that will not serve is another gateway. But `NetworkBackend.#withGateway` moves on
 * only when a gateway fails at the transport level or answers nonsense (`GatewayError` reason
 * `gateway`). A gateway that answers gossip correctly and then lists no candidate for the
 * model (or only candidates whose keys do not verify, or answers the relay with a 4xx) is
 * never replaced: the daemon keeps it as its current gateway and refuses every request
 * (`no_provider` / `model_not_found` / `attestation_failed`), although other known gateways
 * serve the model. Since reached gateways rank first in `gateways.json`, it stays the first
 * choice across restarts too.
 *
 * The test guards the fix.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { startDevnet } from "../../../devnet/network.ts";
import { maliciousGateway, startDaemon } from "../_e2e.ts";

Deno.test("a gateway that lists no provider does not stop the daemon from using another", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  // Answers gossip and the model list correctly, but never lists a provider.
  await using censor = maliciousGateway(devnet.gateways[0], async (req, upstream) => {
    if (new URL(req.url).pathname === "/v1/providers") {
      await upstream.body?.cancel();
      return Response.json({ providers: [] });
    }
    return upstream;
  });
  await using daemon = await startDaemon({ bootstrap: [censor.url, devnet.gateways[1]] });
  const client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const outcome = await client.chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: "served anyway" }],
  }).then(
    (completion) => completion.choices[0].message.content ?? "",
    (error) => `refused: ${error}`,
  );
  assert.match(outcome, /served anyway/, `the honest gateway was never tried: ${outcome}`);
});
