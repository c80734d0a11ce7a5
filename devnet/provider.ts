/**
 * The devnet provider: what a network provider does, on loopback (`docs/protocol.md` §4),
 * served by the HTTP layer with its generated OpenAPI document at `GET /openapi.json`.
 *
 * - `GET /v1/ad`: its ad as published, with live capacity and metrics (routers poll this).
 * - `GET /v1/key`: its HPKE key configuration, endorsed by its serving key.
 * - `GET /v1/attestation?nonce=…` (TEE tier): an attestation bundle. There is no TEE
 *   hardware here, so the default attester emits honest `mock` bundles, which daemons refuse;
 *   tests pass their own attester (synthetic quotes and GPU evidence under test roots) through
 *   the options. A TEE provider's ad names each model's weights digest, and it signs a receipt
 *   for every reply to a request sealed under one of its attestations (`provider_receipt.ts`).
 * - `POST /v1/relay`: opens the chunked-OHTTP request, refuses replays, runs inference, and
 *   seals the reply chunk by chunk as tokens are produced (`provider_chat.ts`).
 *
 * It counts the usage it serves, per model price, for settlement ({@linkcode DevnetProvider.takeUsage}).
 *
 * @module
 */

import { type Address, bytesToHex, type Hex, hexToBytes } from "viem";
import type { LocalAccount } from "viem/accounts";
import { adCommitment, type AdModel, type ProviderAd } from "../chain/mod.ts";
import {
  type AttestedModel,
  encodeKeyConfig,
  endorseKey,
  endorsementToJson,
  type GatewayKey,
  type KeyEndorsement,
  type OpenedHttpRequest,
  type ReceiptSigningKey,
} from "../crypto/mod.ts";
import { openHttpRequestBytes } from "../crypto/ohttp/sealed_exchange.ts";
import { createService, defineRoute, json, type Route, type Service, z } from "../http/mod.ts";
import { readAllLimited } from "../io/read_limited.ts";
import { VERSION } from "../version.ts";
import { COMMON_RESPONSES, renderNetworkError, ServiceError } from "./_errors.ts";
import {
  AttestationBundle,
  errorAnswer,
  Nonce,
  ProviderKey,
  RouterEntry,
  Sealed,
  SEALED_REQUEST,
  SEALED_RESPONSE,
} from "./_wire.ts";
import type { InferenceEngine } from "./engine.ts";
import {
  answerChat,
  type ModelPrices,
  ProviderLoad,
  sealedErrors,
  type ServedUsage,
  type Slot,
} from "./provider_chat.ts";
import { ReplayGuard } from "./replay_guard.ts";
import { answerGeneration, isGenerationPath } from "./provider_generation.ts";
import { ProviderTill, type ProviderTillOptions, VOUCHER_HEADER } from "./provider_payments.ts";
import { priceRequest } from "./_paid_request.ts";
import {
  attestedModels,
  devnetWeightsDigest,
  ReceiptBook,
  withReceipts,
} from "./provider_receipt.ts";

export type { ModelPrices, ServedUsage } from "./provider_chat.ts";

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
  /** The models the enclave serves, with the weights digests its ad names, sorted by id. */
  models: AttestedModel[];
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
  /** How often a whole reply sends a space while the engine generates, in ms. @default {10000} */
  wholeKeepAliveMs?: number;
  /**
   * Require payment (`provider_payments.ts`): every sealed request must carry a voucher that
   * covers it, from a consumer whose deposit covers it. @default {undefined: requests are free}
   */
  payments?: Omit<ProviderTillOptions, "provider">;
  /**
   * The key that signs a TEE provider's receipts; `null` signs none. Anything but the serving
   * key makes daemons refuse its replies (`receipt_invalid`): tests use it to show that.
   *
   * @default {the serving key}
   */
  receiptKey?: ReceiptSigningKey | null;
  /**
   * The weights digest a TEE provider's ad names for a model (`0x` + 32 bytes).
   *
   * @default {devnetWeightsDigest: the dev models have no weights}
   */
  weightsDigest?: (model: string) => Hex;
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

