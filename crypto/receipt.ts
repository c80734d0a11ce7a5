/**
 * Reply receipts of the TEE tier (`docs/protocol.md` §8): the provider's attested serving key
 * signs, for every reply, what it answered, to which request, with which model weights, under
 * which attestation evidence, and how many tokens it counted. The daemon checks the receipt
 * before the reply completes and keeps it; anyone holding it and the attestation bundle can
 * re-check it offline (`crypto/tee/verify_receipt.ts`).
 *
 * Signed message (bytes), signed as an EIP-191 personal message like the key endorsement:
 *
 * ```
 * "net-consumer/receipt/v1"   ASCII, 23 bytes
 * 0x00
 * nonce                       32 bytes: the daemon's attestation nonce for this request
 * request_digest              32 bytes: SHA-256 of the inner request's content
 * reply_digest                32 bytes: SHA-256 of the inner response's content
 * status                      u16 BE: the inner response's status
 * model_length u8 ‖ model     the model id, ASCII
 * weights_digest              32 bytes
 * quote_digest                32 bytes: SHA-256 of the bundle's CPU quote
 * gpu_count u8 ‖ gpu_digest…  32 bytes each: SHA-256 of each GPU report, in bundle order
 * evidence_digest             32 bytes: the digest the quote's report data binds
 * prompt_tokens               u32 BE
 * completion_tokens           u32 BE
 * ```
 *
 * @example Sign a receipt and recover its signer
 * ```ts
 * import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
 * import { receiptSigner, signReceipt } from "@net/consumer/receipt";
 *
 * const key = privateKeyToAccount(generatePrivateKey());
 * const zero = new Uint8Array(32);
 * const receipt = await signReceipt(key, {
 *   nonce: zero, requestDigest: zero, replyDigest: zero, status: 200,
 *   model: "devnet/echo", weightsDigest: zero,
 *   evidence: { quote: zero, gpus: [], bound: zero },
 *   usage: { promptTokens: 3, completionTokens: 5 },
 * });
 * console.assert(await receiptSigner(receipt) === key.address.toLowerCase());
 * ```
 *
 * @module
 */

import { type Address, bytesToHex, type Hex, hexToBytes, isHex, recoverMessageAddress } from "viem";
import { ReasonError } from "../errors.ts";
import { concat } from "./_bytes.ts";

/** ASCII domain tag that starts every receipt message. */
export const RECEIPT_DOMAIN = "net-consumer/receipt/v1";
/**
 * The inner request's header that names the attestation the request was sealed under: the
 * daemon's nonce as 64 hex digits.
 */
export const ATTESTATION_NONCE_HEADER = "net-attestation-nonce";
/** The inner response's trailer that carries the receipt's JSON text. */
export const RECEIPT_TRAILER = "net-receipt";

const DIGEST = 32;
const encoder = new TextEncoder();

/** The evidence digests a receipt names. */
export interface ReceiptEvidence {
  /** SHA-256 of the CPU quote. */
  readonly quote: Uint8Array;
  /** SHA-256 of each GPU report, in bundle order. */
  readonly gpus: readonly Uint8Array[];
  /** The evidence digest the report data binds. */
  readonly bound: Uint8Array;
}

/** What a receipt signs. */
export interface ReceiptFields {
  /** The daemon's 32-byte attestation nonce for this request. */
  readonly nonce: Uint8Array;
  /** SHA-256 of the inner request's content. */
  readonly requestDigest: Uint8Array;
  /** SHA-256 of the inner response's content. */
  readonly replyDigest: Uint8Array;
  /** The inner response's status. */
  readonly status: number;
  /** The model id (ASCII, 1 to 255 characters). */
  readonly model: string;
  /** The model's weights digest, as attested. */
  readonly weightsDigest: Uint8Array;
  /** The attestation evidence. */
  readonly evidence: ReceiptEvidence;
  /** The tokens the provider counted. */
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
}

