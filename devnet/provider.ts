/**
 * The devnet provider: what a network provider does, on loopback (`docs/protocol.md` §4).
 *
 * - `GET /v1/ad`: its ad as published, with live capacity and metrics (routers poll this).
 * - `GET /v1/key`: its HPKE key configuration, endorsed by its serving key.
 * - `GET /v1/attestation?nonce=…` (TEE tier): an attestation bundle. There is no TEE
 *   hardware here, so the default attester emits honest `mock` bundles, which daemons refuse;
 *   tests pass their own attester (synthetic quotes under a test root) through the options.
 * - `POST /v1/relay`: opens the chunked-OHTTP request, runs inference, and seals the reply
 *   chunk by chunk as tokens are produced (one sealed chunk per server-sent event).
 *
 * It counts the usage it serves, per model price, for settlement ({@linkcode DevnetProvider.takeUsage}).
 *
 * @module
 */

import { type Address, bytesToHex, type Hex, hexToBytes } from "viem";
import type { LocalAccount } from "viem/accounts";
import { adCommitment, type AdModel, type ProviderAd } from "../chain/mod.ts";
import {
  encodeKeyConfig,
  endorseKey,
  endorsementToJson,
  type GatewayKey,
  type KeyEndorsement,
  type OpenedHttpRequest,
  openHttpRequest,
} from "../crypto/mod.ts";
import { readAllLimited } from "../io/read_limited.ts";
import { encodeSse } from "../io/sse.ts";
import { ReplayGuard } from "./replay_guard.ts";
import type { ChatBody, ChatChunk, InferenceEngine } from "./engine.ts";
import { devTokens, EngineError, messageText } from "./engine.ts";

/** Prices of one model: smallest token unit per 1M tokens. */
export interface ModelPrices {
  /** Input tokens. */
  input: bigint;
  /** Output tokens. */
  output: bigint;
}

/**
 * Produces an attestation bundle (JSON of `docs/protocol.md` §6) for a nonce. It runs where
 * the serving key lives (in a real TEE provider: inside the enclave), so it gets the key.
 */
export type Attester = (input: {
  nonce: Uint8Array;
  servingKey: LocalAccount;
  servingPublicKey: Hex;
  keyConfig: Uint8Array;
  endorse: (nonce: Uint8Array) => Promise<KeyEndorsement>;
}) => Promise<unknown>;

/** Options of {@linkcode DevnetProvider.create}. */
export interface DevnetProviderOptions {
  /** The provider's Registry address. */
  provider: Address;
  /** The serving key: signs endorsements; its address is the Registry `trustRoot`. */
  servingKey: LocalAccount;
  /** The tier. */
  tier: "verified" | "tee";
  /** The URL gateways reach this provider at (goes into the ad). */
  endpoint: string;
  /** The inference engine. */
  engine: InferenceEngine;
  /** The HPKE key the provider opens requests with. */
  key: GatewayKey;
  /** Prices of every model. @default {{ input: 150000n, output: 600000n }} */
  prices?: ModelPrices;
  /** Concurrent requests served; more are refused with 503. @default {4} */
  maxConcurrency?: number;
  /** Lifetime of a key endorsement, in seconds. @default {3600} */
  endorsementLifetimeSeconds?: number;
  /** Produces TEE attestation bundles. @default {mockAttester} */
  attester?: Attester;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Where failures are reported. @default {console.warn} */
  log?: (message: string) => void;
}

/** Usage served since the last {@linkcode DevnetProvider.takeUsage}. */
export interface ServedUsage {
  /** Tokens (prompt + completion). */
  tokens: bigint;
  /** What those tokens cost at the advertised prices (smallest unit). */
  amount: bigint;
}

/** The default attester: an honest `mock` bundle (no TEE hardware). Daemons refuse it. */
export const mockAttester: Attester = async ({ nonce, servingPublicKey, endorse }) => ({
  format: "mock",
  nonce: bytesToHex(nonce),
  serving_public_key: servingPublicKey,
  quote: "0x",
  collateral: null,
  endorsement: endorsementToJson(await endorse(nonce)),
});

const REQ_TYPE = "message/ohttp-chunked-req";
/** Largest sealed request read (the inner request is at most 8 MiB). */
const MAX_SEALED_REQUEST_BYTES = 9 * 1024 * 1024;
/** The chunked-OHTTP header (7 bytes) and the X25519 `enc` (32 bytes): unique per request. */
const SEALED_PREFIX_BYTES = 39;

