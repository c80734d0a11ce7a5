import assert from "node:assert/strict";
import {
  attestationBundleFromJson,
  attestationBundleToJson,
  AttestationError,
} from "../../../crypto/tee/mod.ts";
import { buildSnpBundle, buildTdxBundle } from "./_synthetic_bundle.ts";

const now = new Date("2026-11-22T12:00:00Z");
const nonce = new Uint8Array(32).fill(0x42);

function malformed(value: unknown, label: string, message?: RegExp) {
  assert.throws(
    () => attestationBundleFromJson(value),
    (error: unknown) => {
      assert.ok(error instanceof AttestationError, `${label}: ${error}`);
      assert.equal(error.reason, "malformed", label);
      if (message) assert.match(error.message, message, label);
      return true;
    },
    label,
  );
}

Deno.test("TDX and SEV-SNP bundles round-trip through JSON, with GPUs and models", async () => {
  const models = [{ id: "maker/model", weightsDigest: new Uint8Array(32).fill(1) }];
  const tdx = await buildTdxBundle({ nonce, now, gpus: 2, models });
  assert.equal(tdx.json.gpus?.length, 2);
  assert.deepEqual(tdx.json.models, [{
    id: "maker/model",
    weights_digest: "0x" + "01".repeat(32),
  }]);
  const parsed = attestationBundleFromJson(JSON.parse(JSON.stringify(tdx.json)));
  assert.deepEqual(parsed, tdx.bundle);
  assert.deepEqual(attestationBundleToJson(parsed), tdx.json);
  const bare = await buildTdxBundle({ nonce, now, collateral: false });
  assert.equal(attestationBundleFromJson(bare.json).format, "tdx");
  assert.equal((attestationBundleFromJson(bare.json) as { collateral: unknown }).collateral, null);
  const snp = await buildSnpBundle({ nonce, now });
  assert.deepEqual(attestationBundleFromJson(JSON.parse(JSON.stringify(snp.json))), snp.bundle);
  assert.equal(snp.json.format, "sev-snp");
  assert.match(String((snp.json.collateral as { vcek: string }).vcek), /^0x30/);
});

Deno.test("a mock bundle is recognised by its format alone", () => {
  assert.deepEqual(attestationBundleFromJson({ format: "mock" }), { format: "mock" });
  assert.deepEqual(
    attestationBundleFromJson({ format: "mock", quote: "not hex", anything: [1] }),
    { format: "mock" },
  );
  assert.deepEqual(attestationBundleToJson({ format: "mock" }), { format: "mock" });
});

Deno.test("malformed bundles are refused, naming the field", async () => {
  const { json } = await buildTdxBundle({ nonce, now, collateral: false });
  const snp = (await buildSnpBundle({ nonce, now })).json;
  const gpu = json.gpus![0];
  const model = { id: "maker/model", weights_digest: "0x" + "ab".repeat(32) };
  const table: [string, unknown, RegExp][] = [
    ["not an object", "tdx", /JSON object/],
    ["array", [json], /JSON object/],
    ["unknown format", { ...json, format: "sgx" }, /format must be/],
    ["missing format", { ...json, format: undefined }, /format must be/],
    ["unknown field", { ...json, extra: 1 }, /unknown field "extra"/],
    ["short nonce", { ...json, nonce: "0x" + "00".repeat(31) }, /"nonce" must be 32 bytes/],
    ["nonce without 0x", { ...json, nonce: "00".repeat(32) }, /"nonce" must be 0x-prefixed/],
    ["compressed key", { ...json, serving_public_key: "0x02" + "11".repeat(64) }, /uncompressed/],
    ["short key", { ...json, serving_public_key: "0x04" + "11".repeat(32) }, /65 bytes/],
    ["quote not hex", { ...json, quote: "0xzz" }, /"quote" is not hex/],
    ["empty quote", { ...json, quote: "0x" }, /"quote" is empty/],
    ["huge quote", { ...json, quote: "0x" + "00".repeat(64 * 1024 + 1) }, /longer than/],
    [
      "bad endorsement",
      { ...json, endorsement: { ...json.endorsement, signature: "0x12" } },
      /endorsement/,
    ],
    ["missing endorsement", { ...json, endorsement: undefined }, /endorsement/],
    ["bad collateral", { ...json, collateral: { pck_crl: "00" } }, /collateral/],
    ["snp without vcek", { ...snp, collateral: null }, /vcek/],
    ["snp with extra", { ...snp, collateral: { vcek: "0x30", other: 1 } }, /unknown field "other"/],
    ["snp vcek not hex", { ...snp, collateral: { vcek: "30" } }, /"vcek" must be 0x/],
    ["gpus not a list", { ...json, gpus: {} }, /"gpus" must be an array/],
    ["gpu not an object", { ...json, gpus: ["0x00"] }, /"gpus" entry 0 must be an object/],
    ["gpu extra field", { ...json, gpus: [{ ...gpu, arch: "hopper" }] }, /unknown field "arch"/],
    ["gpu report not hex", { ...json, gpus: [{ ...gpu, report: "zz" }] }, /"report"/],
    ["gpu chain missing", { ...json, gpus: [{ report: gpu.report }] }, /certificate_chain/],
    ["17 gpus", { ...json, gpus: Array(17).fill(gpu) }, /17 entries, at most 16/],
    ["gpu collateral", { ...json, gpu_collateral: { ocsp: "x", crls: [] } }, /GPU collateral/],
    ["models not a list", { ...json, models: "a/b" }, /"models" must be an array/],
    ["model extra field", { ...json, models: [{ ...model, size: 1 }] }, /unknown field "size"/],
    ["model id", { ...json, models: [{ ...model, id: 7 }] }, /"id" must be a string/],
    ["model digest", { ...json, models: [{ ...model, weights_digest: "0x00" }] }, /32 bytes/],
    ["models unsorted", { ...json, models: [{ ...model, id: "z/z" }, model] }, /sorted/],
    ["models duplicated", { ...json, models: [model, model] }, /sorted and unique/],
  ];
  for (const [label, value, message] of table) malformed(value, label, message);
});

Deno.test("fuzz: random JSON never throws anything but AttestationError", async () => {
  const { json } = await buildTdxBundle({ nonce, now });
  const values: unknown[] = [null, true, 0, -1, 1e308, "", "0x", [], {}, { format: null }];
  const keys = Object.keys(json);
  for (let i = 0; i < 400; i++) {
    const candidate: Record<string, unknown> = JSON.parse(JSON.stringify(json));
    const key = keys[i % keys.length];
    candidate[key] = values[i % values.length];
    if (i % 7 === 0) delete candidate[keys[(i + 3) % keys.length]];
    try {
      attestationBundleFromJson(candidate);
    } catch (error) {
      assert.ok(
        error instanceof AttestationError,
        `${key}=${JSON.stringify(candidate[key])}: ${error}`,
      );
    }
  }
  for (const value of values) {
    try {
      attestationBundleFromJson(value);
    } catch (error) {
      assert.ok(error instanceof AttestationError, String(error));
    }
  }
});