/** A signed receipt. */
export interface Receipt extends ReceiptFields {
  /** 65-byte EIP-191 signature `r ‖ s ‖ v`. */
  readonly signature: Hex;
}

/** The JSON form of a receipt. */
export interface ReceiptJson {
  /** `1`. */
  version: 1;
  /** `0x` + 32 bytes. */
  nonce: string;
  /** `0x` + 32 bytes. */
  request_digest: string;
  /** `0x` + 32 bytes. */
  reply_digest: string;
  /** The inner response's status. */
  status: number;
  /** The model id. */
  model: string;
  /** `0x` + 32 bytes. */
  weights_digest: string;
  /** The evidence digests, `0x` + 32 bytes each. */
  evidence: { quote: string; gpus: string[]; bound: string };
  /** The tokens counted. */
  usage: { prompt_tokens: number; completion_tokens: number };
  /** `0x` + 65 bytes. */
  signature: string;
}

/**
 * Why a receipt was refused: it does not parse (`malformed`), its signature does not recover
 * (`bad_signature`), or it does not say what the reply and its verdict say (`mismatch`).
 */
export type ReceiptFailure = "malformed" | "bad_signature" | "mismatch";

/** Thrown when a receipt cannot be built, parsed or its signature recovered. */
export class ReceiptError extends ReasonError<ReceiptFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ReceiptError" as const;
}

function malformed(message: string): never {
  throw new ReceiptError("malformed", `Cannot read receipt: ${message}`);
}

function u32(value: number, what: string): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    malformed(`${what} must be an integer from 0 to 4294967295, found ${value}`);
  }
  return Uint8Array.of(value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff);
}

function digest(value: Uint8Array, what: string): Uint8Array {
  if (!(value instanceof Uint8Array) || value.length !== DIGEST) {
    malformed(`${what} must be ${DIGEST} bytes`);
  }
  return value;
}

/**
 * The exact bytes a receipt signs.
 *
 * @throws {ReceiptError} `malformed` when a field has the wrong size or range.
 */
export function receiptMessage(fields: ReceiptFields): Uint8Array {
  if (typeof fields.model !== "string" || !/^[\x21-\x7e]{1,255}$/.test(fields.model)) {
    malformed("the model id must be 1 to 255 printable ASCII characters");
  }
  if (!Number.isInteger(fields.status) || fields.status < 100 || fields.status > 599) {
    malformed(`the status must be 100 to 599, found ${fields.status}`);
  }
  if (fields.evidence.gpus.length > 255) malformed("more than 255 GPU digests");
  const model = encoder.encode(fields.model);
  return concat(
    encoder.encode(RECEIPT_DOMAIN),
    Uint8Array.of(0),
    digest(fields.nonce, "the nonce"),
    digest(fields.requestDigest, "the request digest"),
    digest(fields.replyDigest, "the reply digest"),
    Uint8Array.of(fields.status >>> 8, fields.status & 0xff),
    Uint8Array.of(model.length),
    model,
    digest(fields.weightsDigest, "the weights digest"),
    digest(fields.evidence.quote, "the quote digest"),
    Uint8Array.of(fields.evidence.gpus.length),
    ...fields.evidence.gpus.map((gpu, i) => digest(gpu, `GPU digest ${i}`)),
    digest(fields.evidence.bound, "the evidence digest"),
    u32(fields.usage.promptTokens, "prompt_tokens"),
    u32(fields.usage.completionTokens, "completion_tokens"),
  );
}

/** Something that signs an EIP-191 message (a viem local account). */
export interface ReceiptSigningKey {
  /** Signs `message.raw` as an EIP-191 personal message. */
  signMessage(args: { message: { raw: Uint8Array } }): Promise<Hex>;
}

/**
 * Signs a receipt with the serving key.
 *
 * @throws {ReceiptError} `malformed` when a field has the wrong size or range.
 */
export async function signReceipt(key: ReceiptSigningKey, fields: ReceiptFields): Promise<Receipt> {
  const raw = receiptMessage(fields);
  return { ...fields, signature: await key.signMessage({ message: { raw } }) };
}

