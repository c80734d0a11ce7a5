import assert from "node:assert/strict";
import {
  formatModelId,
  isNetworkModelId,
  MODEL_ID_FORMAT,
  ModelIdError,
  type ModelIdFailure,
  parseModelId,
} from "../../../daemon/core/model_id.ts";

Deno.test("model ids parse with and without :latest", () => {
  const cases: [string, string, string][] = [
    ["net/verified/devnet/tiny-chat", "verified", "devnet/tiny-chat"],
    ["net/verified/devnet/tiny-chat:latest", "verified", "devnet/tiny-chat"],
    ["net/tee/Meta/Llama-3.1-8B_instruct.v2", "tee", "Meta/Llama-3.1-8B_instruct.v2"],
    [`net/tee/${"a".repeat(64)}/${"b".repeat(64)}`, "tee", `${"a".repeat(64)}/${"b".repeat(64)}`],
  ];
  for (const [id, tier, model] of cases) {
    assert.deepEqual(parseModelId(id), { tier, model }, id);
  }
});

Deno.test("malformed model ids are refused with the reason and the expected format", () => {
  const cases: [unknown, ModelIdFailure, string][] = [
    [undefined, "not_a_string", "found nothing"],
    [7, "not_a_string", "found the number 7"],
    [["net"], "not_a_string", "found an array"],
    ["llama3", "format", 'does not start with "net/"'],
    ["llama3:latest", "format", 'does not start with "net/"'],
    ["openai/verified/a/b", "format", 'does not start with "net/"'],
    ["net/verified/devnet", "format", "found 3 segments, expected 4"],
    ["net/verified/devnet/tiny/chat", "format", "found 5 segments, expected 4"],
    ["net/gold/devnet/tiny-chat", "tier", 'the tier "gold" is not verified or tee'],
    ["net/Verified/devnet/tiny-chat", "tier", "not verified or tee"],
    ["net/verified/devnet/tiny-chat:7b", "tag", 'the tag ":7b" is not known'],
    ["net/verified/devnet/tiny-chat:", "tag", 'the tag ":"'],
    ["net/verified/devnet/tiny-chat:latest:latest", "tag", "is not known"],
    ["net/verified/devnet/tiny-chat:LATEST", "tag", "is not known"],
    ["net/verified//tiny-chat", "segment", 'the maker ""'],
    ["net/verified/devnet/-chat", "segment", 'the model "-chat"'],
    ["net/verified/devnet/tiny chat", "segment", "must be 1 to 64"],
    [`net/verified/${"a".repeat(65)}/x`, "segment", "the maker"],
  ];
  for (const [value, reason, fragment] of cases) {
    assert.throws(
      () => parseModelId(value),
      (error: unknown) => {
        assert.ok(error instanceof ModelIdError, String(value));
        assert.equal(error.name, "ModelIdError");
        assert.equal(error.reason, reason, `${value}: ${error.message}`);
        assert.ok(error.message.includes(fragment), `${value}: ${error.message}`);
        assert.ok(error.message.endsWith(MODEL_ID_FORMAT), error.message);
        return true;
      },
    );
  }
});

Deno.test("formatModelId writes both forms and refuses what it cannot parse back", () => {
  const id = { tier: "tee" as const, model: "devnet/tiny-chat" };
  assert.equal(formatModelId(id), "net/tee/devnet/tiny-chat");
  assert.equal(formatModelId(id, { latest: true }), "net/tee/devnet/tiny-chat:latest");
  assert.deepEqual(parseModelId(formatModelId(id, { latest: true })), id);
  assert.throws(() => formatModelId({ tier: "tee", model: "a/b/c" }), ModelIdError);
  assert.throws(() => formatModelId({ tier: "gold" as "tee", model: "a/b" }), ModelIdError);
});

Deno.test("isNetworkModelId accepts maker/model only", () => {
  assert.ok(isNetworkModelId("devnet/tiny-chat"));
  for (const bad of ["devnet", "a/b/c", "a/b:latest", "/b", "a/", 5, null]) {
    assert.ok(!isNetworkModelId(bad), String(bad));
  }
});
