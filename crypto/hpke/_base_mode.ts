/**
 * HPKE base mode (RFC 9180 §5.1.1) for DHKEM(X25519, HKDF-SHA256) and HKDF-SHA256 (private):
 * the sender and recipient contexts Oblivious HTTP seals requests with.
 *
 * ```
 * Encap(pkR):   skE ← random, enc = pk(skE), dh = DH(skE, pkR)
 * Decap(enc):   dh = DH(skR, enc)
 * shared_secret = LabeledExpand(LabeledExtract("", "eae_prk", dh), "shared_secret", enc ‖ pkRm, 32)
 * ksc           = 0x00 ‖ LabeledExtract("", "psk_id_hash", "") ‖ LabeledExtract("", "info_hash", info)
 * secret        = LabeledExtract(shared_secret, "secret", "")
 * key, base_nonce, exporter_secret = LabeledExpand(secret, "key" | "base_nonce" | "exp", ksc, Nk | Nn | Nh)
 * Seal / Open   = AEAD under base_nonce XOR I2OSP(seq, Nn); Export = LabeledExpand(exporter_secret, "sec", ctx, L)
 * ```
 *
 * The same suites as `@hpke/core` and byte for byte the same output (the tests hold it to the RFC
 * 9180 vectors and run it against `@hpke/core` as an oracle), at a fraction of the cost, and
 * synchronous: X25519 and the AEADs are one native `node:crypto` call each (`_x25519.ts`,
 * `_aead.ts`), the key schedule is HKDF-SHA256 on `@noble/hashes` (`_labeled_kdf.ts`) instead
 * of a dozen WebCrypto promise round trips. Only the base mode: it is all Oblivious HTTP uses;
 * the public `hpkeSuite(…).cipherSuite` (`@hpke/core`) still offers every mode.
 *
 * @module
 */

import { concat } from "../_bytes.ts";
import { type AeadKey, aeadKey, type MaybePromise } from "./_aead.ts";
import {
  HASH_LENGTH,
  HmacKey,
  hpkeSuiteId,
  kemSuiteId,
  label,
  labeledExpand,
  labeledExtract,
} from "./_labeled_kdf.ts";
import {
  x25519PeerKey,
  type X25519PrivateKey,
  x25519PrivateKey,
  x25519PublicKey,
  x25519SharedSecret,
} from "./_x25519.ts";
import { aeadInfo, KDF_HKDF_SHA256, KEM_X25519_HKDF_SHA256, type SuiteIds } from "./suite.ts";

const EMPTY = new Uint8Array(0);
const MODE_BASE = 0x00;
const LABELS = {
  eaePrk: label("eae_prk"),
  sharedSecret: label("shared_secret"),
  pskIdHash: label("psk_id_hash"),
  infoHash: label("info_hash"),
  secret: label("secret"),
  key: label("key"),
  baseNonce: label("base_nonce"),
  exp: label("exp"),
  sec: label("sec"),
} as const;

/** What a context exports: `Export(exporter_context, L)`. */
export interface HpkeExporter {
  /**
   * `LabeledExpand(exporter_secret, "sec", exporterContext, length)`.
   *
   * @throws {RangeError} when `length` is above `255 · Nh`.
   */
  export(exporterContext: Uint8Array, length: number): Uint8Array;
}

