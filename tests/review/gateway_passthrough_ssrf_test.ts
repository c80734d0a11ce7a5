/**
 * Review reproductions for `devnet/gateway.ts`: the key and attestation pass-through.
 *
 * Each test FAILS while the bug it describes exists.
 *
 * @module
 */

import assert from "node:assert/strict";
import { GatewaySet } from "../../daemon/gateway_set.ts";
import { createGatewayHandler, type DirectoryEntry } from "../../devnet/gateway.ts";
import { serve } from "../_http.ts";

const PROVIDER = "0x" + "a1".repeat(20);

function entry(endpoint: string): DirectoryEntry {
  return {
    provider: PROVIDER,
    tier: "verified",
    ad: {
      endpoint,
      models: [{ id: "devnet/tiny", prices: { input: "1", output: "1" }, context_length: 4096 }],
    },
    capacity: { max_concurrency: 1, available_concurrency: 1 },
    metrics: { tokens_per_sec: 1 },
  };
}

// Attack: a provider controls its ad's `endpoint` (any listed provider can). The gateway fetches
// `${endpoint}/v1/key` with `fetch`'s default `redirect: "follow"` and hands the body (up to
// 64 KiB; 1 MiB for the attestation) back to whoever asked. So the provider's server answers
// `302 Location: http://169.254.169.254/latest/meta-data/iam/security-credentials/…` (or any
// service on the gateway's host or LAN, with any path and query), then asks the gateway for its
// own key and reads the internal answer: a full-read SSRF from the gateway operator's network.
// The ad rules (`docs/protocol.md` §1: no query, no credentials) do not help, because the
// redirect target is never checked. Here the "internal service" is a loopback server that only
// the gateway should reach.
Deno.test("review: the gateway's key pass-through does not follow a provider's redirect to an internal URL", async () => {
  let internalHits = 0;
  await using internal = serve(() => {
    internalHits++;
    return Response.json({ secret: "AKIA-INTERNAL-CREDENTIALS" });
  });
  await using provider = serve((req) => {
    const path = new URL(req.url).pathname;
    return new Response(null, {
      status: 302,
      headers: { location: `${internal.url}/latest/meta-data/iam?from=${path}` },
    });
  });
  const handler = createGatewayHandler({
    directory: { entries: () => [entry(provider.url)] },
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
    passThroughTimeoutMs: 2000,
  });
  const response = await handler(
    new Request(`http://gateway.test/v1/providers/${PROVIDER}/key`),
  );
  const text = await response.text();
  assert.ok(
    !text.includes("AKIA-INTERNAL-CREDENTIALS"),
    `the gateway returned the internal service's answer to the requester: ${text}`,
  );
  assert.equal(internalHits, 0, "the gateway followed the provider's redirect");
});

Deno.test("review: the gateway's attestation pass-through does not follow a provider's redirect", async () => {
  let internalHits = 0;
  await using internal = serve(() => {
    internalHits++;
    return new Response("root:x:0:0:internal-only", { headers: { "content-type": "text/plain" } });
  });
  await using provider = serve(() =>
    new Response(null, { status: 307, headers: { location: `${internal.url}/admin?x=1` } })
  );
  const handler = createGatewayHandler({
    directory: { entries: () => [entry(provider.url)] },
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
    passThroughTimeoutMs: 2000,
  });
  const response = await handler(
    new Request(
      `http://gateway.test/v1/providers/${PROVIDER}/attestation?nonce=${"ab".repeat(32)}`,
    ),
  );
  const text = await response.text();
  assert.ok(!text.includes("internal-only"), `internal content leaked: ${text}`);
  assert.equal(internalHits, 0, "the gateway followed the provider's redirect");
});
