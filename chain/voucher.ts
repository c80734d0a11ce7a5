/**
 * Vouchers: how a consumer pays a provider (`docs/protocol.md` §9, `docs/contracts.md`).
 *
 * A voucher is EIP-712 typed data of the Escrow's domain (`name` "net-consumer Escrow",
 * `version` "1", the chain id, the Escrow's address):
 *
 * ```
 * Voucher(address consumer,address provider,uint256 cumulative,uint64 seq)
 * ```
 *
 * signed by the consumer's key: the provider may be paid up to `cumulative` in total by the
 * consumer; `seq` numbers the consumer's vouchers to that provider. The Escrow pays a provider
 * at most what a voucher it holds allows, and never the same part twice.
 *
 * - {@linkcode voucherDigest}: the 32 bytes signed (the Escrow's `hashVoucher`).
 * - {@linkcode VoucherSigner}: signs vouchers with a consumer key.
 * - {@linkcode VoucherVerifier}: checks a voucher's signature as the Escrow's `ecrecover` will
 *   (65 bytes, low `s`, `v` 27 or 28), fast for consumers it has seen before.
 * - {@linkcode voucherToJson}, {@linkcode parseVoucher}: the JSON form carried in a sealed
 *   request's `net-voucher` header.
 *
 * @example Sign and verify
 * ```ts
 * import { parseVoucher, VoucherSigner, voucherToJson, VoucherVerifier } from "./voucher.ts";
 *
 * const domain = { chainId: 31337, escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9" } as const;
 * const signer = new VoucherSigner(`0x${"11".repeat(32)}`, domain);
 * const signed = signer.sign({
 *   provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
 *   cumulative: 1_000n,
 *   seq: 1n,
 * });
 * const header = JSON.stringify(voucherToJson(signed));
 * const verified = new VoucherVerifier(domain).verify(parseVoucher(header));
 * console.assert(verified.consumer === signer.address);
 * ```
 *
 * @module
 */

import { secp256k1 } from "@noble/curves/secp256k1.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import type { Address, Hex } from "viem";
import { abbreviate } from "../errors.ts";
import { VoucherError } from "./errors.ts";
import { PreparedNonces, useBaseTable } from "./voucher_nonces.ts";

/** The Escrow a voucher is for: the EIP-712 domain's chain id and verifying contract. */
export interface VoucherDomain {
  /** The chain id. */
  readonly chainId: number | bigint;
  /** The Escrow's address. */
  readonly escrow: Address;
}

/** What a consumer signs. */
export interface Voucher {
  /** The consumer paying (lower case). */
  readonly consumer: Address;
  /** The provider paid (lower case). */
  readonly provider: Address;
  /** Most the provider may be paid in total by the consumer, in the chain's smallest unit. */
  readonly cumulative: bigint;
  /** The voucher's number among the consumer's vouchers to this provider (from 1). */
  readonly seq: bigint;
}

/** A voucher and the consumer's signature of it. */
export interface SignedVoucher extends Voucher {
  /** 65 bytes, `r ‖ s ‖ v` with `v` 27 or 28 and a low `s` (lower-case hex). */
  readonly signature: Hex;
}

/** The JSON form of a {@linkcode SignedVoucher} (`docs/protocol.md` §9). */
export interface VoucherJson {
  /** The consumer, lower-case address. */
  consumer: string;
  /** The provider, lower-case address. */
  provider: string;
  /** Decimal string. */
  cumulative: string;
  /** Decimal string. */
  seq: string;
  /** `0x` and 130 hex digits. */
  signature: string;
}

