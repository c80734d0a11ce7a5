/**
 * The daemon's API key: who may use it when it is reachable from other machines.
 *
 * The daemon spends its user's deposit, so a daemon that anyone on the network can call is an
 * open wallet. When it listens on anything but a loopback address (or with
 * `--require-api-key`), every request needs `Authorization: Bearer <key>`, except the few that
 * clients and health probes use to discover it ({@linkcode OPEN_ENDPOINTS}: `GET /`,
 * `GET /api/version`, `GET /v1/gateways`, and CORS preflights). On loopback without the flag
 * nothing is checked, so Ollama clients keep working unchanged (the OpenAI SDKs always send
 * some key; it is ignored there).
 *
 * - **The key** comes from `NET_DAEMON_API_KEY`, or `--api-key-file`, or else is generated on
 *   first need into `<data-dir>/api-key` (32 random bytes, base64url, `net_` prefix; mode 0600,
 *   written atomically) and its path printed ({@linkcode resolveApiKey}).
 * - **Comparison** is in constant time: both sides are hashed (SHA-256) and the digests
 *   compared with no early exit, so neither the key's length nor its first wrong byte shows in
 *   the timing.
 * - **Repeated failures are slowed down** per client address ({@linkcode FailureThrottle}):
 *   after 5 failures an address is locked out for 1 s, doubling up to 5 minutes; while locked
 *   out it gets `429 too_many_auth_failures` with `Retry-After`, and the key it sends is not even
 *   compared. IPv6 clients count by their /64. At most 10,000 addresses are remembered (the
 *   longest idle is forgotten first), each for 15 minutes after its last failure.
 * - **Refusals** are `401 invalid_api_key` in the dialect of the path, with
 *   `WWW-Authenticate: Bearer`.
 *
 * The check is one middleware ({@linkcode apiKeyAuth}) that runs before routing, after the Host
 * and Origin rules, on every request: unknown paths, `/openapi.json`, `/metrics` and `/v1/verdicts`
 * included.
 *
 * @example
 * ```ts
 * import { FailureThrottle, keysMatch } from "./auth.ts";
 *
 * console.assert(keysMatch("net_secret-key-0123456789", "net_secret-key-0123456789"));
 * console.assert(!keysMatch("net_secret-key-0123456789", "net_secret-key-012345678"));
 * const throttle = new FailureThrottle();
 * for (let i = 0; i < 5; i++) throttle.fail("192.0.2.7", new Date(0));
 * console.assert(throttle.lockedFor("192.0.2.7", new Date(0)) === 1000);
 * ```
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import type { MiddlewareHandler } from "hono";
import { join } from "node:path";
import {
  readOrCreateSecret,
  readSecretFile,
  type SecretFileOptions,
} from "../../io/secret_file.ts";
import { SettingError } from "../../settings/mod.ts";
import { DaemonError, setPayer } from "../core/mod.ts";

/** Who must present the API key (`DaemonConfig.auth`). */
export interface AuthConfig {
  /**
   * Whether every request but the discovery endpoints needs `Authorization: Bearer <key>`:
   * always when the daemon listens beyond loopback, and on loopback with `--require-api-key`.
   */
  readonly required: boolean;
  /** The key from `NET_DAEMON_API_KEY`, or `null`. */
  readonly apiKey: string | null;
  /** The file to read the key from (`--api-key-file`), or `null`. */
  readonly apiKeyFile: string | null;
  /** The named keys' file (`--api-keys-file`, `api_keys.ts`), or `null`. @default {null} */
  readonly apiKeysFile?: string | null;
}

/** The requests served without a key: discovery and liveness, nothing that spends or reveals. */
export const OPEN_ENDPOINTS: readonly string[] = Object.freeze([
  "GET /",
  "GET /api/version",
  "GET /v1/gateways",
]);

/** The name of the generated key file in the data directory. */
export const API_KEY_FILE_NAME = "api-key";

/** The shortest API key accepted from the environment or a file. */
export const MIN_API_KEY_LENGTH = 16;

/**
 * Checks an API key: printable ASCII without spaces (it travels in a header), 16 to 512
 * characters.
 *
 * @throws {SettingError} naming `where` the key came from.
 */
export function checkApiKey(key: string, where: string): string {
  if (!/^[\x21-\x7e]+$/.test(key)) {
    throw new SettingError(
      where,
      `Cannot use the API key from ${where}: it must be printable ASCII without spaces`,
    );
  }
  if (key.length < MIN_API_KEY_LENGTH || key.length > 512) {
    throw new SettingError(
      where,
      `Cannot use the API key from ${where}: it is ${key.length} characters; expected ` +
        `${MIN_API_KEY_LENGTH} to 512 (anyone who can reach the daemon can try to guess it)`,
    );
  }
  return key;
}