const DEFAULT_PRICES: ModelPrices = { input: 150_000n, output: 600_000n };
/** Largest sealed request read (the inner request is at most 8 MiB). */
const MAX_SEALED_REQUEST_BYTES = 9 * 1024 * 1024;
/** `Retry-After` of a busy answer, in seconds: a slot frees as soon as a reply ends. */
const BUSY_RETRY_AFTER_SECONDS = 1;
/** The chunked-OHTTP header (7 bytes) and the X25519 `enc` (32 bytes): unique per request. */
const SEALED_PREFIX_BYTES = 39;

/** A running devnet provider's state and its service. */
export class DevnetProvider {
  /** The ad as published (its commitment goes on chain). */
  readonly ad: ProviderAd;
  /** `keccak256(JCS(ad))`. */
  readonly commitment: Hex;
  /** The provider as a service of the HTTP layer: its four routes and `GET /openapi.json`. */
  readonly service: Service;
  readonly #options: DevnetProviderOptions;
  readonly #clock: () => Date;
  readonly #log: (message: string) => void;
  readonly #prices: Map<string, ModelPrices>;
  readonly #load: ProviderLoad;
  #endorsement: KeyEndorsement | undefined;
  readonly #replays = new ReplayGuard();
  /** The consumers' accounts, when requests must be paid for. */
  readonly till: ProviderTill | undefined;
  readonly #receipts = new ReceiptBook();

