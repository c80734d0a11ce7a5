/**
 * How the devnet gateway reaches a provider it does not trust (`docs/protocol.md` §3,
 * "Forwarding rules"). A provider's ad `endpoint` is attacker-controlled (anyone can list a
 * provider), so every request to a provider is bounded: the endpoint is re-checked (no
 * credentials, query or fragment; never a link-local, unspecified or reserved address),
 * redirects are never followed (a 3xx is a 502 `provider_error`), a pass-through answer must be
 * JSON and is always served as `application/json`, error messages never quote a provider's free
 * text, and a relay that does not start answering in time is a 504 `provider_timeout`.
 *
 * Every refusal is thrown as a {@linkcode ServiceError}; the gateway's one error mapping
 * answers it.
 *
 * @module
 */

import { readBodyLimited } from "../io/fetch_json.ts";
import { FORBIDDEN_SCOPES, hostScope } from "../io/host_scope.ts";
import { ServiceError } from "./_errors.ts";
import { SEALED_REQUEST, SEALED_RESPONSE } from "./_wire.ts";

/** Where a provider is: its address (for messages) and its ad's endpoint. */
export interface ProviderTarget {
  /** Provider address, lower case. */
  provider: string;
  /** The ad's `endpoint`, as the provider published it. */
  endpoint: string;
}

/** What bounds every request to a provider. */
export interface ForwardOptions {
  /** The fetch used to reach providers. */
  fetch: typeof fetch;
  /** Time allowed for a key or attestation pass-through, in ms. */
  passThroughTimeoutMs: number;
  /** Time allowed until a provider starts answering a relayed request, in ms. */
  relayConnectTimeoutMs: number;
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
 * reserved (`io/host_scope.ts`).
 *
 * @returns the base URL without a trailing slash.
 * @throws {ServiceError} `provider_error` naming what is wrong with it.
 */
export function providerBase(target: ProviderTarget): string {
  const refuse = (why: string) =>
    new ServiceError(
      "provider_error",
      `Cannot use the endpoint of provider ${target.provider}: ${why}`,
    );
  const raw = target.endpoint;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw refuse(`scheme ${url.protocol} is not http: or https:`);
  }
  if (url.username || url.password) throw refuse("credentials are not allowed");
  if (url.search || raw.includes("?")) throw refuse("a query is not allowed");
  if (url.hash || raw.includes("#")) throw refuse("a fragment is not allowed");
  const scope = hostScope(url.hostname);
  if (FORBIDDEN_SCOPES.has(scope)) {
    throw refuse(
      `${url.hostname} is a ${scope.replace("_", "-")} address, which is never a provider`,
    );
  }
  return url.href.replace(/\/+$/, "");
}

/** A provider's redirect is never followed: 502 `provider_error`, without the target. */
async function refuseRedirect(target: ProviderTarget, upstream: Response): Promise<void> {
  if (upstream.status < 300 || upstream.status >= 400) return;
  await upstream.body?.cancel().catch(() => {});
  throw new ServiceError(
    "provider_error",
    `Provider ${target.provider} answered ${upstream.status} (a redirect); ` +
      `the gateway does not follow redirects`,
  );
}

function mediaType(response: Response): string | undefined {
  return response.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
}