/** A running devnet provider's state and request handler. */
export class DevnetProvider {
  /** The ad as published (its commitment goes on chain). */
  readonly ad: ProviderAd;
  /** `keccak256(JCS(ad))`. */
  readonly commitment: Hex;
  readonly #options: DevnetProviderOptions;
  readonly #clock: () => Date;
  readonly #log: (message: string) => void;
  readonly #prices: Map<string, ModelPrices>;
  readonly #maxConcurrency: number;
  #inFlight = 0;
  #tokensPerSec = 0;
  #usage: ServedUsage = { tokens: 0n, amount: 0n };
  #endorsement: KeyEndorsement | undefined;
  readonly #replays = new ReplayGuard();

  private constructor(options: DevnetProviderOptions, models: AdModel[]) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
    this.#log = options.log ?? ((m) => console.warn(m));
    this.#maxConcurrency = options.maxConcurrency ?? 4;
    const prices = options.prices ?? { input: 150_000n, output: 600_000n };
    this.#prices = new Map(models.map((m) => [m.id, prices]));
    this.ad = {
      version: 1,
      provider: options.provider.toLowerCase() as Address,
      tier: options.tier,
      serving_key: options.servingKey.address.toLowerCase() as Address,
      endpoint: options.endpoint.replace(/\/+$/, ""),
      models,
    };
    this.commitment = adCommitment(this.ad);
  }

  /** Creates a provider: asks the engine for its models and builds the ad. */
  static async create(options: DevnetProviderOptions): Promise<DevnetProvider> {
    const prices = options.prices ?? { input: 150_000n, output: 600_000n };
    const models = (await options.engine.models()).map((m) => ({
      id: m.id,
      prices: { input: prices.input.toString(), output: prices.output.toString() },
      context_length: m.contextLength,
    }));
    if (models.length === 0) {
      throw new Error(`Cannot start provider ${options.provider}: its engine serves no models`);
    }
    return new DevnetProvider(options, models);
  }

  /** Adds usage back (a settlement of it failed, so it is settled again later). */
  restoreUsage(usage: ServedUsage): void {
    this.#usage = {
      tokens: this.#usage.tokens + usage.tokens,
      amount: this.#usage.amount + usage.amount,
    };
  }

  /** Returns the usage served since the last call, and resets it. */
  takeUsage(): ServedUsage {
    const usage = this.#usage;
    this.#usage = { tokens: 0n, amount: 0n };
    return usage;
  }

  /** The provider's request handler. */
  readonly handler = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    try {
      switch (url.pathname) {
        case "/v1/ad":
          return req.method === "GET" ? this.#adResponse() : methodNotAllowed("GET");
        case "/v1/key":
          return req.method === "GET"
            ? Response.json({
              provider: this.ad.provider,
              endorsement: endorsementToJson(await this.#currentEndorsement()),
            })
            : methodNotAllowed("GET");
        case "/v1/attestation":
          return req.method === "GET" ? await this.#attestation(url) : methodNotAllowed("GET");
        case "/v1/relay":
          return req.method === "POST" ? await this.#relay(req) : methodNotAllowed("POST");
        default:
          return fail(404, "not_found", `No route for ${req.method} ${url.pathname}`);
      }
    } catch (error) {
      this.#log(`provider ${this.ad.provider}: ${error instanceof Error ? error.stack : error}`);
      return fail(500, "internal_error", "The provider failed to answer");
    }
  };

  #adResponse(): Response {
    return Response.json({
      ad: this.ad,
      capacity: {
        max_concurrency: this.#maxConcurrency,
        available_concurrency: Math.max(0, this.#maxConcurrency - this.#inFlight),
      },
      metrics: { tokens_per_sec: Math.round(this.#tokensPerSec * 10) / 10 },
    });
  }

  #keyConfig(): Uint8Array {
    return encodeKeyConfig(this.#options.key.config);
  }

  async #endorse(nonce: Uint8Array | null): Promise<KeyEndorsement> {
    const lifetime = this.#options.endorsementLifetimeSeconds ?? 3600;
    return await endorseKey(this.#options.servingKey, {
      keyConfig: this.#keyConfig(),
      expiresAt: Math.floor(this.#clock().getTime() / 1000) + lifetime,
      nonce,
    });
  }

  /** The endorsement served on `/v1/key`, renewed once half its lifetime has passed. */
  async #currentEndorsement(): Promise<KeyEndorsement> {
    const lifetime = this.#options.endorsementLifetimeSeconds ?? 3600;
    const now = Math.floor(this.#clock().getTime() / 1000);
    if (!this.#endorsement || this.#endorsement.expiresAt - now < lifetime / 2) {
      this.#endorsement = await this.#endorse(null);
    }
    return this.#endorsement;
  }

  async #attestation(url: URL): Promise<Response> {
    if (this.ad.tier !== "tee") {
      return fail(404, "not_tee", `Provider ${this.ad.provider} is in the verified tier`);
    }
    const nonceHex = url.searchParams.get("nonce") ?? "";
    if (!/^[0-9a-fA-F]{64}$/.test(nonceHex)) {
      return fail(400, "invalid_nonce", "nonce must be 64 hex characters");
    }
    const attester = this.#options.attester ?? mockAttester;
    const bundle = await attester({
      nonce: hexToBytes(`0x${nonceHex}`),
      servingKey: this.#options.servingKey,
      servingPublicKey: this.#options.servingKey.publicKey,
      keyConfig: this.#keyConfig(),
      endorse: (nonce) => this.#endorse(nonce),
    });
    return Response.json(bundle);
  }

  async #relay(req: Request): Promise<Response> {
    const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
    if (type !== REQ_TYPE || !req.body) {
      return fail(415, "unsupported_media_type", `Expected a ${REQ_TYPE} body`);
    }
    // Sealed requests are small (a chat body): read it whole, bounded, to know its prefix.
    const bytes = await readAllLimited(req.body, MAX_SEALED_REQUEST_BYTES);
    if (bytes === null) {
      return fail(
        413,
        "too_large",
        `A sealed request is at most ${MAX_SEALED_REQUEST_BYTES} bytes`,
      );
    }
    let opened: OpenedHttpRequest;
    try {
      opened = await openHttpRequest(this.#options.key, ReadableStream.from([bytes]));
    } catch (error) {
      // Say only that it could not be opened: no detail about which step failed.
      this.#log(`provider ${this.ad.provider}: cannot open a sealed request: ${error}`);
      return fail(400, "cannot_open", "The sealed request could not be opened");
    }
    // Authenticated: now refuse what is stale or already served (header + enc identify it).
    const verdict = this.#replays.admit(
      bytes.subarray(0, SEALED_PREFIX_BYTES),
      opened.headers.get("date"),
      this.#clock(),
    );
    if (!verdict.ok) {
      this.#log(`provider ${this.ad.provider}: refused a request: ${verdict.message}`);
      return new Response(
        opened.respond({
          status: 400,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            error: {
              message: verdict.message,
              type: "invalid_request_error",
              param: null,
              code: verdict.reason,
            },
          }),
        }),
        { headers: { "content-type": opened.responseContentType, "cache-control": "no-store" } },
      );
    }
    const sealed = await this.#answer(opened);
    return new Response(sealed, {
      headers: { "content-type": opened.responseContentType, "cache-control": "no-store" },
    });
  }

  /**
   * Runs the opened request and returns the sealed reply stream. It waits for the engine's
   * first chunk, so that a refusal (unknown model, bad request) becomes a sealed error status.
   */
  async #answer(opened: OpenedHttpRequest): Promise<ReadableStream<Uint8Array>> {
    const sealedError = (status: number, type: string, message: string) =>
      opened.respond({
        status,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ error: { message, type, param: null, code: type } }),
      });
    if (opened.path !== "/v1/chat/completions") {
      return sealedError(404, "not_found", `No route for ${opened.path}`);
    }
    if (opened.method !== "POST") {
      return sealedError(405, "method_not_allowed", "Use POST /v1/chat/completions");
    }
    let body: ChatBody;
    try {
      body = JSON.parse(opened.text());
      if (typeof body !== "object" || body === null || typeof body.model !== "string") {
        throw new Error("not a chat request");
      }
    } catch {
      return sealedError(
        400,
        "invalid_request_error",
        "The body is not a chat-completions request",
      );
    }
    if (!this.#prices.has(body.model)) {
      return sealedError(
        404,
        "model_not_found",
        `Model ${JSON.stringify(body.model)} is not served here`,
      );
    }
    if (this.#inFlight >= this.#maxConcurrency) {
      return sealedError(503, "overloaded", `All ${this.#maxConcurrency} slots are busy`);
    }

    const abort = new AbortController();
    const chunks = this.#options.engine.complete(body, abort.signal)[Symbol.asyncIterator]();
    const prices = this.#prices.get(body.model)!;
    const started = performance.now();
    this.#inFlight++;
    let released = false;
    const release = () => {
      if (!released) this.#inFlight--;
      released = true;
    };
    // What was generated so far, billed if the stream ends before the engine's usage chunk.
    let generated = 0;
    let billed = false;
    const bill = (prompt: number, completion: number) => {
      if (billed) return;
      billed = true;
      this.#usage = {
        tokens: this.#usage.tokens + BigInt(prompt + completion),
        amount: this.#usage.amount +
          (BigInt(prompt) * prices.input + BigInt(completion) * prices.output) / 1_000_000n,
      };
    };
    const account = (chunk: ChatChunk) => {
      for (const choice of chunk.choices) if (choice.delta.content) generated++;
      if (!chunk.usage) return;
      const { prompt_tokens: prompt, completion_tokens: completion } = chunk.usage;
      bill(prompt, completion);
      const seconds = (performance.now() - started) / 1000;
      if (seconds > 0 && completion > 0) {
        const rate = completion / seconds;
        this.#tokensPerSec = this.#tokensPerSec === 0
          ? rate
          : 0.8 * this.#tokensPerSec + 0.2 * rate;
      }
    };

    let first: IteratorResult<ChatChunk>;
    try {
      first = await chunks.next();
    } catch (error) {
      release();
      return engineFailure(error, sealedError);
    }

    if (body.stream !== true) {
      // Aggregate into one chat.completion object.
      const parts: string[] = [];
      let last: ChatChunk | undefined;
      let finish: string | null = null;
      try {
        for (let r = first; !r.done; r = await chunks.next()) {
          last = r.value;
          account(r.value);
          for (const choice of r.value.choices) {
            parts.push(choice.delta.content ?? "");
            finish = choice.finish_reason ?? finish;
          }
        }
      } catch (error) {
        return engineFailure(error, sealedError);
      } finally {
        release();
      }
      return opened.respond({
        status: 200,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          id: last?.id,
          object: "chat.completion",
          created: last?.created,
          model: body.model,
          choices: [{
            index: 0,
            message: { role: "assistant", content: parts.join("") },
            finish_reason: finish,
          }],
          usage: last?.usage,
        }),
      });
    }

    // A stream that ends early (the client stopped it, the engine failed) is still billed for
    // what was generated: the prompt counted by the dev tokenizer, one token per content
    // delta (the engine's exact usage chunk never came).
    const billPartial = () =>
      bill(
        body.messages.reduce(
          (n, m) => n + devTokens(`${m.role} ${messageText(m.content)}`).length,
          0,
        ),
        generated,
      );

    // Streaming: one server-sent event per chunk, each sealed as soon as it is produced.
    const emit = (
      controller: ReadableStreamDefaultController<Uint8Array>,
      r: IteratorResult<ChatChunk>,
    ) => {
      if (r.done) {
        controller.enqueue(encodeSse("[DONE]"));
        controller.close();
        release();
        return;
      }
      account(r.value);
      controller.enqueue(encodeSse(JSON.stringify(r.value)));
    };
    const events = new ReadableStream<Uint8Array>({
      start: (controller) => emit(controller, first),
      pull: async (controller) => {
        try {
          emit(controller, await chunks.next());
        } catch (error) {
          release();
          billPartial();
          this.#log(`provider ${this.ad.provider}: stream failed: ${error}`);
          controller.enqueue(encodeSse(JSON.stringify({
            error: { message: "The provider failed mid-stream", type: "provider_error" },
          })));
          controller.close();
        }
      },
      cancel: async (reason) => {
        abort.abort(reason ?? new Error("the client went away"));
        release();
        billPartial();
        await chunks.return?.(undefined);
      },
    }, { highWaterMark: 0 });
    return opened.respond({
      status: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-store" },
      body: events,
    });
  }
}

function engineFailure(
  error: unknown,
  sealedError: (status: number, type: string, message: string) => ReadableStream<Uint8Array>,
): ReadableStream<Uint8Array> {
  if (error instanceof EngineError) {
    const status = error.reason === "unknown_model"
      ? 404
      : error.reason === "invalid_request"
      ? 400
      : 502;
    return sealedError(status, error.reason, error.shortMessage);
  }
  return sealedError(500, "internal_error", "The provider failed to answer");
}

function fail(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

function methodNotAllowed(allowed: string): Response {
  return new Response(
    JSON.stringify({ error: { code: "method_not_allowed", message: `Use ${allowed}` } }),
    { status: 405, headers: { "content-type": "application/json", allow: allowed } },
  );
}
