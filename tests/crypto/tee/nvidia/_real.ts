/**
 * The real NVIDIA H100 vectors of `../shared/vectors/tee/nvidia/` and the facts their
 * `PROVENANCE.md` and claims file give.
 *
 * @module
 */

import { readVectorText } from "../../../_vectors.ts";

/** The two real H100 reports, their chains and the nonces `PROVENANCE.md` gives. */
export const REAL_REPORTS = [
  {
    report: "tee/nvidia/hopperAttestationReport.txt",
    chain: "tee/nvidia/hopper_cert_chain_case1.txt",
    nonce: "931d8dd0add203ac3d8b4fbde75e115278eefcdceac5b87671a748f32364dfcb",
    driver: "550.90.07",
    vbios: "96.00.9f.00.01",
    fwid:
      "f5c384aebb579217a2c66b17ed0f28e6a9b8d639041acd7b4721cec004f7275494ba94bb5cdfdb3055ee051762b1f75d",
  },
  {
    report: "tee/nvidia/hopper_coco_report1.txt",
    chain: "tee/nvidia/hopper_coco_certs1.txt",
    nonce: "87d8e24ab336adafe228d49e83d745f6dba4ae505372b6a5704820856b343fec",
    driver: "580.95.05",
    vbios: "96.00.74.00.1a",
    fwid:
      "f1ae7d0093a3f5689cced58045c9744f94eb2aa4ddca88135197fb41a7be45576c2881cf920e2cbcc090b1cb921f7b2d",
  },
] as const;

/** The bytes of a hex vector file. */
export function readHexVector(relative: string): Uint8Array {
  const text = readVectorText(relative).trim();
  return Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}
