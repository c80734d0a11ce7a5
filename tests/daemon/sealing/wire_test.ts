/**
 * What crosses the wire, on both legs of the relay: daemon → gateway and gateway → provider.
 * Recording TCP proxies sit on each leg; the prompt and the reply must appear on neither,
 * while the reply still reaches the client.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, generateKeyPair } from "../../../crypto/mod.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";
import { EchoEngine } from "../../../devnet/engine.ts";
import { createGatewayHandler, oneProviderDirectory } from "../../../devnet/gateway.ts";
import { DevnetProvider } from "../../../devnet/provider.ts";
import { serve } from "../../_http.ts";
import { containsBytes, tcpProxy } from "../../_tcp_proxy.ts";
import { startDaemon } from "../_e2e.ts";

const encoder = new TextEncoder();

Deno.test("neither leg of the relay carries the prompt or the reply in the clear", async () => {
  // The provider, reached only through a recording proxy (its ad names the proxy).
  let providerHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  await using providerServer = serve((req) => providerHandler(req));
  await using providerLeg = tcpProxy({ hostname: "127.0.0.1", port: providerServer.port });
  const provider = await DevnetProvider.create({
    provider: privateKeyToAccount(generatePrivateKey()).address,
    servingKey: privateKeyToAccount(generatePrivateKey()),
    tier: "verified",
    endpoint: providerLeg.url,
    engine: new EchoEngine({ tokenDelayMs: 0 }),
    key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
    log: () => {},
  });
  providerHandler = provider.handler;

  // The gateway, reached by the daemon only through a second recording proxy.
  let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  await using gatewayServer = serve((req) => gatewayHandler(req));
  gatewayHandler = createGatewayHandler({
    directory: oneProviderDirectory(provider.ad, 4),
    peers: new GatewaySet(),
    self: gatewayServer.url,
  });
  await using daemonLeg = tcpProxy({ hostname: "127.0.0.1", port: gatewayServer.port });
  await using daemon = await startDaemon({ gateway: daemonLeg.url });

  const secret = "ultraviolet-penguin-4417 diagnosis";
  const client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const completion = await client.chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: secret }],
  });
  assert.match(completion.choices[0].message.content ?? "", /ultraviolet-penguin-4417/);

  const legs = {
    "daemon → gateway": daemonLeg.sent(),
    "gateway → daemon": daemonLeg.received(),
    "gateway → provider": providerLeg.sent(),
    "provider → gateway": providerLeg.received(),
  };
  assert.ok(containsBytes(legs["gateway → provider"], encoder.encode("POST /v1/relay")));
  for (const [leg, bytes] of Object.entries(legs)) {
    assert.ok(bytes.length > 0, `${leg} carried nothing`);
    for (const needle of ["ultraviolet-penguin-4417", "diagnosis", "You said"]) {
      assert.ok(
        !containsBytes(bytes, encoder.encode(needle)),
        `"${needle}" crossed ${leg} in the clear`,
      );
    }
  }
});
