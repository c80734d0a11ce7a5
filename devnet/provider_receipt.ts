/**
 * A TEE provider's receipts (`docs/protocol.md` §8): it remembers the evidence of every
 * attestation bundle it answered ({@linkcode ReceiptBook.remember}), and signs, with its
 * serving key, a receipt for each reply to a request sealed under one of them
 * ({@linkcode withReceipts}): the digests of the request and of the reply's content, the model
 * and its weights digest, the bundle's evidence digests, and the usage the reply reports. The
 * receipt goes out as the reply's last part, the `net-receipt` trailer of the sealed Binary HTTP
 * response, so that it can cover every byte of the content before it.
 *
 * A request names its attestation with the `net-attestation-nonce` header (the daemon's nonce,
 * inside the sealed request: the gateway never sees it). A request without one, or naming an
 * attestation this provider does not remember (a restart, or one older than the book keeps),
 * gets no receipt; the daemon refuses such a reply (`receipt_invalid`).
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, type Hex } from "viem";
import {
  ATTESTATION_NONCE_HEADER,
  attestationBundleFromJson,
  type AttestedModel,
  type OpenedHttpRequest,
  RECEIPT_TRAILER,
  type ReceiptEvidence,
  type ReceiptSigningKey,
  receiptToJson,
  signReceipt,
  teeEvidenceDigest,
} from "../crypto/mod.ts";

/** What a remembered attestation names. */
interface Remembered {
  readonly evidence: ReceiptEvidence;
  readonly models: ReadonlyMap<string, Uint8Array>;
}

/** The attestations a provider answered, by nonce: the most recent `capacity` of them. */
export class ReceiptBook {
  readonly #entries = new Map<string, Remembered>();
  readonly #capacity: number;

  /** Remembers at most `capacity` attestations (the oldest are forgotten). @default {4096} */
  constructor(options: { capacity?: number } = {}) {
    this.#capacity = options.capacity ?? 4096;
  }

  /**
   * Remembers the evidence of a bundle this provider answered for `nonce`. A bundle that is
   * not a hardware bundle (a mock one) is not remembered: its requests get no receipt.
   */
  remember(nonce: Uint8Array, bundleJson: unknown): void {
    let bundle;
    try {
      bundle = attestationBundleFromJson(bundleJson);
    } catch {
      return;
    }
    if (bundle.format === "mock") return;
    const gpuReports = bundle.gpus.map((gpu) => gpu.report);
    this.#entries.set(bytesToHex(nonce), {
      evidence: {
        quote: sha256(bundle.quote),
        gpus: gpuReports.map((report) => sha256(report)),
        bound: teeEvidenceDigest({ gpuReports, models: bundle.models }),
      },
      models: new Map(bundle.models.map((model) => [model.id, model.weightsDigest])),
    });
    while (this.#entries.size > this.#capacity) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  /** The remembered attestation of a nonce (`0x` hex), or `undefined`. */
  lookup(nonce: string): Remembered | undefined {
    return this.#entries.get(nonce.toLowerCase());
  }
}

