/**
 * The devnet gateway: an untrusted relay between daemons and providers
 * (architecture §5, `docs/protocol.md` §3).
 *
 * It lists what its provider directory knows, passes key and attestation requests through
 * to the provider, and relays sealed chat exchanges **byte for byte as they arrive**, in both
 * directions: it never buffers, parses or sees plaintext. It also answers gossip
 * (`GET /v1/gateways`) from its {@linkcode GatewaySet}.
 *
 * A provider's ad `endpoint` is attacker-controlled (anyone can list a provider), so every
 * request to a provider is bounded: the endpoint is re-checked (no credentials, query or
 * fragment; never a link-local, unspecified or reserved address), redirects are never followed
 * (a 3xx is a 502 `provider_error`), a pass-through answer must be JSON and is always served as
 * `application/json`, and error messages never quote a provider's free text.
 *
 * @module
 */

import { comparePrices } from "../chain/mod.ts";
import { type GatewaySet, normalizeGatewayUrl } from "../daemon/mod.ts";
import { readBodyLimited } from "../io/fetch_json.ts";
import { FORBIDDEN_SCOPES, hostScope } from "../io/host_scope.ts";

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
      prices: { input: string; output: string };
      context_length: number;
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

/** Options of {@linkcode createGatewayHandler}. */
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
}

const KEY_MAX_BYTES = 64 * 1024;
const ATTESTATION_MAX_BYTES = 1024 * 1024;
const REQ_MEDIA_TYPE = "message/ohttp-chunked-req";
const RES_MEDIA_TYPE = "message/ohttp-chunked-res";

const routes = {
  gateways: new URLPattern({ pathname: "/v1/gateways" }),
  models: new URLPattern({ pathname: "/v1/models" }),
  providers: new URLPattern({ pathname: "/v1/providers" }),
  key: new URLPattern({ pathname: "/v1/providers/:provider/key" }),
  attestation: new URLPattern({ pathname: "/v1/providers/:provider/attestation" }),
  relay: new URLPattern({ pathname: "/v1/providers/:provider/relay" }),
};

/** An error answer of the network's services (`docs/protocol.md` §0). */
function fail(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

const JSON_HEADERS = {
  "content-type": "application/json",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
} as const;

/**
 * The provider's endpoint, checked again before every request (the directory validates ads, but
 * the gateway does not rely on it): an absolute `http:`/`https:` URL without credentials, query
 * or fragment (`docs/protocol.md` §1), whose host is not link-local, unspecified or otherwise
 * reserved (`io/host_scope.ts`). Returns the base URL without a trailing slash, or the error
 * answer (502 `provider_error`).
 */
function providerBase(entry: DirectoryEntry): string | Response {
  const refuse = (why: string) =>
    fail(502, "provider_error", `Cannot use the endpoint of provider ${entry.provider}: ${why}`);
  const raw = entry.ad.endpoint;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return refuse(`scheme ${url.protocol} is not http: or https:`);
  }
  if (url.username || url.password) return refuse("credentials are not allowed");
  if (url.search || raw.includes("?")) return refuse("a query is not allowed");
  if (url.hash || raw.includes("#")) return refuse("a fragment is not allowed");
  const scope = hostScope(url.hostname);
  if (FORBIDDEN_SCOPES.has(scope)) {
    return refuse(
      `${url.hostname} is a ${scope.replace("_", "-")} address, which is never a provider`,
    );
  }
  return url.href.replace(/\/+$/, "");
}

function isRedirect(response: Response): boolean {
  return response.status >= 300 && response.status < 400;
}

/** A provider's redirect is never followed: 502 `provider_error`, without the target. */
async function refuseRedirect(entry: DirectoryEntry, upstream: Response): Promise<Response> {
  await upstream.body?.cancel().catch(() => {});
  return fail(
    502,
    "provider_error",
    `Provider ${entry.provider} answered ${upstream.status} (a redirect); ` +
      `the gateway does not follow redirects`,
  );
}

/** The upstream's media type when it is a plain token, for messages; never free text. */
function describeType(response: Response): string {
  const type = response.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (!type) return "no content type";
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/.test(type)
    ? type
    : "an invalid content type";
}

