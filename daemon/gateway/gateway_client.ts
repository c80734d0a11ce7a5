/**
 * A typed client of the gateway API (`docs/protocol.md` §3). Everything a gateway answers is
 * untrusted: answers are bounded, validated, and only used for routing — keys are checked by
 * endorsement or attestation elsewhere (`trust/provider_trust.ts`).
 *
 * Failures say whose fault they are: {@linkcode GatewayError} with reason `gateway` means the
 * gateway itself failed or answered nonsense (the daemon should try another gateway); reason
 * `provider` means the gateway answered but could not reach or use the provider (try another
 * provider).
 *
 * @module
 */

import type { Address, Hex } from "viem";
import {
  adCommitment,
  MODEL_CAPABILITY_NAMES,
  type ProviderAd,
  validateAd,
} from "../../chain/ad.ts";
import { NetError, ReasonError } from "../../errors.ts";
import { fetchJson, FetchJsonError, readBodyLimited } from "../../io/fetch_json.ts";
import type { NetworkModel, Tier } from "../core/mod.ts";

/** Whose failure a {@linkcode GatewayError} is. */
export type GatewayFailure = "gateway" | "provider";

/** Thrown by {@linkcode GatewayClient}. */
export class GatewayError extends ReasonError<GatewayFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "GatewayError" as const;
  /** The HTTP status the gateway answered, if any. */
  readonly status: number | undefined;
  /** The gateway's error code (`provider_unreachable`, …), when it sent a well-formed one. */
  readonly code: string | undefined;

  /** Creates the error: `gateway` (try another gateway) or `provider` (another provider). */
  constructor(
    reason: GatewayFailure,
    shortMessage: string,
    options: { status?: number; code?: string; cause?: unknown } = {},
  ) {
    super(reason, shortMessage, options);
    this.status = options.status;
    this.code = options.code;
  }
}

/**
 * A provider said it is at capacity (`503` with `Retry-After`, `docs/protocol.md` §4): busy, not
 * broken. It costs the provider no reputation and keeps its cached key; the request moves on to
 * another provider or waits for a slot.
 */
export class ProviderBusyError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ProviderBusyError" as const;
  /** How long the provider asked to be left alone, in ms (its `Retry-After`, bounded). */
  readonly retryAfterMs: number;

  /** Creates the error; `retryAfterMs` is clamped to 0.1–30 s. */
  constructor(shortMessage: string, retryAfterMs: number) {
    super(shortMessage);
    this.retryAfterMs = Math.min(30_000, Math.max(100, retryAfterMs));
  }
}

/**
 * The wait a `Retry-After` value asks for, in ms: delay-seconds (`"1"`) or an HTTP date; 1 s
 * when absent or unreadable (`RFC 9110` §10.2.3).
 */
export function retryAfterMs(value: string | null, now: Date = new Date()): number {
  if (value === null) return 1000;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? 1000 : Math.max(0, date - now.getTime());
}

/** A candidate provider as a gateway lists it, its ad validated. */
export interface ProviderCandidate {
  /** Provider address, lower case. */
  provider: Address;
  /** The provider's tier. */
  tier: Tier;
  /** The ad, strictly validated (`chain/ad.ts`). */
  ad: ProviderAd;
  /** Free slots as advertised (0 when unknown). */
  available: number;
  /** Observed tokens/s as advertised (0 when unknown). */
  tokensPerSec: number;
  /**
   * The concurrent requests the provider advertises it serves (`capacity.max_concurrency`),
   * when it says.
   */
  maxConcurrency?: number;
  /** `keccak256(JCS(ad))`, computed once when the listing was read. */
  commitment?: Hex;
}

/** Options of {@linkcode GatewayClient}. */
export interface GatewayClientOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Time allowed for a JSON answer, in ms. @default {10000} */
  timeoutMs?: number;
}

const MODELS_MAX_BYTES = 4 << 20;
/** The capabilities a model entry may list (`docs/protocol.md` §1); others are ignored. */
const KNOWN_CAPABILITIES: ReadonlySet<string> = new Set(MODEL_CAPABILITY_NAMES);
/** Most provider entries of one answer that are validated; the rest are ignored. */
const MAX_CANDIDATES_READ = 256;
const PROVIDERS_MAX_BYTES = 8 << 20;
const KEY_MAX_BYTES = 64 << 10;
const ATTESTATION_MAX_BYTES = 1 << 20;

/** Options of {@linkcode GatewayClient.relay}. */
export interface RelayOptions {
  /** Aborts the relay; once the reply streams, cancels it (closing the socket to the gateway). */
  signal?: AbortSignal;
  /**
   * How far the reply is read ahead of its reader, in bytes: the provider's reply comes in (and
   * {@linkcode RelayOptions.onEnd} can see its end) even while its reader is slower.
   *
   * @default {0}
   */
  readAheadBytes?: number;
  /** Called once when the reply has come in whole, or failed, or was cancelled. */
  onEnd?: () => void;
}

