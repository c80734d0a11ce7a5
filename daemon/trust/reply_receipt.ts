/**
 * The TEE tier's check of a reply's end (`docs/protocol.md` §8): the provider's receipt, in the
 * reply's `net-receipt` trailer, must be signed by the serving key the attestation bound, and
 * name this request's and this reply's digests, the status, the model and its attested weights,
 * and the attestation's evidence digests. A missing or bad receipt is `receipt_invalid`, never
 * a silent success; a good one is kept under the reply's id ({@linkcode ReceiptLog}).
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import type { Address } from "viem";
import { checkReceipt, RECEIPT_TRAILER, ReceiptError, receiptFromJson } from "../../crypto/mod.ts";
import { DaemonError } from "../core/mod.ts";
import type { TeeAttestation } from "./provider_trust.ts";
import type { ReceiptLog } from "./receipt_log.ts";

/** How a reply ended, as the sealing room reads it. */
export interface ReplyEnd {
  /** The inner response's status. */
  readonly status: number;
  /** SHA-256 of the inner response's content. */
  readonly digest: Uint8Array;
  /** The inner response's trailers. */
  readonly trailers: Headers;
}

/** What the check knows of the request. */
export interface ReceiptContext {
  /** The provider. */
  readonly provider: Address;
  /** The model asked for. */
  readonly model: string;
  /** The inner request's content, as sealed. */
  readonly content: Uint8Array;
  /** The reply's id (its `x-net-receipt` header). */
  readonly id: string;
  /** Where verified receipts are kept. */
  readonly receipts: ReceiptLog;
}

/**
 * The check of a reply's end under `attestation`: throws `receipt_invalid` unless the reply
 * carries a receipt that verifies; keeps a verified one.
 */
export function receiptCheck(
  attestation: TeeAttestation,
  context: ReceiptContext,
): (end: ReplyEnd) => Promise<void> {
  const requestDigest = sha256(context.content);
  return async (end) => {
    const text = end.trailers.get(RECEIPT_TRAILER);
    let receipt;
    try {
      if (!text) throw new ReceiptError("malformed", "the reply carries no receipt");
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new ReceiptError("malformed", "the receipt is not JSON");
      }
      receipt = receiptFromJson(json);
      await checkReceipt(receipt, {
        nonce: attestation.nonce,
        requestDigest,
        replyDigest: end.digest,
        status: end.status,
        model: context.model,
        verdict: attestation.verdict,
      });
    } catch (error) {
      if (!(error instanceof ReceiptError)) throw error;
      throw new DaemonError(
        "receipt_invalid",
        `Cannot accept the reply of provider ${context.provider}: ${error.shortMessage}`,
        { cause: error },
      );
    }
    context.receipts.add(context.id, {
      provider: context.provider,
      verifiedAt: attestation.verifiedAt,
      measurements: attestation.measurements,
      attestation: attestation.bundle,
      receipt,
    });
  };
}
