/**
 * The `provider` object (routing preferences) at the handler, on every chat surface: validated
 * strictly (an unknown key, a bad address or sort is a 400 naming it), taken out of the body the
 * provider gets, handed to the backend as the request's preferences, `require_tier: "tee"`
 * raising the tier the request is served in.
 */

import assert from "node:assert/strict";
import { post, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";
const P1 = "0x" + "ab".repeat(20);
const P2 = "0x" + "CD".repeat(20);
const messages = [{ role: "user", content: "hi" }];
const PROVIDER = {
  sort: "throughput",
  order: [P2],
  allow_fallbacks: true,
  only: [P1, P2],
  ignore: ["0x" + "00".repeat(20)],
  max_price: { prompt: "150000", completion: 700000 },
  min_stake: "1000",
};

const BODIES: Record<string, (provider: unknown) => Record<string, unknown>> = {
  "/v1/chat/completions": (provider) => ({ model: MODEL, messages, provider }),
  "/v1/completions": (provider) => ({ model: MODEL, prompt: "hi", provider }),
  "/v1/responses": (provider) => ({ model: MODEL, input: "hi", provider }),
  "/api/chat": (provider) => ({ model: MODEL, messages, stream: false, provider }),
  "/api/generate": (provider) => ({ model: MODEL, prompt: "hi", stream: false, provider }),
  "/v1/messages": (provider) => ({ model: MODEL, max_tokens: 8, messages, provider }),
};

for (const [path, body] of Object.entries(BODIES)) {
  Deno.test(`provider preferences (${path}): handed to the backend, never to the provider`, async () => {
    const fixture = surface();
    const response = await fixture.handler(post(path, body(PROVIDER)));
    assert.equal(response.status, 200, await response.clone().text());
    await response.body?.cancel();
    const [chat] = fixture.backend.chats;
    assert.equal(chat.request.body.provider, undefined, "not in the forwarded body");
    assert.deepEqual(chat.request.preferences, {
      sort: "throughput",
      order: [P2.toLowerCase()],
      allowFallbacks: true,
      only: [P1, P2.toLowerCase()],
      ignore: ["0x" + "00".repeat(20)],
      maxPrice: { prompt: 150000n, completion: 700000n },
      minStake: 1000n,
    });
    assert.equal(chat.request.tier, "verified");
  });

  Deno.test(`provider preferences (${path}): strict, each refusal names the field`, async () => {
    const fixture = surface();
    for (
      const [provider, field] of [
        [{ data_collection: "deny" }, "provider.data_collection"],
        [{ sort: "cheapest" }, "provider.sort"],
        [{ only: ["provider-one"] }, "provider.only[0]"],
        [{ only: [] }, "provider.only"],
        [{ max_price: { prompt: -1 } }, "provider.max_price.prompt"],
        [{ max_price: { request: 1 } }, "provider.max_price.request"],
        [{ min_stake: "1.5" }, "provider.min_stake"],
        [{ require_tier: "gold" }, "provider.require_tier"],
        [{ allow_fallbacks: "no" }, "provider.allow_fallbacks"],
        ["fast", "provider"],
      ] as const
    ) {
      const response = await fixture.handler(post(path, body(provider)));
      assert.equal(response.status, 400, JSON.stringify(provider));
      const answer = await response.json();
      const message: string = typeof answer.error === "string"
        ? answer.error
        : answer.error.message;
      assert.ok(message.includes(field), `${JSON.stringify(provider)}: ${message}`);
    }
    assert.equal(fixture.backend.chats.length, 0, "nothing was sent");
  });
}

Deno.test("provider preferences: require_tier tee serves a verified model id in the TEE tier", async () => {
  const fixture = surface();
  const response = await fixture.handler(post("/v1/chat/completions", {
    model: MODEL,
    messages,
    provider: { require_tier: "tee" },
  }));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-net-tier"), "tee");
  await response.body?.cancel();
  assert.equal(fixture.backend.chats[0].request.tier, "tee");
  // A floor, not a ceiling: a tee model id stays tee.
  const tee = await fixture.handler(post("/v1/chat/completions", {
    model: "net/tee/devnet/tiny-chat",
    messages,
    provider: { require_tier: "verified" },
  }));
  assert.equal(tee.status, 200);
  await tee.body?.cancel();
  assert.equal(fixture.backend.chats[1].request.tier, "tee");
});