/** The sender's context: `enc` to send, then seal in order. */
export interface HpkeSenderContext extends HpkeExporter {
  /** The encapsulated key. */
  readonly enc: Uint8Array;
  /**
   * Seals the next message (sequence numbers follow the order of the calls).
   *
   * Synchronous up to `SYNC_LIMIT` bytes (`_aead.ts`), a promise above.
   *
   * @throws {RangeError} for the export-only AEAD, or past 2^53 messages.
   */
  seal(plaintext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array>;
}

/** The recipient's context: open the sender's messages in order. */
export interface HpkeRecipientContext extends HpkeExporter {
  /**
   * Opens the next message; the sequence number advances only when it authenticates.
   * Synchronous up to `SYNC_LIMIT` bytes, a promise above (calls are then served in order).
   *
   * @throws when authentication fails; {@linkcode RangeError} for the export-only AEAD.
   */
  open(ciphertext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array>;
}

/** The recipient's key: the private key as `node:crypto` holds it, and the serialized public key. */
export interface RecipientKey {
  /** The X25519 private key. */
  readonly privateKey: X25519PrivateKey;
  /** `pkRm`, 32 bytes. */
  readonly publicKey: Uint8Array;
}

/**
 * `SetupBaseS(pkR, info)` with the ephemeral private key `skE` given (32 random bytes).
 *
 * @throws {RangeError} for an unsupported suite, or a recipient key of the wrong length or of
 * small order.
 */
export function setupBaseSender(
  ids: SuiteIds,
  recipientPublicKey: Uint8Array,
  info: Uint8Array,
  ephemeralSecret: Uint8Array,
): HpkeSenderContext {
  const schedule = scheduleOf(ids);
  const ephemeral = x25519PrivateKey(ephemeralSecret);
  const enc = x25519PublicKey(ephemeral);
  // The recipient's key is one a sender seals to again and again: imported once (`x25519PeerKey`).
  const dh = x25519SharedSecret(ephemeral, x25519PeerKey(recipientPublicKey));
  const sharedSecret = schedule.sharedSecret(dh, concat(enc, recipientPublicKey));
  return new Context(enc, schedule, sharedSecret, info);
}

/**
 * `SetupBaseR(enc, skR, info)`.
 *
 * @throws {RangeError} for an unsupported suite, or an `enc` of the wrong length or of small
 * order.
 */
export function setupBaseRecipient(
  ids: SuiteIds,
  recipientKey: RecipientKey,
  enc: Uint8Array,
  info: Uint8Array,
): HpkeRecipientContext {
  const schedule = scheduleOf(ids);
  const dh = x25519SharedSecret(recipientKey.privateKey, enc);
  const sharedSecret = schedule.sharedSecret(dh, concat(enc, recipientKey.publicKey));
  return new Context(enc.slice(), schedule, sharedSecret, info);
}

/** What a suite's key schedule needs, computed once per suite. */
class Schedule {
  readonly aead: number;
  readonly keyLength: number;
  readonly nonceLength: number;
  readonly canSeal: boolean;
  readonly #kemSuiteId: Uint8Array;
  readonly #suiteId: Uint8Array;
  readonly #pskIdHash: Uint8Array;
  /** `key_schedule_context` per `info` seen (a sender's `info` is the same per key config). */
  readonly #contexts = new Map<string, Uint8Array>();

  constructor(ids: SuiteIds) {
    const aead = aeadInfo(ids.aead);
    this.aead = aead.id;
    this.keyLength = aead.keyLength;
    this.nonceLength = aead.nonceLength;
    this.canSeal = aead.canSeal;
    this.#kemSuiteId = kemSuiteId(ids.kem);
    this.#suiteId = hpkeSuiteId(ids.kem, ids.kdf, ids.aead);
    this.#pskIdHash = labeledExtract(this.#suiteId, EMPTY, LABELS.pskIdHash, EMPTY);
  }