/** An API key and where it came from. */
export interface ApiKey {
  /** The key. */
  readonly key: string;
  /** `NET_DAEMON_API_KEY`, or the file's path. */
  readonly source: string;
  /** Whether it was generated now (its path is then printed once). */
  readonly generated: boolean;
}

/** Options of {@linkcode resolveApiKey}. */
export type ResolveApiKeyOptions = SecretFileOptions;

/**
 * Returns the key clients must present, or `null` when none is required: `NET_DAEMON_API_KEY`,
 * else `--api-key-file`, else `<dataDir>/api-key`, generated (mode 0600, atomically) when it
 * does not exist yet.
 *
 * @throws {SettingError} for a key that is too short or not printable ASCII, naming its source.
 * @throws {Error} when a key file cannot be read or the generated one not written.
 */
export async function resolveApiKey(
  auth: AuthConfig,
  dataDir: string,
  options: ResolveApiKeyOptions = {},
): Promise<ApiKey | null> {
  if (!auth.required) return null;
  if (auth.apiKey) {
    return {
      key: checkApiKey(auth.apiKey, "NET_DAEMON_API_KEY"),
      source: "NET_DAEMON_API_KEY",
      generated: false,
    };
  }
  if (auth.apiKeyFile) {
    const text = await readSecretFile(auth.apiKeyFile, "API key file", options.log);
    return { key: checkApiKey(text, auth.apiKeyFile), source: auth.apiKeyFile, generated: false };
  }
  const path = join(dataDir, API_KEY_FILE_NAME);
  const { text, generated } = await readOrCreateSecret(
    path,
    "API key file",
    (random) => `net_${base64url(random(32))}`,
    options,
  );
  return { key: checkApiKey(text, path), source: path, generated };
}

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * Whether `given` equals `expected`, in time that depends on neither: both are hashed to 32
 * bytes and every byte of the digests is compared.
 */
export function keysMatch(given: string, expected: string): boolean {
  return matchesDigest(given, digest(expected));
}

const encoder = new TextEncoder();

function digest(key: string): Uint8Array {
  return sha256(encoder.encode(key));
}

/** Whether `given` hashes to `expected`, comparing every byte (no early exit). */
function matchesDigest(given: string, expected: Uint8Array): boolean {
  const actual = digest(given);
  let difference = 0;
  for (let i = 0; i < actual.length; i++) difference |= actual[i] ^ expected[i];
  return difference === 0;
}

/**
 * The name of the key `given` matches, comparing it with every key in constant time (all are
 * compared, whichever matches).
 */
function matchingKey(
  given: string,
  keys: readonly { name: string; digest: Uint8Array }[],
): string | undefined {
  const actual = digest(given);
  let found: string | undefined;
  for (const { name, digest: expected } of keys) {
    let difference = 0;
    for (let i = 0; i < actual.length; i++) difference |= actual[i] ^ expected[i];
    if (difference === 0 && found === undefined) found = name;
  }
  return found;
}

/**
 * Without a required key (loopback): a request that presents one of the named keys is paid
 * under its name; any other request is `local`. Nothing is refused here.
 */
export function payerByKey(
  named: Promise<readonly { name: string; key: string }[]>,
): MiddlewareHandler {
  const keys = named.then((list) => list.map(({ name, key }) => ({ name, digest: digest(key) })));
  keys.catch(() => {});
  return async (c, next) => {
    const given = presentedKey(c.req.raw);
    if (given !== undefined) {
      const found = matchingKey(given, await keys.catch(() => []));
      if (found) setPayer(c.req.raw, found);
    }
    return await next();
  };
}

/** Options of {@linkcode FailureThrottle}. */
export interface FailureThrottleOptions {
  /** Failures an address may make before it is locked out. @default {5} */
  freeFailures?: number;
  /** The first lockout, ms; each further failure doubles it. @default {1000} */
  firstLockoutMs?: number;
  /** The longest lockout, ms. @default {300000} */
  maxLockoutMs?: number;
  /** How long an address's failures are remembered after its last one, ms. @default {900000} */
  forgetAfterMs?: number;
  /** Most addresses remembered; the longest idle goes first. @default {10000} */
  maxClients?: number;
}

interface Failures {
  count: number;
  last: number;
  lockedUntil: number;
}

/**
 * Counts failed key checks per client address, in bounded memory, and says how long an address
 * must wait before its next attempt is looked at. Checks in flight count as failures until they
 * are settled ({@linkcode FailureThrottle.admit}), so many wrong keys sent at once get exactly
 * `freeFailures` comparisons, not more.
 */
