import assert from "node:assert/strict";
import { parseTdxQuote, QuoteParseError } from "../../../crypto/tee/mod.ts";
import { readVectorBytes, readVectorJson, vectorTest } from "../../_vectors.ts";
import { hex, type Manifest } from "./_helpers.ts";
import { buildTdxQuote, createTestIntelPki } from "./_synthetic.ts";

const now = new Date("2026-11-22T12:00:00Z");

function tdxCases() {
  return readVectorJson<Manifest>("tee/manifest.json").cases.filter((c) => c.kind === "tdx");
}

vectorTest("TDX parser reproduces the manifest's facts for every vector", () => {
  for (const c of tdxCases()) {
    const bytes = readVectorBytes(`tee/${c.file}`);
    assert.equal(bytes.length, c.size, c.file);
    if (c.tail === "nonzero") {
      assert.throws(
        () => parseTdxQuote(bytes),
        (error: unknown) =>
          error instanceof QuoteParseError && /trailing data/.test(error.message) &&
          error.offset === c.declared_length,
        c.file,
      );
      // Within its declared length it parses and has the documented facts.
      checkFacts(parseTdxQuote(bytes.subarray(0, c.declared_length)), c);
      continue;
    }
    checkFacts(parseTdxQuote(bytes), c);
  }
});

function checkFacts(quote: ReturnType<typeof parseTdxQuote>, c: Manifest["cases"][number]) {
  assert.equal(quote.header.version, c.version, c.file);
  assert.equal(quote.body.bodyType, c.body_type, c.file);
  assert.equal(quote.raw.length, c.declared_length, c.file);
  assert.equal(hex(quote.body.mrTd), c.mrtd, c.file);
  assert.equal(hex(quote.body.reportData), c.report_data, c.file);
  assert.equal(hex(quote.body.tdAttributes), c.td_attributes, c.file);
  if (c.mr_service_td) assert.equal(hex(quote.body.mrServiceTd!), c.mr_service_td, c.file);
  else assert.equal(quote.body.mrServiceTd, null, c.file);
  assert.equal(quote.signedRegion.length, c.version === 4 ? 632 : c.body_type === 2 ? 638 : 702);
  assert.match(quote.pckChainPem, /^-----BEGIN CERTIFICATE-----/);
  assert.equal(quote.qeReport.raw.length, 384);
}

vectorTest("a zero-padded buffer is stripped to its declared length", () => {
  for (const c of tdxCases().filter((c) => c.tail === "zeros")) {
    const bytes = readVectorBytes(`tee/${c.file}`);
    const quote = parseTdxQuote(bytes);
    assert.equal(quote.bufferLength, bytes.length);
    assert.equal(quote.raw.length, c.declared_length);
    // One non-zero byte anywhere in the tail is refused.
    for (const at of [c.declared_length!, bytes.length - 1]) {
      const dirty = bytes.slice();
      dirty[at] = 1;
      assert.throws(() => parseTdxQuote(dirty), QuoteParseError, `${c.file} @${at}`);
    }
  }
});

Deno.test("synthetic v4, v5 TD 1.0 and v5 TD 1.5 quotes parse with the right layout", async () => {
  const pki = await createTestIntelPki({ now });
  const reportData = Uint8Array.from({ length: 64 }, (_, i) => i);
  for (
    const [version, bodyType, signed] of [[4, 2, 632], [5, 2, 638], [5, 3, 702]] as const
  ) {
    const bytes = await buildTdxQuote(pki, { reportData, version, bodyType });
    const quote = parseTdxQuote(bytes);
    assert.equal(quote.header.version, version);
    assert.equal(quote.body.bodyType, bodyType);
    assert.equal(quote.signedRegion.length, signed);
    assert.deepEqual(quote.body.reportData, reportData);
    assert.equal(quote.body.mrServiceTd === null, bodyType === 2);
    assert.equal(quote.pckChainPem, pki.pckChainPem);
  }
});

Deno.test("structural errors name what is wrong", async () => {
  const pki = await createTestIntelPki({ now });
  const good = await buildTdxQuote(pki, { reportData: new Uint8Array(64), version: 5 });
  const view = (bytes: Uint8Array) => new DataView(bytes.buffer);
  const cases: [string, (b: Uint8Array) => void, RegExp][] = [
    ["version 3", (b) => view(b).setUint16(0, 3, true), /version 3 is not supported/],
    ["key type 3", (b) => view(b).setUint16(2, 3, true), /attestation key type 3/],
    ["SGX TEE type", (b) => view(b).setUint32(4, 0, true), /TEE type 0x0 is not TDX/],
    ["body type 1", (b) => view(b).setUint16(48, 1, true), /body type 1 is not supported/],
    ["body size", (b) => view(b).setUint32(50, 584, true), /body size 584 does not match/],
    ["signature length", (b) => view(b).setUint32(702, 10, true), /signature data length says/],
    [
      "cert data type",
      (b) => view(b).setUint16(702 + 4 + 128, 5, true),
      /certification data type 5/,
    ],
    [
      "cert data size",
      (b) => view(b).setUint32(702 + 4 + 130, 10, true),
      /certification data size says/,
    ],
    ["auth size", (b) => view(b).setUint16(702 + 4 + 134 + 448, 0xffff, true), /needs 65535 bytes/],
  ];
  for (const [label, mutate, message] of cases) {
    const bytes = good.slice();
    mutate(bytes);
    assert.throws(
      () => parseTdxQuote(bytes),
      (error: unknown) => error instanceof QuoteParseError && message.test(error.message),
      label,
    );
  }
});

function parseOnlyThrowsParseErrors(bytes: Uint8Array, label: string) {
  try {
    parseTdxQuote(bytes);
  } catch (error) {
    assert.ok(error instanceof QuoteParseError, `${label}: threw ${error}`);
  }
}

vectorTest("fuzz: truncations and byte mutations of real quotes throw only QuoteParseError", () => {
  let seed = 0x2545f491;
  const random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x100000000;
  };
  for (const c of tdxCases()) {
    const bytes = readVectorBytes(`tee/${c.file}`);
    for (let length = 0; length < bytes.length; length += 7) {
      parseOnlyThrowsParseErrors(bytes.subarray(0, length), `${c.file} truncated to ${length}`);
    }
    for (let i = 0; i < 300; i++) {
      const mutated = bytes.slice();
      const count = 1 + Math.floor(random() * 4);
      for (let k = 0; k < count; k++) {
        // Bias towards the header and the length fields, where structure lives.
        const at = random() < 0.5
          ? Math.floor(random() * 1300)
          : Math.floor(random() * mutated.length);
        mutated[at] = Math.floor(random() * 256);
      }
      parseOnlyThrowsParseErrors(mutated, `${c.file} mutation ${i}`);
    }
  }
});

Deno.test("fuzz: random buffers throw only QuoteParseError", () => {
  for (let i = 0; i < 500; i++) {
    const length = Math.floor(Math.random() * 6000);
    const bytes = crypto.getRandomValues(new Uint8Array(length));
    // Make some of them look like a quote header so parsing goes deeper.
    if (i % 2 === 0 && length >= 8) {
      new DataView(bytes.buffer).setUint16(0, 4 + (i % 4 === 0 ? 1 : 0), true);
      new DataView(bytes.buffer).setUint16(2, 2, true);
      new DataView(bytes.buffer).setUint32(4, 0x81, true);
    }
    parseOnlyThrowsParseErrors(bytes, `random ${i}`);
  }
  assert.throws(() => parseTdxQuote("nope" as unknown as Uint8Array), QuoteParseError);
});