  private constructor(options: DevnetProviderOptions, models: AdModel[]) {
    this.#options = options;
    this.till = options.payments &&
      new ProviderTill({ ...options.payments, provider: options.provider });
    this.#clock = options.clock ?? (() => new Date());
    this.#load = new ProviderLoad(options.maxConcurrency ?? 4);
    this.#prices = new Map(
      models.map((m) => [m.id, { input: BigInt(m.prices.input), output: BigInt(m.prices.output) }]),
    );
    this.ad = {
      version: 1,
      provider: options.provider.toLowerCase() as Address,
      tier: options.tier,
      serving_key: options.servingKey.address.toLowerCase() as Address,
      endpoint: options.endpoint.replace(/\/+$/, ""),
      models,
    };
    this.commitment = adCommitment(this.ad);
    const log = options.log ?? ((m) => console.warn(m));
    this.#log = (message) => log(`provider ${this.ad.provider}: ${message}`);
    this.service = createService({
      info: {
        title: "devnet provider",
        version: VERSION,
        description: "A provider of the reference network (docs/protocol.md §4).",
      },
      renderError: renderNetworkError("provider", this.#log),
      commonResponses: COMMON_RESPONSES,
      routes: [this.#adRoute(), this.#keyRoute(), this.#attestationRoute(), this.#relayRoute()],
    });
  }

  /** Creates a provider: asks the engine for its models and builds the ad. */
  static async create(options: DevnetProviderOptions): Promise<DevnetProvider> {
    const prices = options.prices ?? DEFAULT_PRICES;
    const models = (await options.engine.models()).map((m): AdModel => ({
      id: m.id,
      ...(m.kind ? { kind: m.kind } : {}),
      prices: {
        input: prices.input.toString(),
        output: m.kind === "embedding" ? "0" : prices.output.toString(),
      },
      context_length: m.contextLength,
      ...(m.capabilities?.length ? { capabilities: [...m.capabilities] } : {}),
      ...(m.embeddingDimensions ? { embedding_dimensions: m.embeddingDimensions } : {}),
      ...(options.tier === "tee"
        ? { weights_digest: (options.weightsDigest ?? devnetWeightsDigest)(m.id) }
        : {}),
    }));
    if (models.length === 0) {
      throw new Error(`Cannot start provider ${options.provider}: its engine serves no models`);
    }
    return new DevnetProvider(options, models);
  }

  /** The provider's request handler: {@linkcode service}'s `fetch`. */
  readonly handler = (req: Request): Promise<Response> => this.service.fetch(req);

  /** Adds usage back (a settlement of it failed, so it is settled again later). */
  restoreUsage(usage: ServedUsage): void {
    this.#load.restoreUsage(usage);
  }

  /** Returns the usage served since the last call, and resets it. */
  takeUsage(): ServedUsage {
    return this.#load.takeUsage();
  }

  /** Requests holding a slot now (being opened or answered). */
  get inFlight(): number {
    return this.#load.inFlight;
  }

  /** How many requests it serves at once. */
  get maxConcurrency(): number {
    return this.#load.maxConcurrency;
  }

  #adRoute(): Route {
    return defineRoute({
      method: "get",
      path: "/v1/ad",
      summary: "This provider's ad as published, with its live capacity and metrics",
      responses: { 200: { description: "The ad", content: json(RouterEntry) } },
      handler: (c) =>
        c.json({
          ad: this.ad,
          capacity: {
            max_concurrency: this.#load.maxConcurrency,
            available_concurrency: this.#load.available,
          },
          metrics: { tokens_per_sec: Math.round(this.#load.tokensPerSec * 10) / 10 },
        }),
    });
  }

  #keyRoute(): Route {
    return defineRoute({
      method: "get",
      path: "/v1/key",
      summary: "This provider's HPKE key configuration, endorsed by its serving key",
      responses: { 200: { description: "The endorsed key", content: json(ProviderKey) } },
      handler: async (c) =>
        c.json({
          provider: this.ad.provider,
          endorsement: endorsementToJson(await this.#currentEndorsement()),
        }),
    });
  }

  #attestationRoute(): Route {
    return defineRoute({
      method: "get",
      path: "/v1/attestation",
      summary: "An attestation bundle binding the serving key to the nonce (TEE tier)",
      description: "There is no TEE hardware here: the default attester answers honest `mock` " +
        "bundles, which daemons refuse.",
      query: z.object({ nonce: Nonce }),
      responses: {
        200: { description: "The attestation bundle", content: json(AttestationBundle) },
        400: errorAnswer("The nonce is not 64 hex digits (`invalid_nonce`)"),
        404: errorAnswer("This provider is in the verified tier (`not_tee`)"),
      },
      handler: async (c, { query }) => c.json(await this.#attest(query.nonce) as never),
    });
  }

  #relayRoute(): Route {
    return defineRoute({
      method: "post",
      path: "/v1/relay",
      summary: "Opens a sealed chat request, runs it, and seals the reply as it is produced",
      description: "A provider whose slots are all taken answers `503 busy` with `Retry-After` " +
        "at once, before reading the request (busy is not broken: the requester tries another " +
        "provider or waits). A refusal inside the sealed exchange (unknown model, replay) is a " +
        "sealed error status, readable only by the requester. A requester that goes away stops " +
        "the engine and frees the slot; what was produced is billed.",
      body: { schema: Sealed, mediaType: SEALED_REQUEST, description: "The sealed request" },
      responses: {
        200: {
          description: "The sealed reply, streamed",
          content: { [SEALED_RESPONSE]: { schema: Sealed } },
        },
        400: errorAnswer("The sealed request cannot be opened (`cannot_open`)"),
        413: errorAnswer(
          `The sealed request is over ${MAX_SEALED_REQUEST_BYTES} bytes (\`too_large\`)`,
        ),
        415: errorAnswer(`The body is not ${SEALED_REQUEST} (\`unsupported_media_type\`)`),
        503: {
          ...errorAnswer("Every slot is taken (`busy`); ask again after `Retry-After`"),
          headers: z.object({
            "retry-after": z.string().openapi({ description: "Seconds to wait, e.g. `1`" }),
          }),
        },
      },
      handler: (c) => this.#relay(c.req.raw),
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

  async #attest(nonceHex: string): Promise<unknown> {
    if (this.ad.tier !== "tee") {
      throw new ServiceError("not_tee", `Provider ${this.ad.provider} is in the verified tier`);
    }
    const attester = this.#options.attester ?? mockAttester;
    const nonce = hexToBytes(`0x${nonceHex}`);
    const bundle = await attester({
      nonce,
      servingKey: this.#options.servingKey,
      servingPublicKey: this.#options.servingKey.publicKey,
      keyConfig: this.#keyConfig(),
      endorse: (nonce) => this.#endorse(nonce),
      models: attestedModels(this.ad.models),
    });
    this.#receipts.remember(nonce, bundle);
    return bundle;
  }

  async #relay(req: Request): Promise<Response> {
    const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
    if (type !== SEALED_REQUEST || !req.body) {
      throw new ServiceError("unsupported_media_type", `Expected a ${SEALED_REQUEST} body`);
    }
    // A slot first: a busy provider says so at once, before reading or opening anything.
    const slot = this.#load.reserve();
    if (!slot) {
      await req.body.cancel().catch(() => {});
      return Response.json({
        error: {
          code: "busy",
          message:
            `All ${this.#load.maxConcurrency} slots of provider ${this.ad.provider} are busy`,
        },
      }, {
        status: 503,
        headers: { "retry-after": String(BUSY_RETRY_AFTER_SECONDS), "cache-control": "no-store" },
      });
    }
    try {
      return await this.#serveRelay(req, req.body, slot);
    } catch (error) {
      slot.release();
      throw error;
    }
  }

  /** Reads, opens and answers a sealed request in the slot taken for it. */
  async #serveRelay(
    req: Request,
    body: ReadableStream<Uint8Array>,
    slot: Slot,
  ): Promise<Response> {
    // Sealed requests are small (a chat body): read it whole, bounded, to know its prefix.
    const bytes = await readAllLimited(body, MAX_SEALED_REQUEST_BYTES);
    if (bytes === null) {
      throw new ServiceError(
        "too_large",
        `A sealed request is at most ${MAX_SEALED_REQUEST_BYTES} bytes`,
      );
    }
    const receiptKey = this.#options.receiptKey === undefined
      ? this.#options.servingKey
      : this.#options.receiptKey;
    const opened = this.ad.tier === "tee" && receiptKey
      ? withReceipts(await this.#open(bytes), {
        book: this.#receipts,
        servingKey: receiptKey,
        log: this.#log,
      })
      : await this.#open(bytes);
    const headers = { "content-type": opened.responseContentType, "cache-control": "no-store" };
    const till = this.till;
    // Authenticated: now refuse what is stale or already served (header + enc identify it).
    const verdict = this.#replays.admit(
      bytes.subarray(0, SEALED_PREFIX_BYTES),
      opened.headers.get("date"),
      this.#clock(),
    );
    if (!verdict.ok) {
      slot.release();
      this.#log(`refused a request: ${verdict.message}`);
      const error = {
        message: verdict.message,
        type: "invalid_request_error",
        param: null,
        code: verdict.reason,
      };
      return new Response(
        opened.respond({
          status: 400,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ error }),
        }),
        { headers },
      );
    }
    if (till && isGenerationPath(opened.path)) {
      slot.release();
      return new Response(answerGeneration(opened, till, sealedErrors(opened)), { headers });
    }
    const sealed = await answerChat(opened, {
      engine: this.#options.engine,
      prices: this.#prices,
      load: this.#load,
      log: this.#log,
      slot,
      // The requester (the gateway) going away stops the engine and frees the slot.
      signal: req.signal,
      keepAliveMs: this.#options.wholeKeepAliveMs,
      admit: till &&
        ((request) =>
          till.admit(opened.headers.get(VOUCHER_HEADER), priceRequest(this.ad, request))),
    });
    return new Response(sealed, { headers });
  }

  /**
   * Opens a sealed request (held whole: without a stream per step); says only that it could not
   * be, never which step failed.
   */
  async #open(bytes: Uint8Array): Promise<OpenedHttpRequest> {
    try {
      return await openHttpRequestBytes(this.#options.key, bytes);
    } catch (error) {
      this.#log(`cannot open a sealed request: ${error}`);
      throw new ServiceError("cannot_open", "The sealed request could not be opened");
    }
  }
}