/** The EIP-712 domain's name. */
export const VOUCHER_DOMAIN_NAME = "net-consumer Escrow";
/** The EIP-712 domain's version. */
export const VOUCHER_DOMAIN_VERSION = "1";
/** The voucher's EIP-712 types, as viem and wallets take them (`signTypedData`). */
export const VOUCHER_TYPES = {
  Voucher: [
    { name: "consumer", type: "address" },
    { name: "provider", type: "address" },
    { name: "cumulative", type: "uint256" },
    { name: "seq", type: "uint64" },
  ],
} as const;
/** The largest `seq` (uint64). */
export const MAX_VOUCHER_SEQ: bigint = (1n << 64n) - 1n;
/** The largest `cumulative` (uint256). */
export const MAX_VOUCHER_AMOUNT: bigint = (1n << 256n) - 1n;
/** Longest JSON text of a voucher that {@linkcode parseVoucher} reads. */
export const MAX_VOUCHER_JSON_BYTES = 1024;

const encoder = new TextEncoder();
const VOUCHER_TYPEHASH = keccak_256(
  encoder.encode("Voucher(address consumer,address provider,uint256 cumulative,uint64 seq)"),
);
const DOMAIN_TYPEHASH = keccak_256(
  encoder.encode(
    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)",
  ),
);
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const DECIMAL = /^(0|[1-9][0-9]{0,77})$/;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
const N = secp256k1.Point.Fn.ORDER;
const HALF_N = N >> 1n;
const Fn = secp256k1.Point.Fn;
/** The window of a cached consumer key's table (noble's wNAF): 33 × 128 points, ~0.9 MiB. */
const KEY_WINDOW = 8;

/** The EIP-712 domain separator of an Escrow. */
export function voucherDomainSeparator(domain: VoucherDomain): Uint8Array {
  checkDomain(domain);
  const out = new Uint8Array(160);
  out.set(DOMAIN_TYPEHASH, 0);
  out.set(keccak_256(encoder.encode(VOUCHER_DOMAIN_NAME)), 32);
  out.set(keccak_256(encoder.encode(VOUCHER_DOMAIN_VERSION)), 64);
  writeWord(out, 96, BigInt(domain.chainId));
  writeAddress(out, 128, domain.escrow);
  return keccak_256(out);
}

/** The EIP-712 digest of `voucher` (what the consumer signs; the Escrow's `hashVoucher`). */
export function voucherDigest(domain: VoucherDomain, voucher: Voucher): Hex {
  return toHex(digestWith(voucherDomainSeparator(domain), voucher));
}

function digestWith(separator: Uint8Array, voucher: Voucher): Uint8Array {
  const struct = new Uint8Array(160);
  struct.set(VOUCHER_TYPEHASH, 0);
  writeAddress(struct, 32, voucher.consumer);
  writeAddress(struct, 64, voucher.provider);
  writeWord(struct, 96, voucher.cumulative);
  writeWord(struct, 128, voucher.seq);
  const message = new Uint8Array(66);
  message[0] = 0x19;
  message[1] = 0x01;
  message.set(separator, 2);
  message.set(keccak_256(struct), 34);
  return keccak_256(message);
}

/** Options of {@linkcode VoucherSigner}. */
export interface VoucherSignerOptions {
  /**
   * Nonces to keep prepared (`voucher_nonces.ts`): a voucher is then signed with one in
   * microseconds, and the pool refilled in the background; 0 signs every voucher with RFC 6979.
   * A signer with a pool must be closed ({@linkcode VoucherSigner.close}). @default {0}
   */
  preparedNonces?: number;
}

/** Signs vouchers with one consumer key, for one Escrow. */
export class VoucherSigner {
  /** The consumer's address (lower case). */
  readonly address: Address;
  readonly #key: Uint8Array;
  readonly #separator: Uint8Array;
  readonly #nonces: PreparedNonces | undefined;