/** Talks to one gateway. */
export class GatewayClient {
  /** The gateway's base URL. */
  readonly url: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  /** Creates a client for the gateway at `url` (no trailing slash). */
  constructor(url: string, options: GatewayClientOptions = {}) {
    this.url = url.replace(/\/+$/, "");
    this.#fetch = options.fetch ?? fetch;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** `GET /v1/models`, validated. */
  async models(signal?: AbortSignal): Promise<NetworkModel[]> {
    const body = await this.#json("/v1/models", MODELS_MAX_BYTES, "gateway", signal);
    const list = (body as { models?: unknown })?.models;
    if (!Array.isArray(list)) throw this.#malformed("/v1/models", `expected {"models": [...]}`);
    const out: NetworkModel[] = [];
    for (const item of list) {
      const m = item as Record<string, unknown>;
      const price = m?.cheapest_price as { input?: unknown; output?: unknown } | null | undefined;
      const validPrice = price && isDecimal(price.input) && isDecimal(price.output);
      if (
        (m?.tier !== "verified" && m?.tier !== "tee") || typeof m.model !== "string" ||
        !MODEL_ID.test(m.model) || !isCount(m.providers) || !isCount(m.context_length)
      ) continue; // one bad entry does not hide the others
      const kind = m.kind === "embedding" ? "embedding" : "chat";
      const supports = Array.isArray(m.capabilities)
        ? m.capabilities.filter((c): c is string => KNOWN_CAPABILITIES.has(c as string))
        : [];
      const dimensions = isCount(m.embedding_dimensions)
        ? m.embedding_dimensions as number
        : undefined;
      if (kind === "embedding" && dimensions === undefined) continue;
      const digests = Array.isArray(m.weights_digests)
        ? [
          ...new Set(
            m.weights_digests.filter((d): d is string =>
              typeof d === "string" && /^0x[0-9a-fA-F]{64}$/.test(d)
            ).map((d) => d.toLowerCase()),
          ),
        ].sort().slice(0, 16)
        : [];
      out.push({
        tier: m.tier,
        model: m.model,
        providers: m.providers as number,
        contextLength: m.context_length as number,
        cheapestPrice: validPrice
          ? { input: price!.input as string, output: price!.output as string }
          : null,
        kind,
        supports,
        ...(kind === "embedding" ? { embeddingDimensions: dimensions } : {}),
        ...(digests.length ? { weightsDigests: digests } : {}),
      });
    }
    return out;
  }

  /** `GET /v1/providers?model=&tier=`: the candidates whose ads validate and match. */
  async providers(model: string, tier: Tier, signal?: AbortSignal): Promise<ProviderCandidate[]> {
    const path = `/v1/providers?model=${encodeURIComponent(model)}&tier=${tier}`;
    const body = await this.#json(path, PROVIDERS_MAX_BYTES, "gateway", signal);
    const list = (body as { providers?: unknown })?.providers;
    if (!Array.isArray(list)) throw this.#malformed(path, `expected {"providers": [...]}`);
    const out: ProviderCandidate[] = [];
    // A gateway could list thousands of entries; validating every ad would stall the daemon.
    for (const item of list.slice(0, MAX_CANDIDATES_READ)) {
      const entry = item as Record<string, unknown>;
      let ad: ProviderAd;
      try {
        ad = validateAd(entry?.ad);
      } catch {
        continue;
      }
      const provider = ad.provider.toLowerCase() as Address;
      if (ad.tier !== tier || !ad.models.some((m) => m.id === model)) continue;
      if (typeof entry.provider === "string" && entry.provider.toLowerCase() !== provider) continue;
      const capacity = entry.capacity as
        | { available_concurrency?: unknown; max_concurrency?: unknown }
        | null;
      const metrics = entry.metrics as { tokens_per_sec?: unknown } | null;
      const max = capacity?.max_concurrency;
      out.push({
        provider,
        tier,
        ad,
        commitment: adCommitment(ad),
        ...(isCount(max) && max > 0 ? { maxConcurrency: max } : {}),
        available: isCount(capacity?.available_concurrency)
          ? capacity!.available_concurrency as number
          : 0,
        tokensPerSec:
          typeof metrics?.tokens_per_sec === "number" && Number.isFinite(metrics.tokens_per_sec)
            ? Math.max(0, metrics.tokens_per_sec)
            : 0,
      });
    }
    return out;
  }

  /** `GET /v1/providers/{p}/key`: the raw answer (checked by the caller). */
  async key(provider: Address, signal?: AbortSignal): Promise<unknown> {
    const body = await this.#json(
      `/v1/providers/${provider}/key`,
      KEY_MAX_BYTES,
      "provider",
      signal,
    );
    return (body as { endorsement?: unknown })?.endorsement;
  }

