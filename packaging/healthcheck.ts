/**
 * The containers' health probe. The Deno image has no `curl`, so the `HEALTHCHECK` of the
 * `Dockerfile` and the health checks of `compose.yaml` run this file:
 *
 * ```sh
 * deno run --no-config --allow-net=127.0.0.1:8088 packaging/healthcheck.ts http://127.0.0.1:8088/health
 * ```
 *
 * It asks `GET <url>` once and exits `0` when the answer is a 2xx within the timeout, `1`
 * otherwise (Docker's healthy / unhealthy), printing one line that says what it saw. It
 * imports nothing but `node:util`, so it starts without the project's dependencies
 * (`--no-config`).
 *
 * @module
 */

import { parseArgs } from "node:util";

/** The default time allowed for the whole answer, in milliseconds. */
export const DEFAULT_PROBE_TIMEOUT_MS = 3_000;

/** Options of {@linkcode probeHealth}. */
export interface ProbeHealthOptions {
  /** Time allowed for the status line and the body, in milliseconds. @default {3000} */
  timeoutMs?: number;
  /** The fetch to use. @default {globalThis.fetch} */
  fetch?: typeof fetch;
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

/** Runs the probe for a command line; returns the exit code (0 healthy, 1 not, 2 usage). */
export async function healthcheckMain(args: readonly string[]): Promise<number> {
  let url: string;
  let timeoutMs: number;
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: { "timeout-ms": { type: "string" } },
    });
    if (positionals.length !== 1) {
      throw new Error(`expected one URL, found ${positionals.length} arguments`);
    }
    url = new URL(positionals[0]).href;
    const timeout = values["timeout-ms"] ?? String(DEFAULT_PROBE_TIMEOUT_MS);
    timeoutMs = Number(timeout);
    if (!/^\d{1,6}$/.test(timeout) || timeoutMs < 1) {
      throw new Error(`--timeout-ms must be a whole number of milliseconds, found "${timeout}"`);
    }
  } catch (error) {
    console.error(
      `healthcheck: ${(error as Error).message}\n` +
        "Usage: deno run --no-config --allow-net packaging/healthcheck.ts [--timeout-ms <n>] <url>",
    );
    return 2;
  }
  const result = await probeHealth(url, { timeoutMs });
  (result.healthy ? console.log : console.error)(`healthcheck: ${result.line}`);
  return result.healthy ? 0 : 1;
}

if (import.meta.main) {
  Deno.exit(await healthcheckMain(Deno.args));
}
