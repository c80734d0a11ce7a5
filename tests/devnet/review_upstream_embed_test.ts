/**
 * Review of the upstream engine's embeddings pass-through against an upstream that answers
 * usage no one can bill: negative, fractional or not a number. The provider bills what the
 * engine reports, so those counts are replaced by the dev tokenizer's.
 */

import assert from "node:assert/strict";
import { UpstreamEngine } from "../../devnet/upstream_engine.ts";
import { serve } from "../_http.ts";

Deno.test("upstream embeddings: usage that is negative, fractional or not a number is counted by the dev tokenizer", async () => {
  for (const usage of [{ prompt_tokens: -5 }, { prompt_tokens: 2.5 }, { prompt_tokens: "9" }]) {
    await using server = serve(async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/v1/models") return Response.json({ data: [{ id: "nomic-embed-text" }] });
      const body = await req.json();
      const n = Array.isArray(body.input) ? body.input.length : 1;
      return Response.json({
        data: Array.from({ length: n }, (_, index) => ({ index, embedding: [0.6, 0.8] })),
        usage: { ...usage, total_tokens: usage.prompt_tokens },
      });
    });
    const engine = new UpstreamEngine(server.url);
    const list = await engine.embed!({
      model: "upstream/nomic-embed-text",
      input: ["one two", "three"],
    }, new AbortController().signal);
    assert.deepEqual(list.usage, { prompt_tokens: 3, total_tokens: 3 }, JSON.stringify(usage));
  }
});
