/**
 * The containers' health probe. The Deno image has no `curl`, so the `HEALTHCHECK` of the
 * `Dockerfile` and the health checks of `compose.yaml` run this file:
 *
 * ```sh
 * # the indexer, wherever NET_STATS_BIND puts it (the image's HEALTHCHECK)
 * deno run --no-config --allow-net --allow-env=NET_STATS_BIND packaging/healthcheck.ts --indexer
 * # the daemon, wherever NET_DAEMON_BIND puts it
 * deno run --no-config --allow-net --allow-env=NET_DAEMON_BIND packaging/healthcheck.ts --daemon
 * # the devnet, from the network profile it writes once everything serves (its first gateway)
 * deno run --no-config --allow-net --allow-read packaging/healthcheck.ts --profile .devnet/network.json
 * # any URL (the devnet's gateway)
 * deno run --no-config --allow-net packaging/healthcheck.ts http://127.0.0.1:8701/v1/gateways
 * ```
 *
 * It asks `GET <url>` once and exits `0` when the answer is a 2xx within the timeout, `1`
 * otherwise (Docker's healthy / unhealthy), printing one line that says what it saw.
 * `--indexer` probes `/health` on the indexer's bind address (`0.0.0.0` and `::` are probed
 * on loopback) and also requires the settlement history to be usable: `/health` stays 200
 * when the history store cannot be used (the live data is still served), the container does
 * not (`settlements.stopped`). `--daemon` probes `/api/version`, which needs no API key. It
 * imports no package, so it starts without the project's dependencies (`--no-config`).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { parseBindAddress } from "../io/bind_address.ts";

/** The services `--indexer` and `--daemon` probe: their bind variable, default and path. */
export const SERVICES: Readonly<
  Record<"indexer" | "daemon", { variable: string; fallback: string; path: string }>
> = Object.freeze({
  indexer: { variable: "NET_STATS_BIND", fallback: "0.0.0.0:8088", path: "/health" },
  daemon: { variable: "NET_DAEMON_BIND", fallback: "127.0.0.1:11435", path: "/api/version" },
});

/** The URL to probe for a service, from its bind address (`host:port`). */
export function serviceUrl(service: keyof typeof SERVICES, bind: string | undefined): string {
  const { fallback, path, variable } = SERVICES[service];
  const value = bind?.trim() || fallback;
  let address;
  try {
    address = parseBindAddress(value);
  } catch (error) {
    throw new Error(`${variable} is "${value}": ${(error as Error).message}`);
  }
  if (address.port === 0) {
    throw new Error(`${variable} is "${value}": a free port cannot be probed`);
  }
  const host = address.hostname === "0.0.0.0"
    ? "127.0.0.1"
    : address.hostname === "::"
    ? "[::1]"
    : address.hostname.includes(":")
    ? `[${address.hostname}]`
    : address.hostname;
  return `http://${host}:${address.port}${path}`;
}

/**
 * Why an indexer's `/health` body says its settlement history cannot be used, or null when
 * it can: it stopped for good (`settlements.stopped`), or its last pass failed because the
 * store cannot be reached or opened (`store_unavailable`: an unwritable data directory, a
 * database that does not answer).
 */
export function indexerBodyProblem(body: string): string | null {
  let parsed: {
    settlements?: {
      stopped?: unknown;
      failing?: unknown;
      last_error?: { code?: unknown; message?: unknown } | null;
    };
  };
  try {
    parsed = JSON.parse(body);
  } catch {
    return "the body is not JSON";
  }
  const history = parsed?.settlements;
  if (typeof history?.stopped === "string") {
    return `the settlement history stopped: ${history.stopped}`;
  }
  if (history?.failing === true && history.last_error?.code === "store_unavailable") {
    return `the settlement history store is unavailable: ${history.last_error.message}`;
  }
  return null;
}

/** The URL `--profile` probes: the first gateway's `/v1/gateways` of a network profile file. */
export async function profileUrl(path: string): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new Error(`cannot read the network profile ${path}: ${(error as Error).message}`);
  }
  const gateway = (JSON.parse(text) as { gateways?: unknown }).gateways;
  if (!Array.isArray(gateway) || typeof gateway[0] !== "string") {
    throw new Error(`the network profile ${path} lists no gateway`);
  }
  return new URL("/v1/gateways", gateway[0]).href;
}