/** The models a TEE provider attests: its ad's, with the weights digests the ad names. */
export function attestedModels(
  models: readonly { id: string; weights_digest?: string }[],
): AttestedModel[] {
  return models
    .filter((model) => model.weights_digest)
    .map((model) => ({
      id: model.id,
      weightsDigest: Uint8Array.from(
        model.weights_digest!.slice(2).match(/../g)!,
        (byte) => parseInt(byte, 16),
      ),
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The weights digest the devnet's dev models advertise: they have no weights, so it is
 * `SHA-256("net-consumer/devnet-weights/v1" ‖ 0x00 ‖ model id)`.
 */
export function devnetWeightsDigest(model: string): Hex {
  return bytesToHex(
    sha256(new TextEncoder().encode(`net-consumer/devnet-weights/v1\0${model}`)),
  );
}

/** Options of {@linkcode withReceipts}. */
export interface ReceiptOptions {
  /** The attestations answered. */
  readonly book: ReceiptBook;
  /** The serving key (the attested one). */
  readonly servingKey: ReceiptSigningKey;
  /** Where failures are reported. */
  readonly log: (message: string) => void;
}

/**
 * The opened request, answering with a receipt: its `respond` hashes the content as it is
 * sealed and adds the `net-receipt` trailer after it. Returns `opened` itself when the request
 * names no remembered attestation or no attested model.
 */
export function withReceipts(
  opened: OpenedHttpRequest,
  options: ReceiptOptions,
): OpenedHttpRequest {
  const nonceHex = opened.headers.get(ATTESTATION_NONCE_HEADER);
  const remembered = nonceHex && /^[0-9a-fA-F]{64}$/.test(nonceHex)
    ? options.book.lookup(`0x${nonceHex}`)
    : undefined;
  const model = modelOf(opened);
  const weightsDigest = model ? remembered?.models.get(model) : undefined;
  if (!remembered || !model || !weightsDigest) return opened;
  const nonce = Uint8Array.from(nonceHex!.match(/../g)!, (byte) => parseInt(byte, 16));
  const requestDigest = sha256(opened.body);
  return {
    ...opened,
    text: () => opened.text(),
    respond(init) {
      const hash = sha256.create();
      const usage = new UsageReader(headerOf(init.headers, "content-type"));
      const body = init.body ?? new Uint8Array(0);
      const source = body instanceof ReadableStream
        ? body
        : new Response(typeof body === "string" ? body : body as Uint8Array<ArrayBuffer>).body!;
      const counted = source.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            hash.update(chunk);
            usage.push(chunk);
            controller.enqueue(chunk);
          },
        }),
      );
      return opened.respond({
        ...init,
        body: counted,
        trailers: async () => {
          try {
            const receipt = await signReceipt(options.servingKey, {
              nonce,
              requestDigest,
              replyDigest: hash.digest(),
              status: init.status,
              model,
              weightsDigest,
              evidence: remembered.evidence,
              usage: usage.result(),
            });
            return [[RECEIPT_TRAILER, JSON.stringify(receiptToJson(receipt))]];
          } catch (error) {
            options.log(`cannot sign a receipt: ${error}`);
            return [];
          }
        },
      });
    },
  };
}

/** The `model` of a JSON request body, or `undefined`. */
function modelOf(opened: OpenedHttpRequest): string | undefined {
  try {
    const model = JSON.parse(opened.text())?.model;
    return typeof model === "string" ? model : undefined;
  } catch {
    return undefined;
  }
}

function headerOf(headers: unknown, name: string): string {
  if (!headers) return "";
  if (headers instanceof Headers) return headers.get(name) ?? "";
  const entries = Array.isArray(headers) ? headers : Object.entries(headers as object);
  const found = entries.find(([key]) => String(key).toLowerCase() === name);
  return found ? String(found[1]) : "";
}

/** Most bytes of a whole (JSON) reply kept to read its usage. */
const MAX_WHOLE_BYTES = 64 * 1024 * 1024;

/**
 * The usage a reply reports: the last `usage` object of its events (a stream), or the
 * `usage` of its JSON object (a whole reply, an embeddings list). Absent: zero tokens.
 */
class UsageReader {
  readonly #stream: boolean;
  readonly #decoder = new TextDecoder();
  #text = "";
  #usage = { promptTokens: 0, completionTokens: 0 };

  constructor(contentType: string) {
    this.#stream = contentType.startsWith("text/event-stream");
  }

  push(chunk: Uint8Array): void {
    this.#text += this.#decoder.decode(chunk, { stream: true });
    if (!this.#stream) {
      if (this.#text.length > MAX_WHOLE_BYTES) this.#text = "";
      return;
    }
    let end: number;
    while ((end = this.#text.indexOf("\n\n")) !== -1) {
      this.#event(this.#text.slice(0, end));
      this.#text = this.#text.slice(end + 2);
    }
  }

  #event(event: string): void {
    if (!event.includes('"usage"')) return;
    for (const line of event.split("\n")) {
      if (line.startsWith("data: ")) this.#take(line.slice(6));
    }
  }

  #take(text: string): void {
    try {
      const usage = JSON.parse(text)?.usage;
      if (usage && typeof usage === "object") {
        this.#usage = {
          promptTokens: Number.isInteger(usage.prompt_tokens) ? usage.prompt_tokens : 0,
          completionTokens: Number.isInteger(usage.completion_tokens) ? usage.completion_tokens : 0,
        };
      }
    } catch {
      // not a JSON event: no usage in it
    }
  }

  result(): { promptTokens: number; completionTokens: number } {
    if (!this.#stream && this.#text.trim()) this.#take(this.#text.trim());
    return this.#usage;
  }
}
