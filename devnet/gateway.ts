/**
 * The devnet gateway: an untrusted relay between daemons and providers
 * (architecture §5, `docs/protocol.md` §3).
 *
 * It lists what its provider directory knows, passes key and attestation requests through
 * to the provider, and relays sealed chat exchanges **byte for byte as they arrive**, in both
 * directions: it never buffers, parses or sees plaintext. It also answers gossip
 * (`GET /v1/gateways`) from its {@linkcode GatewaySet}, and serves its OpenAPI document at
 * `GET /openapi.json`.
 *
 * A provider's ad `endpoint` is attacker-controlled (anyone can list a provider), so every
 * request to a provider is bounded (`gateway_forward.ts`): the endpoint is re-checked,
 * redirects are never followed, a pass-through answer must be JSON, error messages never quote
 * a provider's free text, and a relay must start answering within a connect timeout.
 *
 * @module
 */

import { comparePrices } from "../chain/mod.ts";
import { type GatewaySet, normalizeGatewayUrl } from "../daemon/mod.ts";
import { createService, defineRoute, json, type Route, type Service, z } from "../http/mod.ts";
import { VERSION } from "../version.ts";
import { COMMON_RESPONSES, renderNetworkError, ServiceError } from "./_errors.ts";
import {
  AttestationBundle,
  errorAnswer,
  GatewayList,
  matching,
  ModelId,
  ModelList,
  Nonce,
  ProviderKey,
  ProviderList,
  Sealed,
  SEALED_REQUEST,
  SEALED_RESPONSE,
  Tier,
} from "./_wire.ts";
import { type ForwardOptions, passThrough, type ProviderTarget, relay } from "./gateway_forward.ts";

/** A provider as the gateway knows it (from the routers' ads). */
export interface DirectoryEntry {
  /** Provider address, lower case. */
  provider: string;
  /** Tier of the provider. */
  tier: "verified" | "tee";
  /** The ad as published (`docs/protocol.md` §1). */
  ad: {
    endpoint: string;
    models: readonly {
      id: string;
      kind?: "chat" | "embedding";
      prices: { input: string; output: string };
      context_length: number;
      capabilities?: readonly string[];
      embedding_dimensions?: number;
      weights_digest?: string;
    }[];
  };
  /** Live capacity from the router. */
  capacity: unknown;
  /** Live metrics from the router. */
  metrics: unknown;
}

/** Where the gateway learns providers from. */
export interface ProviderDirectory {
  /** The current entries (a snapshot; the directory refreshes itself). */
  entries(): readonly DirectoryEntry[];
}

/**
 * A directory of one provider, always listed with `slots` free (for a gateway in front of one
 * known provider: benchmarks, tests). `ad.provider` and `ad.tier` name it.
 */
export function oneProviderDirectory(
  ad: DirectoryEntry["ad"] & { readonly provider: string; readonly tier: DirectoryEntry["tier"] },
  slots: number,
): ProviderDirectory {
  const entry: DirectoryEntry = {
    provider: ad.provider,
    tier: ad.tier,
    ad,
    capacity: { max_concurrency: slots, available_concurrency: slots },
    metrics: { tokens_per_sec: 0 },
  };
  return { entries: () => [entry] };
}

/** Options of {@linkcode createGatewayService}. */
export interface GatewayOptions {
  /** The providers this gateway can reach. */
  directory: ProviderDirectory;
  /** Known peer gateways (gossip). */
  peers: GatewaySet;
  /** This gateway's own public URL, listed in its gossip answer. */
  self: string;
  /** The fetch used to reach providers. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Time allowed for a key or attestation pass-through, in ms. @default {10000} */
  passThroughTimeoutMs?: number;
  /** Time allowed until a provider starts answering a relayed request, in ms. @default {30000} */
  relayConnectTimeoutMs?: number;
  /** Where unexpected failures are reported. @default {console.warn} */
  log?: (message: string) => void;
}

const KEY_MAX_BYTES = 64 * 1024;
const ATTESTATION_MAX_BYTES = 1024 * 1024;

