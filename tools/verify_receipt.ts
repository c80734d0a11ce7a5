/**
 * `deno task verify-receipt <file>`: re-verifies, offline, a TEE reply's receipt record as the
 * daemon serves it at `GET /v1/verdicts/{id}` (`docs/protocol.md` §8). The attestation it names
 * is verified again at the time the daemon verified it, down to the pinned Intel, AMD and
 * NVIDIA roots; the receipt must be signed by the serving key that attestation bound and name
 * its evidence and the model's attested weights. Prints what was established; exits 1 with the
 * reason when anything fails.
 *
 * ```sh
 * curl -s http://127.0.0.1:11435/v1/verdicts/r0123… > receipt.json
 * deno task verify-receipt receipt.json
 * deno task verify-receipt receipt.json --measurements approved.json   # judge by your own set
 * ```
 *
 * `--roots <file>` replaces the pinned roots with the ones in the file
 * (`{"intel":[PEM…],"amd":[{"product","ark","ask"}],"nvidia":[PEM…]}`): for records of the
 * devnet's synthetic evidence only; no real receipt verifies under test roots.
 *
 * @module
 */

import { bytesToHex } from "viem";
import { defineSettings, text } from "../settings/mod.ts";
import {
  ApprovedMeasurements,
  receiptRecordFromJson,
  type ReceiptVerification,
  type TrustRoots,
  verifyReceiptRecord,
} from "../crypto/tee/mod.ts";

const SETTINGS = defineSettings({
  usage: "Usage: deno task verify-receipt <receipt.json> [options]",
  summary: "Re-verifies a TEE reply's receipt record offline, down to the vendors' roots.",
}, {
  measurements: {
    flag: "measurements",
    kind: text("<file>"),
    help: 'Judge the attestation by this approved set ({"measurements":["0x…"]}) instead ' +
      "of the ids the record says the daemon approved.",
  },
  roots: {
    flag: "roots",
    kind: text("<file>"),
    help: "Trust these roots instead of the pinned ones (test roots of the devnet only).",
  },
});

/** Options of {@linkcode verifyReceiptFile}. */
export interface VerifyReceiptFileOptions {
  /** A measurements file to judge the attestation by. @default {the record's ids} */
  measurements?: string;
  /** A roots file. @default {the pinned roots} */
  roots?: string;
}

/**
 * Reads and re-verifies a receipt record file; returns the lines to print.
 *
 * @throws {ReceiptError | AttestationError} when it does not verify; other errors for a file
 * that cannot be read or is not JSON.
 */
export async function verifyReceiptFile(
  path: string,
  options: VerifyReceiptFileOptions = {},
): Promise<string[]> {
  const record = receiptRecordFromJson(JSON.parse(await Deno.readTextFile(path)));
  const verified = await verifyReceiptRecord(record, {
    approved: options.measurements
      ? await ApprovedMeasurements.fromFile(options.measurements)
      : undefined,
    roots: options.roots ? rootsFromJson(await Deno.readTextFile(options.roots)) : undefined,
  });
  return describe(record.provider, verified, record.receipt);
}

function describe(
  provider: string,
  { verdict, signer }: ReceiptVerification,
  receipt: ReturnType<typeof receiptRecordFromJson>["receipt"],
): string[] {
  return [
    `receipt verified: provider ${provider}, signed by its attested serving key ${signer}`,
    `  enclave: ${verdict.format} measurement ${verdict.measurementId} approved, TCB ${verdict.tcbStatus}`,
    ...verdict.gpus.map((gpu, i) =>
      `  GPU #${i}: ${gpu.signer}, driver ${gpu.driverVersion}, VBIOS ${gpu.vbiosVersion}, ` +
      `measurement ${gpu.measurementId} approved, revocation ${gpu.revocation}`
    ),
    `  model: ${receipt.model}, weights ${bytesToHex(receipt.weightsDigest)} attested`,
    `  request ${bytesToHex(receipt.requestDigest)}, reply ${bytesToHex(receipt.replyDigest)}, ` +
    `status ${receipt.status}`,
    `  usage: ${receipt.usage.promptTokens} prompt + ${receipt.usage.completionTokens} ` +
    "completion tokens",
  ];
}

/** Reads a roots file. */
function rootsFromJson(text: string): TrustRoots {
  const value = JSON.parse(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError('the roots file must be {"intel":[…],"amd":[…],"nvidia":[…]}');
  }
  return { intel: value.intel ?? [], amd: value.amd ?? [], nvidia: value.nvidia ?? [] };
}

async function main(): Promise<number> {
  const [file, ...rest] = Deno.args;
  const parsed = SETTINGS.parse(file?.startsWith("-") ? Deno.args : rest, {});
  if (parsed.help) {
    console.log(parsed.text);
    return 0;
  }
  if (!file || file.startsWith("-")) {
    console.error(`${SETTINGS.help()}\nCannot verify: name the receipt record file.`);
    return 2;
  }
  try {
    for (const line of await verifyReceiptFile(file, parsed.values)) console.log(line);
    return 0;
  } catch (error) {
    console.error(`receipt NOT verified: ${error instanceof Error ? error.message : error}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main());