  /** `GET /v1/providers/{p}/attestation?nonce=`: the raw bundle (checked by the caller). */
  async attestation(provider: Address, nonce: Uint8Array, signal?: AbortSignal): Promise<unknown> {
    const hex = [...nonce].map((b) => b.toString(16).padStart(2, "0")).join("");
    return await this.#json(
      `/v1/providers/${provider}/attestation?nonce=${hex}`,
      ATTESTATION_MAX_BYTES,
      "provider",
      signal,
    );
  }

  /**
   * `POST /v1/providers/{p}/relay` with a sealed body; returns the sealed reply stream once
   * the gateway has answered 200 with `message/ohttp-chunked-res`.
   */
  async relay(
    provider: Address,
    sealed: ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer>,
    options: RelayOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const { signal } = options;
    const url = `${this.url}/v1/providers/${provider}/relay`;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: "POST",
        body: sealed,
        headers: { "content-type": "message/ohttp-chunked-req" },
        redirect: "manual",
        signal,
        // Required to stream a request body with fetch.
        ...({ duplex: "half" } as Record<string, string>),
      });
    } catch (cause) {
      signal?.throwIfAborted();
      throw new GatewayError("gateway", `Cannot reach gateway ${this.url}: ${describe(cause)}`, {
        cause,
      });
    }
    const type = response.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
    if (response.status === 200 && type === "message/ohttp-chunked-res" && response.body) {
      return relayBody(response.body, options);
    }
    const detail = await readBodyLimited(response, { maxBytes: 4096, url }).catch(() => undefined);
    const code = errorCode(detail);
    if (response.status === 503 && code === "provider_busy") {
      throw new ProviderBusyError(
        `Provider ${provider} is at capacity (through ${this.url})`,
        retryAfterMs(response.headers.get("retry-after")),
      );
    }
    // A gateway error about the provider (unknown, unreachable, failing) means: next provider.
    const reason: GatewayFailure = response.status >= 500 && code === undefined
      ? "gateway"
      : "provider";
    throw new GatewayError(
      reason,
      `Cannot relay to provider ${provider} through ${this.url}: status ${response.status}${
        code ? ` (${code})` : ""
      }, expected 200 message/ohttp-chunked-res`,
      { status: response.status, code },
    );
  }

  async #json(
    path: string,
    maxBytes: number,
    blame: "gateway" | "provider",
    signal?: AbortSignal,
  ): Promise<unknown> {
    try {
      return await fetchJson(`${this.url}${path}`, {
        fetch: this.#fetch,
        timeoutMs: this.#timeoutMs,
        maxBytes,
        signal,
      });
    } catch (cause) {
      signal?.throwIfAborted();
      // The gateway is at fault when it cannot be reached or its own endpoints fail; on a
      // provider pass-through, any answer it relays means the provider is at fault.
      const transport = cause instanceof FetchJsonError &&
        (cause.reason === "unreachable" || cause.reason === "timeout");
      const reason: GatewayFailure = blame === "provider" && !transport ? "provider" : "gateway";
      const failed = cause instanceof FetchJsonError ? cause : undefined;
      throw new GatewayError(
        reason,
        failed ? failed.shortMessage : `Cannot use ${this.url}${path}`,
        {
          cause,
          status: failed?.status,
          code: failed?.details ? errorCode(new TextEncoder().encode(failed.details)) : undefined,
        },
      );
    }
  }

  #malformed(path: string, expected: string): GatewayError {
    return new GatewayError("gateway", `Cannot use the answer of ${this.url}${path}: ${expected}`);
  }
}

/**
 * The relay's body: cancelled as soon as `signal` aborts, so the socket to the gateway is closed
 * then, whoever is reading (`fetch`'s own signal is not enough: the request it builds follows
 * the signal through a weakly held dependent signal, which can be collected during a long
 * stream, and the abort is then lost — measured: the socket stayed open to the reply's end);
 * read ahead of its reader up to `readAheadBytes`; `onEnd` called once when it ends, fails or is
 * cancelled.
 */
function relayBody(
  body: ReadableStream<Uint8Array>,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  const { signal, onEnd } = options;
  if (!signal && !onEnd && !options.readAheadBytes) return body;
  const reader = body.getReader();
  const onAbort = () => reader.cancel(signal?.reason).catch(() => {});
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    signal?.removeEventListener("abort", onAbort);
    onEnd?.();
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const step = await reader.read();
        if (signal?.aborted) {
          end();
          controller.error(signal.reason);
        } else if (step.done) {
          end();
          controller.close();
        } else controller.enqueue(step.value);
      } catch (error) {
        end();
        controller.error(signal?.aborted ? signal.reason : error);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  }, { highWaterMark: options.readAheadBytes ?? 0, size: (chunk) => chunk.byteLength });
}

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\/[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function isDecimal(value: unknown): value is string {
  return typeof value === "string" && /^(0|[1-9][0-9]{0,77})$/.test(value);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

function errorCode(body: Uint8Array | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const code = JSON.parse(new TextDecoder().decode(body))?.error?.code;
    return typeof code === "string" && /^[a-z_]{1,40}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