/** A path's `{provider}`: an address in any letter case (`0X` too). */
const ProviderParam = z.object({
  provider: matching(/^0[xX][0-9a-fA-F]{40}$/, "a 0x-prefixed address (0x and 40 hex digits)")
    .openapi({ description: "The provider's address" }),
});

const PROVIDER_REFUSALS = {
  400: errorAnswer("The provider is not an address (`invalid_provider`)"),
  404: errorAnswer("No such provider here (`unknown_provider`)"),
  502: errorAnswer(
    "The provider's endpoint is refused, it redirected, or it answered something unusable " +
      "(`provider_error`); or it cannot be reached (`provider_unreachable`)",
  ),
} as const;

/** The directory entry of a provider, or a 404 `unknown_provider`. */
function findProvider(directory: ProviderDirectory, raw: string): DirectoryEntry {
  const provider = raw.toLowerCase();
  const entry = directory.entries().find((e) => e.provider === provider);
  if (!entry) {
    throw new ServiceError("unknown_provider", `Provider ${provider} is not known here`);
  }
  return entry;
}

function target(entry: DirectoryEntry): ProviderTarget {
  return { provider: entry.provider, endpoint: entry.ad.endpoint };
}

/** `GET /v1/gateways`: this gateway and the peers it knows (gossip). */
function gossipRoute(peers: GatewaySet, self: string, clock: () => Date): Route {
  return defineRoute({
    method: "get",
    path: "/v1/gateways",
    summary: "This gateway and the peer gateways it knows (gossip)",
    responses: { 200: { description: "The gateways", content: json(GatewayList) } },
    handler: (c) => {
      const { gateways } = peers.toJSON();
      return c.json({ gateways: [{ url: self, last_seen: clock().toISOString() }, ...gateways] });
    },
  });
}

/** `GET /v1/models`: what the directory offers, per model and tier. */
function modelsRoute(directory: ProviderDirectory): Route {
  return defineRoute({
    method: "get",
    path: "/v1/models",
    summary: "The models the known providers serve, per tier, with the cheapest price",
    responses: { 200: { description: "The models", content: json(ModelList) } },
    handler: (c) => c.json({ models: listModels(directory.entries()) }),
  });
}

/** `GET /v1/providers`: the known providers, filtered by model and tier. */
function providersRoute(directory: ProviderDirectory): Route {
  return defineRoute({
    method: "get",
    path: "/v1/providers",
    summary: "The known providers, optionally only those serving a model, in a tier",
    query: z.object({
      model: ModelId.optional().openapi({ description: "Only providers serving this model" }),
      tier: Tier.optional().openapi({ description: "Only providers in this tier" }),
    }),
    responses: {
      200: { description: "The providers", content: json(ProviderList) },
      400: errorAnswer("A bad `model` (`invalid_model`) or `tier` (`invalid_tier`)"),
    },
    handler: (c, { query }) => {
      const { model, tier } = query;
      const providers = directory.entries().filter((e) =>
        (tier === undefined || e.tier === tier) &&
        (model === undefined || e.ad.models.some((m) => m.id === model))
      );
      return c.json({
        providers: providers.map((e) => ({
          provider: e.provider,
          tier: e.tier,
          ad: e.ad,
          capacity: e.capacity,
          metrics: e.metrics,
        })),
      });
    },
  });
}

/** `GET /v1/providers/{provider}/key`: the provider's endorsed key, passed through. */
function keyRoute(directory: ProviderDirectory, forward: ForwardOptions): Route {
  return defineRoute({
    method: "get",
    path: "/v1/providers/{provider}/key",
    summary: "A provider's endorsed HPKE key, fetched from it and passed through",
    description: "The provider's answer, checked only to be JSON (the daemon checks the " +
      "endorsement); a provider's JSON error keeps its status.",
    params: ProviderParam,
    responses: {
      200: { description: "The provider's key", content: json(ProviderKey) },
      ...PROVIDER_REFUSALS,
    },
    handler: (_c, { params }) =>
      passThrough(target(findProvider(directory, params.provider)), "/v1/key", {
        ...forward,
        maxBytes: KEY_MAX_BYTES,
      }),
  });
}

