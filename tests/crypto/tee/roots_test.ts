import assert from "node:assert/strict";
import { sha256 } from "@noble/hashes/sha2.js";
import { PINNED_ROOTS } from "../../../crypto/tee/mod.ts";
import {
  AMD_ARK_GENOA_PEM,
  AMD_ARK_MILAN_PEM,
  AMD_ARK_TURIN_PEM,
  AMD_ASK_GENOA_PEM,
  AMD_ASK_MILAN_PEM,
  AMD_ASK_TURIN_PEM,
  INTEL_SGX_ROOT_CA_PEM,
  INTEL_SGX_ROOT_CA_SHA256,
  NVIDIA_DEVICE_IDENTITY_CA_PEM,
  NVIDIA_DEVICE_IDENTITY_CA_SHA256,
} from "../../../crypto/tee/roots.ts";
import { readVectorBytes, readVectorJson, readVectorText, vectorTest } from "../../_vectors.ts";
import { hex, type Manifest } from "./_helpers.ts";

function derOf(pem: string): Uint8Array[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map(
    (match) => Uint8Array.from(atob(match[1].replace(/\s/g, "")), (c) => c.charCodeAt(0)),
  );
}

// The value tee.md pins, written out here independently of the library constant.
const PINNED_INTEL_ROOT_SHA256 = "44A0196B2B99F889B8E149E95B807A350E7424964399E885A7CBB8CCFAB674D3";

Deno.test("the embedded Intel SGX Root CA has the pinned SHA-256", () => {
  const [der] = derOf(INTEL_SGX_ROOT_CA_PEM);
  assert.equal(hex(sha256(der)), PINNED_INTEL_ROOT_SHA256.toLowerCase());
  assert.equal(INTEL_SGX_ROOT_CA_SHA256, PINNED_INTEL_ROOT_SHA256.toLowerCase());
  assert.deepEqual(PINNED_ROOTS.intel, [INTEL_SGX_ROOT_CA_PEM]);
});

vectorTest("the embedded Intel root equals the vector file and the manifest's hash", () => {
  const [der] = derOf(INTEL_SGX_ROOT_CA_PEM);
  assert.deepEqual(der, readVectorBytes("tee/roots/intel-sgx-root-ca.der"));
  assert.equal(
    hex(sha256(der)),
    readVectorJson<Manifest>("tee/manifest.json").intel_sgx_root_ca_sha256,
  );
});

vectorTest("the embedded AMD ARKs and ASKs equal the vector files", () => {
  const table: [string, string, string][] = [
    ["milan", AMD_ASK_MILAN_PEM, AMD_ARK_MILAN_PEM],
    ["genoa", AMD_ASK_GENOA_PEM, AMD_ARK_GENOA_PEM],
    ["turin", AMD_ASK_TURIN_PEM, AMD_ARK_TURIN_PEM],
  ];
  for (const [product, ask, ark] of table) {
    const [askFile, arkFile] = derOf(readVectorText(`tee/snp/ask-ark-${product}.pem`));
    assert.deepEqual(derOf(ask), [askFile], `${product} ASK`);
    assert.deepEqual(derOf(ark), [arkFile], `${product} ARK`);
  }
  assert.deepEqual(PINNED_ROOTS.amd.map((entry) => entry.product), ["Milan", "Genoa", "Turin"]);
});

vectorTest("the embedded NVIDIA root is the one that ends every real H100 chain", () => {
  const [der] = derOf(NVIDIA_DEVICE_IDENTITY_CA_PEM);
  assert.equal(hex(sha256(der)), NVIDIA_DEVICE_IDENTITY_CA_SHA256);
  for (const file of ["hopper_cert_chain_case1.txt", "hopper_coco_certs1.txt"]) {
    assert.deepEqual(derOf(readVectorText(`tee/nvidia/${file}`)).at(-1), der, file);
  }
  assert.deepEqual(PINNED_ROOTS.nvidia, [NVIDIA_DEVICE_IDENTITY_CA_PEM]);
});

Deno.test("the pinned roots cannot be modified at run time", () => {
  assert.ok(Object.isFrozen(PINNED_ROOTS));
  assert.ok(Object.isFrozen(PINNED_ROOTS.intel));
  assert.ok(Object.isFrozen(PINNED_ROOTS.amd));
  assert.ok(Object.isFrozen(PINNED_ROOTS.nvidia));
  assert.throws(() => (PINNED_ROOTS.intel as string[]).push("x"));
});