/** The default time allowed for the whole answer, in milliseconds. */
export const DEFAULT_PROBE_TIMEOUT_MS = 3_000;

/** Options of {@linkcode probeHealth}. */
export interface ProbeHealthOptions {
  /** Time allowed for the status line and the body, in milliseconds. @default {3000} */
  timeoutMs?: number;
  /** The fetch to use. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** A 2xx body that is still unhealthy: returns why, or null. @default {none} */
  bodyProblem?: (body: string) => string | null;
}

/** What {@linkcode probeHealth} saw. */
export interface ProbeResult {
  /** A 2xx answer arrived in time. */
  readonly healthy: boolean;
  /** One line for the container's health log, e.g. `200 from http://…/health`. */
  readonly line: string;
}

/** Asks `GET url` once; healthy means a 2xx status and a complete body within the timeout. */
export async function probeHealth(
  url: string,
  options: ProbeHealthOptions = {},
): Promise<ProbeResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const doFetch = options.fetch ?? fetch;
  try {
    const response = await doFetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await response.text();
    const summary = body.replace(/\s+/g, " ").slice(0, 200);
    const problem = response.ok ? options.bodyProblem?.(body) ?? null : null;
    if (problem !== null) {
      return { healthy: false, line: `unhealthy: ${response.status} from ${url}: ${problem}` };
    }
    return response.ok ? { healthy: true, line: `healthy: ${response.status} from ${url}` } : {
      healthy: false,
      line: `unhealthy: ${response.status} from ${url}${summary ? `: ${summary}` : ""}`,
    };
  } catch (error) {
    const why = error instanceof DOMException && error.name === "TimeoutError"
      ? `no complete answer within ${timeoutMs} ms`
      : error instanceof Error
      ? error.message
      : String(error);
    return { healthy: false, line: `unhealthy: ${url} did not answer: ${why}` };
  }
}

/** A profile that cannot be read yet: unhealthy (exit 1), not a usage error. */
class ProbeFailure extends Error {}

const USAGE = "Usage: deno run --no-config --allow-net [--allow-env] packaging/healthcheck.ts " +
  "[--timeout-ms <n>] --indexer | --daemon | --profile <file> | <url>";

/** Runs the probe for a command line; returns the exit code (0 healthy, 1 not, 2 usage). */
export async function healthcheckMain(
  args: readonly string[],
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): Promise<number> {
  let url: string;
  let timeoutMs: number;
  let bodyProblem: ProbeHealthOptions["bodyProblem"];
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        "timeout-ms": { type: "string" },
        indexer: { type: "boolean" },
        daemon: { type: "boolean" },
        profile: { type: "string" },
      },
    });
    const service = values.indexer ? "indexer" : values.daemon ? "daemon" : undefined;
    const wanted = (values.indexer ? 1 : 0) + (values.daemon ? 1 : 0) +
      (values.profile !== undefined ? 1 : 0) + positionals.length;
    if (wanted !== 1) {
      throw new Error(`expected one of --indexer, --daemon, --profile or a URL, found ${wanted}`);
    }
    if (values.profile !== undefined) {
      url = await profileUrl(values.profile).catch((error) => {
        throw new ProbeFailure(error.message);
      });
    } else if (service) {
      url = serviceUrl(service, env(SERVICES[service].variable));
      if (service === "indexer") bodyProblem = indexerBodyProblem;
    } else {
      url = new URL(positionals[0]).href;
    }
    const timeout = values["timeout-ms"] ?? String(DEFAULT_PROBE_TIMEOUT_MS);
    timeoutMs = Number(timeout);
    if (!/^\d{1,6}$/.test(timeout) || timeoutMs < 1) {
      throw new Error(`--timeout-ms must be a whole number of milliseconds, found "${timeout}"`);
    }
  } catch (error) {
    if (error instanceof ProbeFailure) {
      console.error(`healthcheck: unhealthy: ${error.message}`);
      return 1;
    }
    console.error(`healthcheck: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const result = await probeHealth(url, { timeoutMs, bodyProblem });
  (result.healthy ? console.log : console.error)(`healthcheck: ${result.line}`);
  return result.healthy ? 0 : 1;
}

if (import.meta.main) {
  Deno.exit(await healthcheckMain(Deno.args));
}