/**
 * The address of the key that signed the receipt, lower case.
 *
 * @throws {ReceiptError} `malformed` (a field), `bad_signature` (does not recover).
 */
export async function receiptSigner(receipt: Receipt): Promise<Address> {
  const raw = receiptMessage(receipt);
  try {
    const signer = await recoverMessageAddress({ message: { raw }, signature: receipt.signature });
    return signer.toLowerCase() as Address;
  } catch (cause) {
    throw new ReceiptError(
      "bad_signature",
      "Cannot verify receipt: the signature does not recover to a public key",
      { cause },
    );
  }
}

/** Converts a receipt to its JSON form. */
export function receiptToJson(receipt: Receipt): ReceiptJson {
  return {
    version: 1,
    nonce: bytesToHex(receipt.nonce),
    request_digest: bytesToHex(receipt.requestDigest),
    reply_digest: bytesToHex(receipt.replyDigest),
    status: receipt.status,
    model: receipt.model,
    weights_digest: bytesToHex(receipt.weightsDigest),
    evidence: {
      quote: bytesToHex(receipt.evidence.quote),
      gpus: receipt.evidence.gpus.map((gpu) => bytesToHex(gpu)),
      bound: bytesToHex(receipt.evidence.bound),
    },
    usage: {
      prompt_tokens: receipt.usage.promptTokens,
      completion_tokens: receipt.usage.completionTokens,
    },
    signature: receipt.signature.toLowerCase(),
  };
}

const FIELDS = [
  "version",
  "nonce",
  "request_digest",
  "reply_digest",
  "status",
  "model",
  "weights_digest",
  "evidence",
  "usage",
  "signature",
];

function object(value: unknown, what: string, fields: string[]): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return malformed(`${what} must be an object`);
  }
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) malformed(`${what} has an unknown field "${key}"`);
  }
  return value as Record<string, unknown>;
}

function bytes(value: unknown, what: string, length: number): Uint8Array {
  if (typeof value !== "string" || !isHex(value) || value.length !== 2 + 2 * length) {
    return malformed(`${what} must be 0x and ${length} bytes of hex`);
  }
  return hexToBytes(value);
}

/**
 * Parses the JSON form of a receipt. Unknown fields are refused.
 *
 * @throws {ReceiptError} `malformed`, naming the field.
 */
export function receiptFromJson(value: unknown): Receipt {
  const record = object(value, "the receipt", FIELDS);
  if (record.version !== 1) malformed(`version must be 1, found ${JSON.stringify(record.version)}`);
  const evidence = object(record.evidence, "evidence", ["quote", "gpus", "bound"]);
  const usage = object(record.usage, "usage", ["prompt_tokens", "completion_tokens"]);
  if (!Array.isArray(evidence.gpus)) malformed(`evidence.gpus must be an array`);
  if (typeof record.model !== "string") malformed(`model must be a string`);
  const fields: ReceiptFields = {
    nonce: bytes(record.nonce, "nonce", DIGEST),
    requestDigest: bytes(record.request_digest, "request_digest", DIGEST),
    replyDigest: bytes(record.reply_digest, "reply_digest", DIGEST),
    status: record.status as number,
    model: record.model as string,
    weightsDigest: bytes(record.weights_digest, "weights_digest", DIGEST),
    evidence: {
      quote: bytes(evidence.quote, "evidence.quote", DIGEST),
      gpus: (evidence.gpus as unknown[]).map((gpu, i) => bytes(gpu, `evidence.gpus[${i}]`, DIGEST)),
      bound: bytes(evidence.bound, "evidence.bound", DIGEST),
    },
    usage: {
      promptTokens: usage.prompt_tokens as number,
      completionTokens: usage.completion_tokens as number,
    },
  };
  receiptMessage(fields); // every size and range
  return { ...fields, signature: bytesToHex(bytes(record.signature, "signature", 65)) };
}
