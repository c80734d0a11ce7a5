/**
 * `deno task verify-receipt <file>` as a user runs it: a process with read permission only (no
 * network), exit 0 and what was established for a record that verifies, exit 1 and the reason
 * for one that does not.
 */

import assert from "node:assert/strict";
import { sha256 } from "@noble/hashes/sha2.js";
import { hexToBytes } from "viem";
import { signReceipt } from "../../crypto/receipt.ts";
import {
  ApprovedMeasurements,
  NonceBook,
  receiptRecordToJson,
  verifyAttestation,
} from "../../crypto/tee/mod.ts";
import { buildTdxBundle } from "../crypto/tee/_synthetic_bundle.ts";
import { pem } from "../crypto/tee/_synthetic.ts";

const TOOL = new URL("../../tools/verify_receipt.ts", import.meta.url).pathname;

async function run(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", TOOL, ...args],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("verify-receipt: a saved record verifies offline; a tampered one exits 1", async () => {
  const now = new Date();
  const model = { id: "devnet/echo", weightsDigest: new Uint8Array(32).fill(7) };
  const nonces = new NonceBook();
  const nonce = nonces.issue(now);
  const built = await buildTdxBundle({ nonce, now, models: [model] });
  const verdict = await verifyAttestation(built.bundle, {
    nonce,
    nonces,
    now,
    roots: built.roots,
    approved: ApprovedMeasurements.fromList(built.approvedIds),
  });
  const receipt = await signReceipt(built.servingKey, {
    nonce,
    requestDigest: sha256(new Uint8Array([1])),
    replyDigest: sha256(new Uint8Array([2])),
    status: 200,
    model: model.id,
    weightsDigest: model.weightsDigest,
    evidence: {
      quote: hexToBytes(verdict.digests.quote),
      gpus: verdict.digests.gpus.map((digest) => hexToBytes(digest)),
      bound: hexToBytes(verdict.digests.evidence),
    },
    usage: { promptTokens: 3, completionTokens: 4 },
  });
  const record = receiptRecordToJson({
    provider: `0x${"aa".repeat(20)}`,
    verifiedAt: now,
    measurements: built.approvedIds,
    attestation: built.bundle,
    receipt,
  });
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/receipt.json`;
    const roots = `${dir}/roots.json`;
    await Deno.writeTextFile(file, JSON.stringify(record));
    await Deno.writeTextFile(
      roots,
      JSON.stringify({
        intel: built.roots.intel.map((der) => pem(der as Uint8Array)),
        nvidia: built.roots.nvidia!.map((der) => pem(der as Uint8Array)),
      }),
    );
    const ok = await run(file, "--roots", roots);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^receipt verified: provider 0xaaaa/);
    assert.match(ok.stdout, /usage: 3 prompt \+ 4 completion tokens/);
    // Under the pinned roots, synthetic evidence does not verify.
    const pinned = await run(file);
    assert.equal(pinned.code, 1);
    assert.match(pinned.stderr, /^receipt NOT verified: Cannot verify attestation/);
    // A receipt that claims other usage no longer recovers to the attested key.
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        ...record,
        receipt: { ...record.receipt, usage: { prompt_tokens: 3, completion_tokens: 40 } },
      }),
    );
    const tampered = await run(file, "--roots", roots);
    assert.equal(tampered.code, 1);
    assert.match(tampered.stderr, /receipt NOT verified: Cannot accept receipt: it is signed by/);
    const usage = await run();
    assert.equal(usage.code, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