/** The upstream's media type when it is a plain token, for messages; never free text. */
function describeType(response: Response): string {
  const type = mediaType(response);
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

/** Runs one step of reaching a provider; any failure is a 502 `provider_unreachable`. */
async function reach<T>(target: ProviderTarget, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw new ServiceError(
      "provider_unreachable",
      `Cannot reach provider ${target.provider}: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
}

/**
 * Fetches a provider's key or attestation (`path` on its endpoint) and answers with it. The
 * answer is always `application/json` and must parse as JSON: a provider's other content (an
 * HTML page, a text file it was redirected to) is never reflected to the requester. A provider's
 * JSON error keeps its status.
 */
export async function passThrough(
  target: ProviderTarget,
  path: string,
  options: ForwardOptions & { maxBytes: number },
): Promise<Response> {
  const url = `${providerBase(target)}${path}`;
  const upstream = await reach(target, () =>
    options.fetch(url, {
      signal: AbortSignal.timeout(options.passThroughTimeoutMs),
      headers: { accept: "application/json" },
      redirect: "manual",
    }));
  await refuseRedirect(target, upstream);
  const body = await reach(
    target,
    () => readBodyLimited(upstream, { maxBytes: options.maxBytes, url }),
  );
  try {
    JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw new ServiceError(
      "provider_error",
      `Provider ${target.provider} answered ${upstream.status} with a body that is not JSON ` +
        `(${describeType(upstream)}, ${body.length} bytes); expected JSON`,
    );
  }
  return new Response(body, {
    status: upstream.ok ? 200 : upstream.status,
    headers: { ...JSON_HEADERS },
  });
}

/**
 * Streams a sealed request to the provider and its sealed reply back, **byte for byte as they
 * arrive**: nothing is buffered or parsed. The connect timeout covers only the wait for the
 * provider's response head; after that the exchange may stream for as long as the provider
 * keeps producing. A client that goes away aborts the upstream request at once: `signal` (the
 * request's, which fires only when the client disconnects, with the `no-legacy-abort` behaviour
 * this project runs with) aborts it while waiting for the provider's head and while streaming,
 * and cancelling the response stream cancels the upstream body too.
 *
 * A provider at capacity (`503` with error code `busy`) is answered `503 provider_busy` with
 * its `Retry-After` (whole seconds, at most an hour): busy is not a failure of the provider.
 */
export async function relay(
  target: ProviderTarget,
  body: ReadableStream<Uint8Array> | null,
  options: ForwardOptions,
  signal?: AbortSignal,
): Promise<Response> {
  let base: string;
  try {
    base = providerBase(target);
  } catch (error) {
    await body?.cancel().catch(() => {});
    throw error;
  }
  const url = `${base}/v1/relay`;
  // One controller for the upstream request: the connect timeout aborts it while waiting for
  // the head; the requester leaving aborts it at any time. (Not `AbortSignal.any`: its combined
  // signal is held only weakly by its sources, so a later abort could be lost mid-stream.)
  const connect = new AbortController();
  const onGone = () => connect.abort(signal?.reason);
  if (signal?.aborted) onGone();
  else signal?.addEventListener("abort", onGone, { once: true });
  const timer = setTimeout(() => connect.abort(), options.relayConnectTimeoutMs);
  let upstream: Response;
  try {
    upstream = await options.fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": SEALED_REQUEST },
      signal: connect.signal,
      redirect: "manual",
      // Required to stream a request body with fetch.
      ...({ duplex: "half" } as Record<string, string>),
    });
  } catch (error) {
    signal?.removeEventListener("abort", onGone);
    if (signal?.aborted) throw signal.reason;
    throw connect.signal.aborted
      ? new ServiceError(
        "provider_timeout",
        `Provider ${target.provider} did not start answering within ` +
          `${options.relayConnectTimeoutMs} ms`,
      )
      : new ServiceError(
        "provider_unreachable",
        `Cannot relay to provider ${target.provider}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
  } finally {
    clearTimeout(timer);
  }
  if (!upstream.ok) signal?.removeEventListener("abort", onGone);
  await refuseRedirect(target, upstream);
  if (upstream.status === 503) {
    const busy = await busyAnswer(target, upstream, url);
    if (busy) return busy;
  }
  if (!upstream.ok || mediaType(upstream) !== SEALED_RESPONSE) {
    throw await relayRefusal(target, upstream, url);
  }
  return new Response(upstream.body, {
    status: 200,
    headers: { "content-type": SEALED_RESPONSE, "cache-control": "no-store" },
  });
}

/**
 * A provider's "at capacity" answer (`503`, error code `busy`) as the gateway's `503
 * provider_busy`, with the provider's `Retry-After` when it is a plain number of seconds (else
 * 1 s); `undefined` for any other 503, which is a failure.
 */
async function busyAnswer(
  target: ProviderTarget,
  upstream: Response,
  url: string,
): Promise<Response | undefined> {
  const body = await readBodyLimited(upstream, { maxBytes: 4096, url }).catch(() => undefined);
  if (body === undefined || errorCode(body) !== "busy") return undefined;
  const said = upstream.headers.get("retry-after")?.trim() ?? "";
  const seconds = /^\d{1,4}$/.test(said) ? Math.min(3600, Number(said)) : 1;
  return new Response(
    JSON.stringify({
      error: {
        code: "provider_busy",
        message: `Provider ${target.provider} is at capacity; try another or ask again later`,
      },
    }),
    { status: 503, headers: { ...JSON_HEADERS, "retry-after": String(seconds) } },
  );
}

/**
 * A provider's unusable relay answer as a 502 `provider_error`. Only the error code of a
 * protocol error body is shown (`docs/protocol.md` §0), never the provider's free text: the
 * gateway does not reflect what a provider says.
 */
async function relayRefusal(
  target: ProviderTarget,
  upstream: Response,
  url: string,
): Promise<ServiceError> {
  const code = await readBodyLimited(upstream, { maxBytes: 4096, url })
    .then(errorCode)
    .catch(() => undefined);
  return new ServiceError(
    "provider_error",
    `Provider ${target.provider} answered ${upstream.status} (${describeType(upstream)}${
      code === undefined ? "" : `, error code ${code}`
    }); expected 200 ${SEALED_RESPONSE}`,
  );
}
