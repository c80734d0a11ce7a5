/**
 * A devnet provider served on loopback with the echo engine, for the provider's own tests.
 */

import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, encodeKeyConfig, generateKeyPair } from "../../crypto/mod.ts";
import { EchoEngine } from "../../devnet/engine.ts";
import { DevnetProvider } from "../../devnet/provider.ts";
import { serve } from "../_http.ts";

/**
 * Starts a provider whose echo engine takes `tokenDelayMs` per token (and, when given, shows a
 * whole reply is alive every `wholeKeepAliveMs`); dispose of it to stop its server.
 */
export async function startProvider(tokenDelayMs: number, wholeKeepAliveMs?: number) {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 7 });
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: `0x${"7a".repeat(20)}`,
    servingKey: privateKeyToAccount(generatePrivateKey()),
    tier: "verified",
    endpoint: server.url,
    engine: new EchoEngine({ tokenDelayMs }),
    key,
    log: () => {},
    wholeKeepAliveMs,
  });
  handler = provider.handler;
  return {
    provider,
    url: server.url,
    keyConfig: encodeKeyConfig(key.config),
    [Symbol.asyncDispose]: () => server.close(),
  };
}