  /**
   * Creates a signer for the consumer key `privateKey` (32 bytes, `0x` hex).
   *
   * @throws {VoucherError} `malformed` for a key that is not a valid secp256k1 secret key.
   */
  constructor(privateKey: Hex, domain: VoucherDomain, options: VoucherSignerOptions = {}) {
    if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey)) {
      throw new VoucherError(
        "malformed",
        "Cannot use the consumer key: expected 0x and 64 hex digits (32 bytes)",
      );
    }
    const key = fromHex(privateKey);
    if (!secp256k1.utils.isValidSecretKey(key)) {
      throw new VoucherError("malformed", "Cannot use the consumer key: it is not in [1, n-1]");
    }
    this.#key = key;
    this.#separator = voucherDomainSeparator(domain);
    const publicKey = secp256k1.getPublicKey(key, false);
    this.address = addressOf(publicKey);
    const size = options.preparedNonces ?? 0;
    this.#nonces = size > 0 ? new PreparedNonces(key, { size }) : undefined;
  }

  /** The pool of prepared nonces, when the signer has one. */
  get nonces(): PreparedNonces | undefined {
    return this.#nonces;
  }

  /** Stops preparing nonces and drops those ready (a signer without a pool: nothing to do). */
  close(): void {
    this.#nonces?.close();
  }

  /**
   * Signs a voucher from this consumer, low `s`: with a prepared nonce when one is ready, else
   * with RFC 6979's deterministic one.
   *
   * @throws {VoucherError} `malformed` for an amount or number out of range.
   */
  sign(voucher: Omit<Voucher, "consumer">): SignedVoucher {
    const full: Voucher = {
      consumer: this.address,
      provider: voucher.provider.toLowerCase() as Address,
      cumulative: voucher.cumulative,
      seq: voucher.seq,
    };
    checkVoucher(full);
    const digest = digestWith(this.#separator, full);
    const recovered = this.#nonces?.sign(digest) ??
      secp256k1.sign(digest, this.#key, { prehash: false, lowS: true, format: "recovered" });
    // noble's recovered form is `recovery ‖ r ‖ s`; Ethereum's is `r ‖ s ‖ v`, v = 27 + recovery.
    const signature = new Uint8Array(65);
    signature.set(recovered.subarray(1), 0);
    signature[64] = 27 + recovered[0];
    return { ...full, signature: toHex(signature) };
  }
}

/** Options of {@linkcode VoucherVerifier}. */
export interface VoucherVerifierOptions {
  /**
   * Consumers whose public keys are kept (the most recently seen), each with a table of
   * multiples (a window of 8, ~0.9 MiB) that makes verifying its vouchers faster. @default {256}
   */
  cacheSize?: number;
}

type Point = InstanceType<typeof secp256k1.Point>;

/**
 * Checks voucher signatures for one Escrow exactly as the Escrow's `ecrecover` path does: the
 * signature is 65 bytes, its `s` is at most n/2 (EIP-2), its `v` is 27 or 28, and it recovers
 * the voucher's consumer. A consumer seen before is verified against its cached public key
 * (with precomputed tables), and the recovery id is checked too, so a signature accepted here
 * is one the Escrow accepts.
 */
export class VoucherVerifier {
  readonly #separator: Uint8Array;
  readonly #cacheSize: number;
  readonly #keys = new Map<string, Point>();

  /** Creates a verifier for the Escrow of `domain`. */
  constructor(domain: VoucherDomain, options: VoucherVerifierOptions = {}) {
    this.#separator = voucherDomainSeparator(domain);
    this.#cacheSize = options.cacheSize ?? 256;
    useBaseTable();
  }

  /**
   * Returns the voucher when its consumer signed it.
   *
   * @throws {VoucherError} `malformed` (a field out of range), `bad_signature` (not a valid
   * signature, or one by another key than the consumer's).
   */
  verify(voucher: SignedVoucher): SignedVoucher {
    checkVoucher(voucher);
    const signature = checkSignature(voucher.signature);
    const digest = digestWith(this.#separator, voucher);
    const consumer = voucher.consumer.toLowerCase();
    const cached = this.#keys.get(consumer);
    if (cached) {
      // Most recently used last: the least recently used consumer is the one forgotten.
      this.#keys.delete(consumer);
      this.#keys.set(consumer, cached);
    }
    const ok = cached
      ? verifyWithKey(cached, digest, signature)
      : this.#recoverAndRemember(consumer, digest, signature);
    if (!ok) {
      throw new VoucherError(
        "bad_signature",
        `Cannot accept the voucher: its signature is not by consumer ${consumer}`,
      );
    }
    return voucher;
  }

  #recoverAndRemember(consumer: string, digest: Uint8Array, signature: Uint8Array): boolean {
    const recovered = new Uint8Array(65);
    recovered[0] = signature[64] - 27;
    recovered.set(signature.subarray(0, 64), 1);
    let point: Point;
    try {
      point = secp256k1.Point.fromBytes(
        secp256k1.recoverPublicKey(recovered, digest, { prehash: false }),
      );
    } catch {
      return false;
    }
    if (addressOf(point.toBytes(false)) !== consumer) return false;
    if (this.#keys.size >= this.#cacheSize) this.#keys.delete(this.#keys.keys().next().value!);
    this.#keys.set(consumer, point);
    // Tables for this consumer's next vouchers: built lazily, by the next verification.
    point.precompute(KEY_WINDOW, true);
    return true;
  }
}

/**
 * ECDSA verification (SEC 1 §4.1.4) that also checks the recovery id: R = u1·G + u2·Q must have
 * x = r (so x < n: recovery ids 2 and 3 are never used) and the parity `v − 27` names.
 */
function verifyWithKey(key: Point, digest: Uint8Array, signature: Uint8Array): boolean {
  const r = readWord(signature, 0);
  const s = readWord(signature, 32);
  if (r === 0n || r >= N || s === 0n || s > HALF_N) return false;
  const w = Fn.inv(s);
  const e = Fn.create(readWord(digest, 0));
  const point = secp256k1.Point.BASE.multiplyUnsafe(Fn.mul(e, w)).add(
    key.multiplyUnsafe(Fn.mul(r, w)),
  );
  if (point.is0()) return false;
  const { x, y } = point.toAffine();
  return x === r && Number(y & 1n) === signature[64] - 27;
}

/** The signature's bytes, when it has the shape the Escrow takes; otherwise a refusal. */
function checkSignature(signature: Hex): Uint8Array {
  if (typeof signature !== "string" || !SIGNATURE.test(signature)) {
    throw new VoucherError(
      "bad_signature",
      `Cannot accept the voucher: its signature is ${
        JSON.stringify(abbreviate(String(signature), 20))
      }; expected 0x and 130 hex digits (65 bytes)`,
    );
  }
  const bytes = fromHex(signature);
  const v = bytes[64];
  if (v !== 27 && v !== 28) {
    throw new VoucherError(
      "bad_signature",
      `Cannot accept the voucher: its signature's v is ${v}; expected 27 or 28`,
    );
  }
  if (readWord(bytes, 32) > HALF_N) {
    throw new VoucherError(
      "bad_signature",
      "Cannot accept the voucher: its signature's s is above n/2 (EIP-2: a malleable signature)",
    );
  }
  return bytes;
}

/**
 * The bill id of a voucher (`docs/protocol.md` §9): the first 16 bytes of `keccak256` of its
 * 65-byte signature, as 32 lower-case hex digits. Only the consumer and the provider know it.
 */
export function billId(signature: Hex): string {
  return toHex(keccak_256(fromHex(signature)).subarray(0, 16)).slice(2);
}

/** The JSON form of a signed voucher. */
export function voucherToJson(voucher: SignedVoucher): VoucherJson {
  return {
    consumer: voucher.consumer.toLowerCase(),
    provider: voucher.provider.toLowerCase(),
    cumulative: voucher.cumulative.toString(),
    seq: voucher.seq.toString(),
    signature: voucher.signature.toLowerCase(),
  };
}

/**
 * Reads a voucher's JSON form (a string of at most 1 KiB, or the parsed value): exactly the
 * five fields of {@linkcode VoucherJson}, addresses and a 65-byte signature in hex, amounts as
 * decimal strings in range. It does not check the signature ({@linkcode VoucherVerifier} does).
 *
 * @throws {VoucherError} `malformed`, with what was found and what was expected.
 */
export function parseVoucher(input: unknown): SignedVoucher {
  let value = input;
  if (typeof input === "string") {
    if (encoder.encode(input).length > MAX_VOUCHER_JSON_BYTES) {
      throw malformed(`it is over ${MAX_VOUCHER_JSON_BYTES} bytes`);
    }
    try {
      value = JSON.parse(input);
    } catch {
      throw malformed("it is not JSON");
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw malformed("expected a JSON object");
  }
  const fields = value as Record<string, unknown>;
  const known = ["consumer", "provider", "cumulative", "seq", "signature"];
  const extra = Object.keys(fields).find((key) => !known.includes(key));
  if (extra !== undefined) throw malformed(`unknown field ${JSON.stringify(extra.slice(0, 40))}`);
  const text = (name: string, pattern: RegExp, expected: string): string => {
    const field = fields[name];
    if (typeof field !== "string" || !pattern.test(field)) {
      throw malformed(
        `${name} is ${JSON.stringify(abbreviate(String(field), 24))}; expected ${expected}`,
      );
    }
    return field;
  };
  const voucher: SignedVoucher = {
    consumer: text("consumer", ADDRESS, "an address").toLowerCase() as Address,
    provider: text("provider", ADDRESS, "an address").toLowerCase() as Address,
    cumulative: BigInt(text("cumulative", DECIMAL, "a decimal string")),
    seq: BigInt(text("seq", DECIMAL, "a decimal string")),
    signature: text("signature", SIGNATURE, "0x and 130 hex digits").toLowerCase() as Hex,
  };
  checkVoucher(voucher);
  return voucher;
}

function malformed(what: string): VoucherError {
  return new VoucherError("malformed", `Cannot read the voucher: ${what}`);
}

function checkVoucher(voucher: Voucher): void {
  for (const name of ["consumer", "provider"] as const) {
    if (typeof voucher[name] !== "string" || !ADDRESS.test(voucher[name])) {
      throw malformed(`${name} is not an address`);
    }
  }
  const { cumulative, seq } = voucher;
  if (typeof cumulative !== "bigint" || cumulative < 0n || cumulative > MAX_VOUCHER_AMOUNT) {
    throw malformed(`cumulative is ${cumulative}; expected an integer in [0, 2^256)`);
  }
  if (typeof seq !== "bigint" || seq < 1n || seq > MAX_VOUCHER_SEQ) {
    throw malformed(`seq is ${seq}; expected an integer in [1, 2^64)`);
  }
}

function checkDomain(domain: VoucherDomain): void {
  const chainId = BigInt(domain.chainId);
  if (chainId <= 0n || !ADDRESS.test(domain.escrow)) {
    throw new VoucherError(
      "malformed",
      `Cannot use the voucher domain: chain id ${chainId} and escrow ${
        JSON.stringify(abbreviate(String(domain.escrow), 44))
      }; expected a positive chain id and an address`,
    );
  }
}

/** The Ethereum address of an uncompressed public key (`0x04 ‖ x ‖ y`). */
function addressOf(publicKey: Uint8Array): Address {
  return toHex(keccak_256(publicKey.subarray(1)).subarray(12)) as Address;
}

function writeWord(out: Uint8Array, at: number, value: bigint): void {
  if (value < 0n || value > MAX_VOUCHER_AMOUNT) {
    throw new VoucherError("malformed", `Cannot encode ${value} as a uint256: out of range`);
  }
  out.set(hexToBytes(value.toString(16).padStart(64, "0")), at);
}

function writeAddress(out: Uint8Array, at: number, address: string): void {
  out.set(fromHex(address), at + 12);
}

/** The big-endian 256-bit integer at `at` (four 64-bit reads: no text on the way). */
function readWord(bytes: Uint8Array, at: number): bigint {
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, 32);
  return (view.getBigUint64(0) << 192n) | (view.getBigUint64(8) << 128n) |
    (view.getBigUint64(16) << 64n) | view.getBigUint64(24);
}

/** The bytes of `0x`-prefixed hex already checked (noble's, native where the runtime has it). */
function fromHex(hex: string): Uint8Array {
  return hexToBytes(hex.slice(2));
}

function toHex(bytes: Uint8Array): Hex {
  return `0x${bytesToHex(bytes)}`;
}