/** `GET /v1/providers/{provider}/attestation?nonce=`: the provider's bundle, passed through. */
function attestationRoute(directory: ProviderDirectory, forward: ForwardOptions): Route {
  return defineRoute({
    method: "get",
    path: "/v1/providers/{provider}/attestation",
    summary: "A TEE provider's attestation bundle for a nonce, fetched from it and passed through",
    description: "The provider's answer, checked only to be JSON (the daemon verifies the " +
      "bundle); a provider's JSON error keeps its status (a verified-tier provider: 404 `not_tee`).",
    params: ProviderParam,
    query: z.object({ nonce: Nonce }),
    responses: {
      200: { description: "The attestation bundle", content: json(AttestationBundle) },
      ...PROVIDER_REFUSALS,
      400: errorAnswer("A bad provider (`invalid_provider`) or nonce (`invalid_nonce`)"),
      404: errorAnswer(
        "No such provider here (`unknown_provider`), or it has no attestation (`not_tee`)",
      ),
    },
    handler: (_c, { params, query }) =>
      passThrough(
        target(findProvider(directory, params.provider)),
        `/v1/attestation?nonce=${query.nonce}`,
        { ...forward, maxBytes: ATTESTATION_MAX_BYTES },
      ),
  });
}

/** `POST /v1/providers/{provider}/relay`: the sealed exchange, streamed both ways. */
function relayRoute(directory: ProviderDirectory, forward: ForwardOptions): Route {
  return defineRoute({
    method: "post",
    path: "/v1/providers/{provider}/relay",
    summary: "Relays a sealed exchange to a provider, byte for byte as it arrives, both ways",
    description: "The body is never read, buffered or parsed here: it streams to the provider, " +
      "and the provider's sealed reply streams back. The provider must start answering within " +
      "the gateway's connect timeout. A requester that goes away aborts the request to the " +
      "provider at once. A provider at capacity is answered `503 provider_busy` with its " +
      "`Retry-After`.",
    params: ProviderParam,
    body: { schema: Sealed, mediaType: SEALED_REQUEST, description: "The sealed request" },
    responses: {
      200: {
        description: "The sealed reply, streamed",
        content: { [SEALED_RESPONSE]: { schema: Sealed } },
      },
      ...PROVIDER_REFUSALS,
      415: errorAnswer(`The body is not ${SEALED_REQUEST} (\`unsupported_media_type\`)`),
      503: {
        ...errorAnswer("The provider is at capacity (`provider_busy`): busy, not broken"),
        headers: z.object({
          "retry-after": z.string().openapi({ description: "The provider's, in seconds" }),
        }),
      },
      504: errorAnswer("The provider did not start answering in time (`provider_timeout`)"),
    },
    handler: (c, { params }) => {
      const type = c.req.header("content-type")?.split(";")[0].trim().toLowerCase();
      if (type !== SEALED_REQUEST) {
        throw new ServiceError(
          "unsupported_media_type",
          `Expected ${SEALED_REQUEST}, found ${type}`,
        );
      }
      const entry = findProvider(directory, params.provider);
      return relay(target(entry), c.req.raw.body, forward, c.req.raw.signal);
    },
  });
}

/**
 * Builds the gateway as a service of the HTTP layer: its six routes (`docs/protocol.md` §3)
 * and its generated `GET /openapi.json`.
 *
 * @example
 * ```ts ignore
 * const gateway = createGatewayService({ directory, peers, self: "http://127.0.0.1:9201" });
 * Deno.serve({ port: 9201 }, gateway.fetch);
 * ```
 */