/** The `error.code` of a protocol error body, when it is a plain snake_case token. */
function errorCode(body: Uint8Array): string | undefined {
  try {
    const code = JSON.parse(new TextDecoder().decode(body))?.error?.code;
    return typeof code === "string" && /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Builds the gateway's request handler.
 *
 * @example
 * ```ts ignore
 * const handler = createGatewayHandler({ directory, peers, self: "http://127.0.0.1:9201" });
 * Deno.serve({ port: 9201 }, handler);
 * ```
 */
export function createGatewayHandler(options: GatewayOptions): (req: Request) => Promise<Response> {
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? (() => new Date());
  const self = normalizeGatewayUrl(options.self);
  const passThroughTimeoutMs = options.passThroughTimeoutMs ?? 10_000;
  const relayConnectTimeoutMs = options.relayConnectTimeoutMs ?? 30_000;

  const findProvider = (raw: string): DirectoryEntry | Response => {
    const provider = raw.toLowerCase();
    if (!/^0x[0-9a-f]{40}$/.test(provider)) {
      return fail(400, "invalid_provider", `Provider must be a 0x-prefixed address, found ${raw}`);
    }
    const entry = options.directory.entries().find((e) => e.provider === provider);
    return entry ?? fail(404, "unknown_provider", `Provider ${provider} is not known here`);
  };

  /**
   * Fetches a provider's key or attestation and answers with it. The answer is always
   * `application/json` and must parse as JSON: a provider's other content (an HTML page, a text
   * file it was redirected to) is never reflected to the requester.
   */
  const passThrough = async (
    entry: DirectoryEntry,
    path: string,
    maxBytes: number,
  ): Promise<Response> => {
    const base = providerBase(entry);
    if (base instanceof Response) return base;
    const url = `${base}${path}`;
    let upstream: Response;
    let body: Uint8Array<ArrayBuffer>;
    try {
      upstream = await doFetch(url, {
        signal: AbortSignal.timeout(passThroughTimeoutMs),
        headers: { accept: "application/json" },
        redirect: "manual",
      });
      if (isRedirect(upstream)) return await refuseRedirect(entry, upstream);
      body = await readBodyLimited(upstream, { maxBytes, url });
    } catch (error) {
      return fail(
        502,
        "provider_unreachable",
        `Cannot reach provider ${entry.provider}: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    }
    try {
      JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    } catch {
      return fail(
        502,
        "provider_error",
        `Provider ${entry.provider} answered ${upstream.status} with a body that is not JSON ` +
          `(${describeType(upstream)}, ${body.length} bytes); expected JSON`,
      );
    }
    return new Response(body, {
      status: upstream.ok ? 200 : upstream.status,
      headers: { ...JSON_HEADERS },
    });
  };

  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const isGet = req.method === "GET" || req.method === "HEAD";

    if (routes.gateways.test(url)) {
      if (!isGet) return fail(405, "method_not_allowed", "Use GET /v1/gateways");
      const { gateways } = options.peers.toJSON();
      return Response.json({
        gateways: [{ url: self, last_seen: clock().toISOString() }, ...gateways],
      });
    }

    if (routes.models.test(url)) {
      if (!isGet) return fail(405, "method_not_allowed", "Use GET /v1/models");
      return Response.json({ models: listModels(options.directory.entries()) });
    }

    if (routes.providers.test(url)) {
      if (!isGet) return fail(405, "method_not_allowed", "Use GET /v1/providers");
      const model = url.searchParams.get("model");
      const tier = url.searchParams.get("tier");
      if (
        model !== null &&
        !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\/[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(model)
      ) {
        return fail(400, "invalid_model", `model must be maker/model, found ${model}`);
      }
      if (tier !== null && tier !== "verified" && tier !== "tee") {
        return fail(400, "invalid_tier", `tier must be verified or tee, found ${tier}`);
      }
      const providers = options.directory.entries().filter((e) =>
        (tier === null || e.tier === tier) &&
        (model === null || e.ad.models.some((m) => m.id === model))
      );
      return Response.json({
        providers: providers.map((e) => ({
          provider: e.provider,
          tier: e.tier,
          ad: e.ad,
          capacity: e.capacity,
          metrics: e.metrics,
        })),
      });
    }

    const key = routes.key.exec(url);
    if (key) {
      if (!isGet) return fail(405, "method_not_allowed", "Use GET for the key");
      const entry = findProvider(key.pathname.groups.provider!);
      return entry instanceof Response ? entry : await passThrough(entry, "/v1/key", KEY_MAX_BYTES);
    }

    const attestation = routes.attestation.exec(url);
    if (attestation) {
      if (!isGet) return fail(405, "method_not_allowed", "Use GET for the attestation");
      const nonce = url.searchParams.get("nonce") ?? "";
      if (!/^[0-9a-fA-F]{64}$/.test(nonce)) {
        return fail(400, "invalid_nonce", `nonce must be 64 hex characters, found ${nonce.length}`);
      }
      const entry = findProvider(attestation.pathname.groups.provider!);
      return entry instanceof Response
        ? entry
        : await passThrough(entry, `/v1/attestation?nonce=${nonce}`, ATTESTATION_MAX_BYTES);
    }

    const relay = routes.relay.exec(url);
    if (relay) {
      if (req.method !== "POST") return fail(405, "method_not_allowed", "Use POST for the relay");
      const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
      if (type !== REQ_MEDIA_TYPE) {
        return fail(415, "unsupported_media_type", `Expected ${REQ_MEDIA_TYPE}, found ${type}`);
      }
      const entry = findProvider(relay.pathname.groups.provider!);
      if (entry instanceof Response) return entry;
      return await forward(entry, req);
    }

    return fail(404, "not_found", `No route for ${req.method} ${url.pathname}`);
  };

  /** Streams the sealed request to the provider and the sealed reply back, as bytes arrive. */
  async function forward(entry: DirectoryEntry, req: Request): Promise<Response> {
    const base = providerBase(entry);
    if (base instanceof Response) {
      await req.body?.cancel().catch(() => {});
      return base;
    }
    const target = `${base}/v1/relay`;
    // The connect timeout covers only the wait for the provider's response head; after that
    // the exchange may stream for as long as the provider keeps producing. A client that goes
    // away cancels the response stream, which cancels the upstream body in turn (`req.signal`
    // is not used: Deno fires it once a response has been delivered).
    const connect = new AbortController();
    const timer = setTimeout(() => connect.abort(), relayConnectTimeoutMs);
    const signal = connect.signal;
    try {
      const upstream = await doFetch(target, {
        method: "POST",
        body: req.body,
        headers: { "content-type": REQ_MEDIA_TYPE },
        signal,
        redirect: "manual",
        // Required to stream a request body with fetch.
        ...({ duplex: "half" } as Record<string, string>),
      });
      clearTimeout(timer);
      if (isRedirect(upstream)) return await refuseRedirect(entry, upstream);
      const upstreamType = upstream.headers.get("content-type")?.split(";")[0].trim()
        .toLowerCase();
      if (!upstream.ok || upstreamType !== RES_MEDIA_TYPE) {
        // Only the error code of a protocol error body is shown (`docs/protocol.md` §0), never
        // the provider's free text: the gateway does not reflect what a provider says.
        const code = await readBodyLimited(upstream, { maxBytes: 4096, url: target })
          .then(errorCode)
          .catch(() => undefined);
        return fail(
          502,
          "provider_error",
          `Provider ${entry.provider} answered ${upstream.status} (${describeType(upstream)}${
            code === undefined ? "" : `, error code ${code}`
          }); expected 200 ${RES_MEDIA_TYPE}`,
        );
      }
      return new Response(upstream.body, {
        status: 200,
        headers: { "content-type": RES_MEDIA_TYPE, "cache-control": "no-store" },
      });
    } catch (error) {
      clearTimeout(timer);
      const timedOut = connect.signal.aborted;
      return fail(
        timedOut ? 504 : 502,
        timedOut ? "provider_timeout" : "provider_unreachable",
        timedOut
          ? `Provider ${entry.provider} did not start answering within ${relayConnectTimeoutMs} ms`
          : `Cannot relay to provider ${entry.provider}: ${
            error instanceof Error ? error.message : String(error)
          }`,
      );
    }
  }
}

/** The body of `GET /v1/models`: one entry per (model, tier), with the cheapest price. */
export function listModels(entries: readonly DirectoryEntry[]): {
  model: string;
  tier: "verified" | "tee";
  providers: number;
  context_length: number;
  cheapest_price: { input: string; output: string };
}[] {
  const byKey = new Map<
    string,
    {
      model: string;
      tier: "verified" | "tee";
      providers: number;
      context_length: number;
      cheapest_price: { input: string; output: string };
    }
  >();
  for (const entry of entries) {
    for (const m of entry.ad.models) {
      const key = `${entry.tier}\u0000${m.id}`;
      const existing = byKey.get(key);
      if (!existing) {
        byKey.set(key, {
          model: m.id,
          tier: entry.tier,
          providers: 1,
          context_length: m.context_length,
          cheapest_price: { ...m.prices },
        });
        continue;
      }
      existing.providers++;
      existing.context_length = Math.max(existing.context_length, m.context_length);
      if (comparePrices(m.prices, existing.cheapest_price) < 0) {
        existing.cheapest_price = { ...m.prices };
      }
    }
  }
  return [...byKey.values()].sort((a, b) =>
    a.model.localeCompare(b.model) || a.tier.localeCompare(b.tier)
  );
}
