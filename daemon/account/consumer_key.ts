/**
 * The daemon's consumer key: the secp256k1 key whose address holds the Escrow deposit and signs
 * every voucher (`docs/protocol.md` §9). It comes from `--consumer-key-file` /
 * `NET_CONSUMER_KEY_FILE`, or else is generated on first start into
 * `<data-dir>/consumer-key` (32 random bytes as `0x` hex, mode 0600, written atomically), like
 * the API key. The file holds the key alone (`0x` and 64 hex digits, a trailing newline
 * allowed); a file other users can read is warned about.
 *
 * @example
 * ```ts ignore
 * import { resolveConsumerKey } from "./consumer_key.ts";
 *
 * const key = await resolveConsumerKey({ file: null, dataDir: "/tmp/daemon" });
 * console.log(`consumer ${key.address}${key.generated ? " (new)" : ""}`);
 * ```
 *
 * @module
 */

import { secp256k1 } from "@noble/curves/secp256k1.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import {
  readOrCreateSecret,
  readSecretFile,
  type SecretFileOptions,
} from "../../io/secret_file.ts";
import { SettingError } from "../../settings/mod.ts";

/** The name of the generated key file in the data directory. */
export const CONSUMER_KEY_FILE_NAME = "consumer-key";

/** The consumer key and where it came from. */
export interface ConsumerKey {
  /** The private key, `0x` and 64 hex digits. */
  readonly privateKey: Hex;
  /** Its address (lower case): the account in the Escrow. */
  readonly address: Address;
  /** The file it was read from or written to. */
  readonly source: string;
  /** Whether it was generated now. */
  readonly generated: boolean;
}

/** Where to find the key. */
export interface ConsumerKeySource {
  /** `--consumer-key-file` / `NET_CONSUMER_KEY_FILE`, or `null`. */
  readonly file: string | null;
  /** The data directory (the generated key's home). */
  readonly dataDir: string;
}

/** Options of {@linkcode resolveConsumerKey}. */
export type ResolveConsumerKeyOptions = SecretFileOptions;

/**
 * Reads the consumer key from its file, or generates `<dataDir>/consumer-key` when no file is
 * configured and none exists yet.
 *
 * @throws {SettingError} for a file that does not hold a valid key (naming the file, never the
 * key), or a configured file that does not exist.
 */
export async function resolveConsumerKey(
  source: ConsumerKeySource,
  options: ResolveConsumerKeyOptions = {},
): Promise<ConsumerKey> {
  if (source.file) {
    let text: string;
    try {
      text = await readSecretFile(source.file, "consumer key file", options.log);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      throw new SettingError(
        "--consumer-key-file",
        `Cannot read the consumer key: ${source.file} does not exist`,
      );
    }
    return { ...parseKey(text, source.file), source: source.file, generated: false };
  }
  const path = join(source.dataDir, CONSUMER_KEY_FILE_NAME);
  const { text, generated } = await readOrCreateSecret(path, "consumer key file", (random) => {
    let secret = random(32);
    while (!secp256k1.utils.isValidSecretKey(secret)) secret = random(32);
    return `0x${hex(secret)}`;
  }, options);
  return { ...parseKey(text, path), source: path, generated };
}

function parseKey(text: string, path: string): { privateKey: Hex; address: Address } {
  const bytes = /^0x[0-9a-fA-F]{64}$/.test(text) ? fromHex(text.slice(2)) : null;
  if (!bytes || !secp256k1.utils.isValidSecretKey(bytes)) {
    throw new SettingError(
      "--consumer-key-file",
      `Cannot use the consumer key in ${path}: expected 0x and 64 hex digits, a secp256k1 ` +
        `secret key, found ${text.length} characters that are not one`,
    );
  }
  return { privateKey: text.toLowerCase() as Hex, address: addressOf(bytes) };
}

function addressOf(secret: Uint8Array): Address {
  const publicKey = secp256k1.getPublicKey(secret, false);
  return `0x${hex(keccak_256(publicKey.subarray(1)).subarray(12))}` as Address;
}

function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

function fromHex(text: string): Uint8Array {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}
