import assert from "node:assert/strict";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { bytesToHex } from "viem";
import {
  adCommitment,
  AdError,
  type AdFailure,
  blendedPrice,
  canonicalAd,
  comparePrices,
  MAX_AD_BYTES,
  MODEL_CAPABILITIES,
  MODEL_CAPABILITY_NAMES,
  modelKind,
  parseAd,
  type ProviderAd,
  validateAd,
} from "../../chain/ad.ts";
import type { ProviderRecord } from "../../chain/types.ts";

// The ad of docs/protocol.md §1.
const AD: ProviderAd = {
  version: 1,
  provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
  tier: "verified",
  serving_key: "0xab8483f64d9c6d1ecf9b849ae677dd3315835cb2",
  endpoint: "http://127.0.0.1:9301",
  models: [
    {
      id: "devnet/tiny-chat",
      prices: { input: "150000", output: "600000" },
      context_length: 8192,
    },
  ],
};

// Written by hand from RFC 8785: members sorted by key, no whitespace, shortest numbers.
const CANONICAL = `{"endpoint":"http://127.0.0.1:9301","models":[{"context_length":8192,` +
  `"id":"devnet/tiny-chat","prices":{"input":"150000","output":"600000"}}],` +
  `"provider":"0x5b38da6a701c568545dcfcb03fcb875f56beddc4",` +
  `"serving_key":"0xab8483f64d9c6d1ecf9b849ae677dd3315835cb2","tier":"verified","version":1}`;
// keccak256 of CANONICAL's UTF-8 bytes (noble's keccak, independent of the code under test).
const COMMITMENT = "0x2614d4171c2323e5edca646304ad57134c290f5e49ab215b4f93b9f271705e10";

function refused(value: unknown, reason: AdFailure, field: string, text?: string): void {
  assert.throws(
    () => typeof value === "string" ? parseAd(value) : validateAd(value),
    (error: unknown) => {
      assert.ok(error instanceof AdError, `expected AdError, got ${error}`);
      assert.equal(error.reason, reason, error.message);
      assert.equal(error.field, field, error.message);
      if (text) assert.ok(error.message.includes(text), `"${error.message}" lacks "${text}"`);
      return true;
    },
    `${reason} ${field}`,
  );
}

Deno.test("the commitment is keccak256 of the hand-computed canonical JSON", () => {
  assert.equal(canonicalAd(AD), CANONICAL);
  assert.equal(bytesToHex(keccak_256(new TextEncoder().encode(CANONICAL))), COMMITMENT);
  assert.equal(adCommitment(AD), COMMITMENT);
  assert.equal(adCommitment(parseAd(JSON.stringify(AD))), COMMITMENT);
});

Deno.test("JCS is applied: key order, whitespace and number spelling do not matter", () => {
  const scrambled = `{
    "models": [ { "prices": { "output": "600000", "input": "150000" },
                  "context_length": 8.192e3, "id": "devnet\\/tiny-chat" } ],
    "version": 1.0,
    "tier": "verified",
    "endpoint": "http:\\/\\/127.0.0.1:9301",
    "serving_key": "0xab8483f64d9c6d1ecf9b849ae677dd3315835cb2",
    "provider": "0x5b38da6a701c568545dcfcb03fcb875f56beddc4"
  }`;
  assert.notEqual(scrambled, CANONICAL);
  const ad = parseAd(scrambled);
  assert.equal(canonicalAd(ad), CANONICAL);
  assert.equal(adCommitment(ad), COMMITMENT);
});

Deno.test("JCS keeps non-ASCII text as UTF-8, not as escapes", () => {
  const ad = parseAd(JSON.stringify(AD).replace("9301", "9301/caf\\u00e9"));
  const canonical = canonicalAd(ad);
  assert.ok(canonical.includes(`"endpoint":"http://127.0.0.1:9301/café"`), canonical);
  const bytes = new TextEncoder().encode(canonical);
  assert.equal(adCommitment(ad), bytesToHex(keccak_256(bytes)));
  assert.notEqual(adCommitment(ad), COMMITMENT);
});