export function createGatewayService(options: GatewayOptions): Service {
  const clock = options.clock ?? (() => new Date());
  const log = options.log ?? ((message: string) => console.warn(message));
  const forward: ForwardOptions = {
    fetch: options.fetch ?? fetch,
    passThroughTimeoutMs: options.passThroughTimeoutMs ?? 10_000,
    relayConnectTimeoutMs: options.relayConnectTimeoutMs ?? 30_000,
  };
  const { directory } = options;
  return createService({
    info: {
      title: "devnet gateway",
      version: VERSION,
      description: "An untrusted relay between daemons and providers (docs/protocol.md §3).",
    },
    renderError: renderNetworkError("gateway", log),
    commonResponses: COMMON_RESPONSES,
    routes: [
      gossipRoute(options.peers, normalizeGatewayUrl(options.self), clock),
      modelsRoute(directory),
      providersRoute(directory),
      keyRoute(directory, forward),
      attestationRoute(directory, forward),
      relayRoute(directory, forward),
    ],
  });
}

/** The gateway's request handler: {@linkcode createGatewayService}'s `fetch`. */
export function createGatewayHandler(options: GatewayOptions): (req: Request) => Promise<Response> {
  const service = createGatewayService(options);
  return (req) => service.fetch(req);
}

/** One entry of `GET /v1/models`: a model in a tier, with the cheapest price. */
export interface ModelListing {
  /** `maker/model`. */
  model: string;
  /** The tier. */
  tier: "verified" | "tee";
  /** How many known providers serve it in this tier. */
  providers: number;
  /** The largest context length among them. */
  context_length: number;
  /** The cheapest price among them (`docs/protocol.md` §1). */
  cheapest_price: { input: string; output: string };
  /** What it does (`chat` unless every provider's ad says `embedding`). */
  kind: "chat" | "embedding";
  /** What every provider listing it supports (`docs/protocol.md` §1), sorted. */
  capabilities: string[];
  /** An embedding model's vector length: the smallest its providers advertise. */
  embedding_dimensions?: number;
  /** The weights digests its providers' ads name, distinct, lower case, sorted. */
  weights_digests?: string[];
}

/** The body of `GET /v1/models`: one entry per (model, tier), with the cheapest price. */
export function listModels(entries: readonly DirectoryEntry[]): ModelListing[] {
  const byKey = new Map<string, ModelListing>();
  for (const entry of entries) {
    for (const m of entry.ad.models) {
      const key = `${entry.tier}\u0000${m.id}`;
      const existing = byKey.get(key);
      const kind = m.kind ?? "chat";
      if (!existing) {
        byKey.set(key, {
          model: m.id,
          tier: entry.tier,
          providers: 1,
          context_length: m.context_length,
          cheapest_price: { ...m.prices },
          kind,
          capabilities: [...(m.capabilities ?? [])].sort(),
          ...(m.embedding_dimensions ? { embedding_dimensions: m.embedding_dimensions } : {}),
          ...(m.weights_digest ? { weights_digests: [m.weights_digest.toLowerCase()] } : {}),
        });
        continue;
      }
      const digest = m.weights_digest?.toLowerCase();
      if (digest && !existing.weights_digests?.includes(digest)) {
        existing.weights_digests = [...(existing.weights_digests ?? []), digest].sort();
      }
      existing.providers++;
      existing.context_length = Math.max(existing.context_length, m.context_length);
      // Only what every provider supports is listed: a client may land on any of them.
      existing.capabilities = existing.capabilities.filter((c) => m.capabilities?.includes(c));
      if (kind !== existing.kind) {
        existing.kind = "chat"; // providers disagree: not usable as an embedding model
        delete existing.embedding_dimensions;
      }
      if (
        existing.kind === "embedding" && m.embedding_dimensions && existing.embedding_dimensions
      ) {
        existing.embedding_dimensions = Math.min(
          existing.embedding_dimensions,
          m.embedding_dimensions,
        );
      }
      if (comparePrices(m.prices, existing.cheapest_price) < 0) {
        existing.cheapest_price = { ...m.prices };
      }
    }
  }
  return [...byKey.values()].sort((a, b) =>
    a.model.localeCompare(b.model) || a.tier.localeCompare(b.tier)
  );
}