export class FailureThrottle {
  readonly #clients = new Map<string, Failures>();
  readonly #pending = new Map<string, number>();
  readonly #options: Required<FailureThrottleOptions>;

  /** Creates an empty throttle. */
  constructor(options: FailureThrottleOptions = {}) {
    this.#options = {
      freeFailures: options.freeFailures ?? 5,
      firstLockoutMs: options.firstLockoutMs ?? 1000,
      maxLockoutMs: options.maxLockoutMs ?? 300_000,
      forgetAfterMs: options.forgetAfterMs ?? 900_000,
      maxClients: options.maxClients ?? 10_000,
    };
  }

  /** How many addresses are remembered. */
  get size(): number {
    return this.#clients.size;
  }

  /** How long `client` is still locked out at `now`, ms (0: it may try). */
  lockedFor(client: string, now: Date): number {
    const entry = this.#current(client, now.getTime());
    return entry ? Math.max(0, entry.lockedUntil - now.getTime()) : 0;
  }

  /** Records a failure of `client`; returns the lockout it now has, ms (0 while still free). */
  fail(client: string, now: Date): number {
    const time = now.getTime();
    const entry = this.#current(client, time) ?? { count: 0, last: time, lockedUntil: 0 };
    entry.count++;
    entry.last = time;
    const over = entry.count - this.#options.freeFailures;
    if (over >= 0) {
      const lockout = Math.min(
        this.#options.firstLockoutMs * 2 ** Math.min(over, 30),
        this.#options.maxLockoutMs,
      );
      entry.lockedUntil = time + lockout;
    }
    // Re-inserted last: the map's order is least recently failed first.
    this.#clients.delete(client);
    this.#clients.set(client, entry);
    while (this.#clients.size > this.#options.maxClients) {
      this.#clients.delete(this.#clients.keys().next().value!);
    }
    return Math.max(0, entry.lockedUntil - time);
  }

  /** Forgets `client`'s failures (it presented the right key). */
  succeed(client: string): void {
    this.#clients.delete(client);
  }

  /**
   * Admits one check of `client`'s key at `now`: 0 when it may be compared (it is then in
   * flight until {@linkcode FailureThrottle.settle}), else how long to wait, ms — while locked
   * out, or while its failures and the checks in flight already make `freeFailures` (those may
   * all fail: the next is not compared before they are settled).
   */
  admit(client: string, now: Date): number {
    const locked = this.lockedFor(client, now);
    if (locked > 0) return locked;
    const pending = this.#pending.get(client) ?? 0;
    const failures = this.#current(client, now.getTime())?.count ?? 0;
    if (pending > 0 && failures + pending >= this.#options.freeFailures) {
      return this.#options.firstLockoutMs;
    }
    this.#pending.set(client, pending + 1);
    return 0;
  }

  /**
   * Settles a check {@linkcode FailureThrottle.admit} let through: `"right"` forgets the
   * address's failures, `"wrong"` records one, `"none"` (it could not be done) neither.
   */
  settle(client: string, outcome: "right" | "wrong" | "none", now: Date): void {
    const pending = (this.#pending.get(client) ?? 1) - 1;
    if (pending > 0) this.#pending.set(client, pending);
    else this.#pending.delete(client);
    if (outcome === "right") this.succeed(client);
    else if (outcome === "wrong") this.fail(client, now);
  }

  #current(client: string, time: number): Failures | undefined {
    const entry = this.#clients.get(client);
    if (entry && time - entry.last > this.#options.forgetAfterMs && time >= entry.lockedUntil) {
      this.#clients.delete(client);
      return undefined;
    }
    return entry;
  }
}

/**
 * The address failures are counted under: an IPv4 address as it is, an IPv6 address by its
 * /64 (one host usually holds a whole /64), `unknown` when the server gave none.
 */
export function clientKey(info: unknown): string {
  const host = (info as { remoteAddr?: { hostname?: unknown } } | undefined)?.remoteAddr?.hostname;
  if (typeof host !== "string" || host === "") return "unknown";
  if (!host.includes(":")) return host;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
  if (mapped) return mapped[1];
  const groups = expandIpv6(host);
  return groups ? `${groups.slice(0, 4).join(":")}::/64` : host;
}

function expandIpv6(host: string): string[] | undefined {
  const [head, tail = ""] = host.split("::");
  const left = head ? head.split(":") : [];
  const right = host.includes("::") ? (tail ? tail.split(":") : []) : [];
  if (!host.includes("::") && left.length !== 8) return undefined;
  const fill = Array(Math.max(0, 8 - left.length - right.length)).fill("0");
  return [...left, ...fill, ...right].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ""));
}