  /** DHKEM's `ExtractAndExpand(dh, kem_context)`. */
  sharedSecret(dh: Uint8Array, kemContext: Uint8Array): Uint8Array {
    const eaePrk = labeledExtract(this.#kemSuiteId, EMPTY, LABELS.eaePrk, dh);
    return labeledExpand(this.#kemSuiteId, eaePrk, LABELS.sharedSecret, kemContext, HASH_LENGTH);
  }

  /** `key_schedule_context = mode ‖ psk_id_hash ‖ info_hash`, computed once per `info`. */
  #context(info: Uint8Array): Uint8Array {
    const key = hex(info);
    let context = this.#contexts.get(key);
    if (!context) {
      const infoHash = labeledExtract(this.#suiteId, EMPTY, LABELS.infoHash, info);
      context = concat(Uint8Array.of(MODE_BASE), this.#pskIdHash, infoHash);
      if (this.#contexts.size >= MAX_CONTEXTS) this.#contexts.clear();
      this.#contexts.set(key, context);
    }
    return context;
  }

  /** `KeySchedule(mode_base, shared_secret, info, "", "")`. */
  keys(sharedSecret: Uint8Array, info: Uint8Array): ContextKeys {
    const suiteId = this.#suiteId;
    const context = this.#context(info);
    // One HMAC key for the three expansions of `secret`.
    const secretBytes = labeledExtract(suiteId, sharedSecret, LABELS.secret, EMPTY);
    const secret = new HmacKey(secretBytes);
    secretBytes.fill(0);
    try {
      return {
        key: labeledExpand(suiteId, secret, LABELS.key, context, this.keyLength),
        baseNonce: labeledExpand(suiteId, secret, LABELS.baseNonce, context, this.nonceLength),
        exporterSecret: labeledExpand(suiteId, secret, LABELS.exp, context, HASH_LENGTH),
      };
    } finally {
      secret.destroy();
    }
  }

  /** `Export`. */
  export(exporterSecret: Uint8Array, exporterContext: Uint8Array, length: number): Uint8Array {
    return labeledExpand(this.#suiteId, exporterSecret, LABELS.sec, exporterContext, length);
  }
}

interface ContextKeys {
  readonly key: Uint8Array;
  readonly baseNonce: Uint8Array;
  readonly exporterSecret: Uint8Array;
}

/** Most `key_schedule_context`s a suite keeps (a recipient sees one `info` per key config). */
const MAX_CONTEXTS = 64;

function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b < 16 ? "0" + b.toString(16) : b.toString(16);
  return out;
}

const schedules = new Map<string, Schedule>();

function scheduleOf(ids: SuiteIds): Schedule {
  if (ids.kem !== KEM_X25519_HKDF_SHA256 || ids.kdf !== KDF_HKDF_SHA256) {
    throw new RangeError(
      `Cannot set up HPKE: only DHKEM(X25519, HKDF-SHA256) with HKDF-SHA256 is implemented, found KEM ${ids.kem}, KDF ${ids.kdf}`,
    );
  }
  const key = `${ids.kem}/${ids.kdf}/${ids.aead}`;
  let schedule = schedules.get(key);
  if (!schedule) {
    schedule = new Schedule(ids);
    schedules.set(key, schedule);
  }
  return schedule;
}

/** Both contexts: one class, since the key schedule and nonces are the same on both sides. */
class Context implements HpkeSenderContext, HpkeRecipientContext {
  readonly enc: Uint8Array;
  readonly #schedule: Schedule;
  readonly #aead: AeadKey | undefined;
  readonly #baseNonce: Uint8Array;
  readonly #exporterSecret: Uint8Array;
  #seq = 0;
  #opening: Promise<void> | undefined;

  constructor(enc: Uint8Array, schedule: Schedule, sharedSecret: Uint8Array, info: Uint8Array) {
    const keys = schedule.keys(sharedSecret, info);
    this.enc = enc;
    this.#schedule = schedule;
    this.#aead = schedule.canSeal ? aeadKey(schedule.aead, keys.key) : undefined;
    this.#baseNonce = keys.baseNonce;
    this.#exporterSecret = keys.exporterSecret;
  }

  seal(plaintext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array> {
    const sealed = this.#aeadOrThrow("seal").seal(this.#nonce(), plaintext, aad);
    this.#seq++; // now: a seal still under way has its number, the next takes the next one
    return sealed;
  }

  open(ciphertext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array> {
    const aead = this.#aeadOrThrow("open");
    // While a (large, asynchronous) open is under way, the next waits for it: the sequence
    // number advances only once a message authenticated.
    const previous = this.#opening;
    const opened = previous
      ? previous.then(() => this.#openNow(aead, ciphertext, aad))
      : this.#openNow(aead, ciphertext, aad);
    if (opened instanceof Promise) {
      const tail: Promise<void> = opened.then(noop, noop).then(() => {
        if (this.#opening === tail) this.#opening = undefined;
      });
      this.#opening = tail;
    }
    return opened;
  }

  #openNow(aead: AeadKey, ciphertext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array> {
    const plaintext = aead.open(this.#nonce(), ciphertext, aad);
    if (!(plaintext instanceof Promise)) {
      this.#seq++; // only once it authenticated
      return plaintext;
    }
    return plaintext.then((bytes) => {
      this.#seq++;
      return bytes;
    });
  }

  export(exporterContext: Uint8Array, length: number): Uint8Array {
    return this.#schedule.export(this.#exporterSecret, exporterContext, length);
  }

  #aeadOrThrow(action: string): AeadKey {
    if (!this.#aead) {
      throw new RangeError(`Cannot ${action}: the export-only AEAD cannot ${action}`);
    }
    return this.#aead;
  }

  /** `base_nonce XOR I2OSP(seq, Nn)`; refuses past 2^53 messages. */
  #nonce(): Uint8Array {
    if (this.#seq > Number.MAX_SAFE_INTEGER) {
      throw new RangeError("Cannot use HPKE context: its message limit (2^53) is reached");
    }
    return xorCounter(this.#baseNonce, this.#seq);
  }
}

function noop(): void {}

/**
 * `base XOR I2OSP(counter, Nn)`: the counter big-endian, right-aligned; written into `out` (as
 * long as `base`) when given, else into a new array.
 */
export function xorCounter(base: Uint8Array, counter: number, out?: Uint8Array): Uint8Array {
  if (out) out.set(base);
  else out = base.slice();
  let value = counter;
  for (let i = out.length - 1; i >= 0 && value > 0; i--) {
    out[i] ^= value % 256;
    value = Math.floor(value / 256);
  }
  return out;
}