Deno.test("any change to the ad changes the commitment", () => {
  const variants: ProviderAd[] = [
    { ...AD, tier: "tee" },
    { ...AD, endpoint: "http://127.0.0.1:9302" },
    { ...AD, models: [{ ...AD.models[0], context_length: 8193 }] },
    { ...AD, models: [{ ...AD.models[0], prices: { input: "150001", output: "600000" } }] },
    // Address case is part of the published text.
    { ...AD, provider: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4" },
  ];
  for (const variant of variants) assert.notEqual(adCommitment(variant), COMMITMENT);
});

Deno.test("every rule of the ad table is enforced, naming the field", () => {
  const model = AD.models[0];
  const withModel = (patch: Record<string, unknown>) => ({
    ...AD,
    models: [{ ...model, ...patch }],
  });
  const cases: [string, unknown, string, string?][] = [
    ["not an object", [AD], "", "an object"],
    ["unknown top-level field", { ...AD, extra: true }, "extra", "unknown field"],
    ["unknown model field", withModel({ tags: [] }), "models[0].tags"],
    [
      "unknown price field",
      withModel({ prices: { ...model.prices, cached: "1" } }),
      "models[0].prices.cached",
    ],
    ["missing field", { ...AD, endpoint: undefined }, "endpoint"],
    ["version 2", { ...AD, version: 2 }, "version", "the integer 1"],
    ["version as text", { ...AD, version: "1" }, "version"],
    ["unknown tier", { ...AD, tier: "gold" }, "tier", `"gold"`],
    ["short provider", { ...AD, provider: "0x5b38da6a" }, "provider", "20-byte"],
    ["provider without 0x", { ...AD, provider: AD.provider.slice(2) + "00" }, "provider"],
    ["serving key not hex", { ...AD, serving_key: "0x" + "zz".repeat(20) }, "serving_key"],
    ["ftp endpoint", { ...AD, endpoint: "ftp://127.0.0.1/" }, "endpoint", "http"],
    ["relative endpoint", { ...AD, endpoint: "/v1" }, "endpoint"],
    [
      "endpoint with credentials",
      { ...AD, endpoint: "http://u:p@127.0.0.1:9301" },
      "endpoint",
      "credentials",
    ],
    ["endpoint with query", { ...AD, endpoint: "http://127.0.0.1:9301/?a=1" }, "endpoint", "query"],
    [
      "endpoint with empty query",
      { ...AD, endpoint: "http://127.0.0.1:9301/?" },
      "endpoint",
      "query",
    ],
    [
      "endpoint with fragment",
      { ...AD, endpoint: "http://127.0.0.1:9301/#x" },
      "endpoint",
      "fragment",
    ],
    [
      "endpoint too long",
      { ...AD, endpoint: "http://a.test/" + "a".repeat(2040) },
      "endpoint",
      "2048",
    ],
    ["no models", { ...AD, models: [] }, "models", "1 to 256"],
    ["too many models", {
      ...AD,
      models: Array.from({ length: 257 }, (_, i) => ({ ...model, id: `m/m${i}` })),
    }, "models"],
    ["duplicate model", { ...AD, models: [model, model] }, "models[1].id", "unique"],
    ["id without maker", withModel({ id: "tiny-chat" }), "models[0].id", "maker/model"],
    ["id with a tag", withModel({ id: "devnet/tiny-chat:latest" }), "models[0].id"],
    ["id with three segments", withModel({ id: "a/b/c" }), "models[0].id"],
    ["segment starting with a dash", withModel({ id: "-a/b" }), "models[0].id"],
    ["segment too long", withModel({ id: `a/${"b".repeat(65)}` }), "models[0].id"],
    [
      "price with leading zero",
      withModel({ prices: { input: "01", output: "1" } }),
      "models[0].prices.input",
    ],
    [
      "fractional price",
      withModel({ prices: { input: "1", output: "1.5" } }),
      "models[0].prices.output",
    ],
    ["numeric price", withModel({ prices: { input: 1, output: "1" } }), "models[0].prices.input"],
    [
      "negative price",
      withModel({ prices: { input: "-1", output: "1" } }),
      "models[0].prices.input",
    ],
    [
      "price above uint256",
      withModel({ prices: { input: "2" + "0".repeat(77), output: "1" } }),
      "models[0].prices.input",
      "uint256",
    ],
    ["missing prices", withModel({ prices: undefined }), "models[0].prices"],
    ["context length 0", withModel({ context_length: 0 }), "models[0].context_length"],
    ["context length 2^31", withModel({ context_length: 2 ** 31 }), "models[0].context_length"],
    ["fractional context length", withModel({ context_length: 1.5 }), "models[0].context_length"],
    ["context length as text", withModel({ context_length: "8192" }), "models[0].context_length"],
  ];
  for (const [label, value, field, text] of cases) {
    const plain = JSON.parse(JSON.stringify(value ?? null));
    assert.ok(typeof plain !== "string", label);
    refused(plain, "invalid_field", field, text);
  }
  // The largest values still pass.
  validateAd(withModel({ context_length: 2 ** 31 - 1 }));
  validateAd(withModel({ prices: { input: String((1n << 256n) - 1n), output: "0" } }));
  validateAd(withModel({ id: `${"a".repeat(64)}/${"Z9._-".repeat(12)}abcd` }));
});

Deno.test("size and syntax are checked before the fields", () => {
  refused("{", "invalid_json", "", "not valid UTF-8 JSON");
  refused(
    JSON.stringify(AD) + " ".repeat(MAX_AD_BYTES),
    "too_large",
    "",
    `at most ${MAX_AD_BYTES}`,
  );
  // At the limit exactly, padding with whitespace, the ad is accepted.
  const text = JSON.stringify(AD);
  assert.deepEqual(parseAd(text + " ".repeat(MAX_AD_BYTES - text.length)), AD);
  // Bytes count, not characters.
  const wide = JSON.stringify({ ...AD, endpoint: "http://127.0.0.1/" + "é".repeat(33_000) });
  refused(wide, "too_large", "");
  assert.throws(
    () => parseAd(new Uint8Array([0x7b, 0xff, 0x7d])),
    (e: unknown) => e instanceof AdError && e.reason === "invalid_json",
  );
});

Deno.test("with a Registry record, the ad must match it", () => {
  const record: ProviderRecord = {
    address: AD.provider,
    adCommitment: COMMITMENT,
    trustRoot: AD.serving_key,
    tier: "verified",
    active: true,
  };
  assert.deepEqual(validateAd(AD, { record }), AD);
  // Addresses compare case-insensitively.
  assert.ok(validateAd(AD, {
    record: { ...record, address: "0x5B38DA6A701C568545DCFCB03FCB875F56BEDDC4" },
  }));
  const mismatches: [Partial<ProviderRecord>, AdFailure, string][] = [
    [{ address: "0x0000000000000000000000000000000000000001" }, "registry_mismatch", "provider"],
    [{ tier: "tee" }, "registry_mismatch", "tier"],
    [
      { trustRoot: "0x0000000000000000000000000000000000000002" },
      "registry_mismatch",
      "serving_key",
    ],
    [{ adCommitment: `0x${"00".repeat(32)}` }, "commitment_mismatch", ""],
  ];
  for (const [patch, reason, field] of mismatches) {
    assert.throws(
      () => validateAd(AD, { record: { ...record, ...patch } }),
      (e: unknown) => e instanceof AdError && e.reason === reason && e.field === field,
      `${reason} ${field}`,
    );
  }
});

Deno.test("comparePrices: lower blended price first, ties to the lower output price, exact", () => {
  const cases: [[string, string], [string, string], number][] = [
    [["100", "300"], ["250", "100"], 1], // 400 vs 350: the second is cheaper
    [["250", "100"], ["150", "200"], -1], // 350 vs 350: output 100 < 200
    [["150", "200"], ["250", "100"], 1],
    [["1", "2"], ["1", "2"], 0],
    [["9007199254740993", "0"], ["9007199254740992", "0"], 1], // beyond 2^53
  ];
  for (const [[ai, ao], [bi, bo], expected] of cases) {
    assert.equal(
      Math.sign(comparePrices({ input: ai, output: ao }, { input: bi, output: bo })),
      expected,
      `${ai}+${ao} vs ${bi}+${bo}`,
    );
  }
  assert.equal(blendedPrice({ input: 2n ** 255n, output: 2n ** 255n }), 2n ** 256n);
});

Deno.test("a model entry's kind, capabilities and dimensions: optional, strict, committed as published", () => {
  const model = AD.models[0];
  const withModel = (patch: Record<string, unknown>) => ({
    ...AD,
    models: [{ ...model, ...patch }],
  });
  // An old ad (no kind) is a chat model, and its copy gains no field: the commitment holds.
  const old = validateAd(structuredClone(AD));
  assert.equal(modelKind(old.models[0]), "chat");
  assert.deepEqual(Object.keys(old.models[0]).sort(), ["context_length", "id", "prices"]);
  assert.equal(adCommitment(old), COMMITMENT);

  const chat = withModel({
    kind: "chat",
    capabilities: ["tools", "logprobs", "json_mode", "structured_outputs", "vision"],
  });
  const embed = withModel({
    id: "devnet/embed",
    kind: "embedding",
    capabilities: ["dimensions"],
    embedding_dimensions: 256,
  });
  for (const ad of [chat, embed]) {
    const parsed = parseAd(JSON.stringify(ad));
    assert.deepEqual(parsed, ad);
    assert.equal(
      adCommitment(parsed),
      bytesToHex(keccak_256(new TextEncoder().encode(
        canonicalAd(ad as ProviderAd),
      ))),
    );
    assert.notEqual(adCommitment(parsed), COMMITMENT, "the new fields are committed");
  }
  assert.equal(modelKind(parseAd(JSON.stringify(embed)).models[0]), "embedding");
  // An embedding model without capabilities is fine; an empty list too.
  validateAd(withModel({ kind: "embedding", embedding_dimensions: 1 }));
  validateAd(withModel({ capabilities: [] }));

  const cases: [string, unknown, string, string][] = [
    ["unknown kind", withModel({ kind: "image" }), "models[0].kind", '"chat" or "embedding"'],
    ["kind null", withModel({ kind: null }), "models[0].kind", "null"],
    [
      "unknown capability",
      withModel({ capabilities: ["tools", "telepathy"] }),
      "models[0].capabilities[1]",
      '"telepathy"',
    ],
    [
      "repeated capability",
      withModel({ capabilities: ["tools", "tools"] }),
      "models[0].capabilities[1]",
      "unique",
    ],
    [
      "capability of the other kind",
      withModel({ capabilities: ["dimensions"] }),
      "models[0].capabilities[0]",
      "chat model",
    ],
    [
      "structured outputs on an embedding model",
      withModel({
        kind: "embedding",
        embedding_dimensions: 8,
        capabilities: ["structured_outputs"],
      }),
      "models[0].capabilities[0]",
      "embedding model",
    ],
    [
      "chat capability on an embedding model",
      withModel({ kind: "embedding", embedding_dimensions: 8, capabilities: ["tools"] }),
      "models[0].capabilities[0]",
      "embedding model",
    ],
    ["capabilities as text", withModel({ capabilities: "tools" }), "models[0].capabilities", ""],
    [
      "embedding model without dimensions",
      withModel({ kind: "embedding" }),
      "models[0].embedding_dimensions",
      "1 to 65536",
    ],
    [
      "dimensions 0",
      withModel({ kind: "embedding", embedding_dimensions: 0 }),
      "models[0].embedding_dimensions",
      "",
    ],
    [
      "dimensions too many",
      withModel({ kind: "embedding", embedding_dimensions: 65_537 }),
      "models[0].embedding_dimensions",
      "",
    ],
    [
      "dimensions on a chat model",
      withModel({ embedding_dimensions: 8 }),
      "models[0].embedding_dimensions",
      "only embedding models",
    ],
  ];
  for (const [label, value, field, text] of cases) {
    assert.doesNotThrow(() => JSON.stringify(value), label);
    refused(JSON.parse(JSON.stringify(value)), "invalid_field", field, text);
  }
});

Deno.test("docs/protocol.md lists every capability, and only those, with its kind", async () => {
  const text = await Deno.readTextFile(new URL("../../docs/protocol.md", import.meta.url));
  const table = text.slice(text.indexOf("What each capability promises"));
  const rows = table.slice(0, table.indexOf("\n\n", table.indexOf("|")))
    .split("\n").filter((line) => /^\| `/.test(line))
    .map((line) => /^\| `([a-z_]+)`/.exec(line)![1]);
  assert.deepEqual(rows, [...MODEL_CAPABILITY_NAMES]);
  const field = text.split("\n").find((line) => line.startsWith("| `models[].capabilities`"))!;
  for (const [name, kind] of Object.entries(MODEL_CAPABILITIES)) {
    const said = field.slice(field.indexOf(`${kind}:`));
    assert.ok(said.includes(`\`${name}\``), `${name} is listed under ${kind}`);
  }
});

Deno.test("a model's weights digest: optional, 32 bytes of hex, committed as published", () => {
  const model = AD.models[0];
  const digest = `0x${"Ab".repeat(32)}`;
  const ad = { ...AD, models: [{ ...model, weights_digest: digest }] };
  const parsed = parseAd(JSON.stringify(ad));
  assert.equal(parsed.models[0].weights_digest, digest, "kept as published (case too)");
  assert.notEqual(adCommitment(parsed), COMMITMENT, "the digest is committed");
  for (const bad of [null, 7, "0x12", `0x${"zz".repeat(32)}`, "ab".repeat(32)]) {
    refused(
      { ...AD, models: [{ ...model, weights_digest: bad }] },
      "invalid_field",
      "models[0].weights_digest",
      "64 hex digits",
    );
  }
});