/** Response headers that go with an auth refusal: a `WeakMap` keeps them off the error type. */
const REFUSAL_HEADERS = new WeakMap<DaemonError, Record<string, string>>();

/** The headers a refusal of {@linkcode apiKeyAuth} must be answered with (empty for others). */
export function authRefusalHeaders(error: unknown): Record<string, string> {
  return (error instanceof DaemonError && REFUSAL_HEADERS.get(error)) || {};
}

function refusal(error: DaemonError, headers: Record<string, string>): DaemonError {
  REFUSAL_HEADERS.set(error, headers);
  return error;
}

/** Options of {@linkcode apiKeyAuth}. */
export interface ApiKeyAuthOptions {
  /** The key, or a promise of it (resolved before the first request is checked). */
  key: string | Promise<string>;
  /**
   * Named keys (`api_keys.ts`), each accepted too; a request is paid under the name of the key
   * it presented (the single key's name is `default`).
   *
   * @default {none}
   */
  named?: Promise<readonly { name: string; key: string }[]>;
  /** Counts failures per client. @default {a new FailureThrottle} */
  throttle?: FailureThrottle;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
}

const CHALLENGE = 'Bearer realm="net-consumer daemon"';

/**
 * The key a request presents: `Authorization: Bearer <key>` (OpenAI and Ollama clients), else
 * `x-api-key: <key>` (Anthropic clients); `undefined` when it presents none.
 */
export function presentedKey(request: Request): string | undefined {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.get("authorization") ?? "");
  if (bearer) return bearer[1];
  const key = request.headers.get("x-api-key")?.trim();
  return key ? key : undefined;
}

/** Whether a request is one of {@linkcode OPEN_ENDPOINTS} (`HEAD` counts as `GET`) or a preflight. */
export function isOpenRequest(method: string, path: string): boolean {
  if (method === "OPTIONS") return true;
  const verb = method === "HEAD" ? "GET" : method;
  return OPEN_ENDPOINTS.includes(`${verb} ${path}`);
}

/**
 * The API-key check as one middleware, run before routing: every request but the open ones
 * needs `Authorization: Bearer <key>`.
 *
 * @throws {DaemonError} `invalid_api_key` (401, with `WWW-Authenticate: Bearer`) or
 * `too_many_auth_failures` (429, with `Retry-After`), rendered by the service's error mapping
 * (which adds {@linkcode authRefusalHeaders}).
 */
export function apiKeyAuth(options: ApiKeyAuthOptions): MiddlewareHandler {
  const throttle = options.throttle ?? new FailureThrottle();
  const clock = options.clock ?? (() => new Date());
  // The keys' digests, computed once: each request then hashes only what it sent.
  const expected = Promise.all([
    Promise.resolve(options.key).then((key) => ({ name: "default", digest: digest(key) })),
    Promise.resolve(options.named ?? []).then((named) =>
      named.map(({ name, key }) => ({ name, digest: digest(key) }))
    ),
  ]).then(([single, named]) => [single, ...named]);
  expected.catch(() => {}); // reported by whoever created it; requests then fail closed below
  return async (c, next) => {
    if (isOpenRequest(c.req.method, c.req.path)) return await next();
    const client = clientKey(c.env);
    const now = clock();
    const wait = throttle.admit(client, now);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw refusal(
        new DaemonError(
          "too_many_auth_failures",
          `Too many requests with a wrong or missing API key from this address; try again in ${seconds} s`,
        ),
        { "retry-after": String(seconds), "www-authenticate": CHALLENGE },
      );
    }
    const given = presentedKey(c.req.raw);
    let found: string | undefined;
    try {
      found = given !== undefined ? matchingKey(given, await expected) : undefined;
    } catch (error) {
      throttle.settle(client, "none", now);
      throw error;
    }
    const right = found !== undefined;
    throttle.settle(client, right ? "right" : "wrong", now);
    if (found !== undefined) {
      setPayer(c.req.raw, found);
      return await next();
    }
    const match = given !== undefined;
    throw refusal(
      new DaemonError(
        "invalid_api_key",
        match
          ? "The API key is not valid for this daemon"
          : "This daemon requires an API key: send Authorization: Bearer <key> (or x-api-key: <key>)",
        {
          hints: [
            "The daemon printed where its key is kept when it started (NET_DAEMON_API_KEY, " +
            "--api-key-file, or api-key in its data directory).",
          ],
        },
      ),
      { "www-authenticate": CHALLENGE },
    );
  };
}
