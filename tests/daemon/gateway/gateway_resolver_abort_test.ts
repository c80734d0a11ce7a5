/**
 * Found by review: `GatewayResolver.resolve` shares one connect between concurrent callers,
 * but runs it under the *first* caller's AbortSignal (`daemon/gateway/gateway_resolver.ts`, `resolve`:
 * `this.#connecting ??= this.#connect(signal)`).
 *
 * Defect: when the client whose request started the connect goes away (or its request times
 * out), the shared connect is aborted. Every other request waiting on it fails with that
 * client's AbortError (an `internal_error` 500 at the surface, not a network code), and the
 * healthy gateway that was being asked is put in the 30 s cool-down as if it had failed — so
 * the next connect skips it and goes to a lower-ranked gateway (possibly gossip hearsay).
 *
 * The tests guard the fixes.
 */

import assert from "node:assert/strict";
import { GatewayResolver } from "../../../daemon/gateway/gateway_resolver.ts";
import { serve } from "../../_http.ts";

const now = new Date("2026-11-22T12:00:00Z");

/** A healthy gateway whose gossip answer takes `ms` to arrive. */
function slowGateway(ms: number) {
  return serve(async () => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return Response.json({ gateways: [] });
  });
}

Deno.test("another client's abort does not fail a request waiting on the shared connect", async () => {
  await using gateway = slowGateway(300);
  const resolver = new GatewayResolver({
    bootstrap: [gateway.url],
    clock: () => now,
    log: () => {},
  });
  const leaving = new AbortController();
  const first = resolver.resolve(leaving.signal); // this client goes away
  const second = resolver.resolve(new AbortController().signal); // this one stays
  setTimeout(() => leaving.abort(), 50);
  await assert.rejects(first);
  // The gateway is healthy and the second request was never cancelled: it must get it.
  assert.equal(await second.catch((error) => `rejected: ${error}`), gateway.url);
});

Deno.test("a client's abort does not put a healthy gateway in the cool-down", async () => {
  await using healthy = slowGateway(300);
  await using other = slowGateway(0);
  const resolver = new GatewayResolver({
    bootstrap: [healthy.url, other.url],
    clock: () => now,
    log: () => {},
  });
  const leaving = new AbortController();
  const first = resolver.resolve(leaving.signal);
  setTimeout(() => leaving.abort(), 50);
  await assert.rejects(first);
  // Nothing failed on the network: the first-ranked gateway is still the one to use.
  assert.equal(await resolver.resolve(), healthy.url);
});
