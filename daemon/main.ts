/**
 * The consumer daemon: `deno run -A daemon/main.ts` (or `deno task daemon`). Serves the
 * OpenAI, Anthropic and Ollama APIs on `127.0.0.1:11435` and forwards each request, sealed end to end,
 * to a provider of the network. `--help` lists the options; see `docs/daemon.md`.
 *
 * Every line goes through the structured logger (`io/log.ts`) in the format of `--log-format`
 * (`human`, today's lines, or `json`, one object a line): the announcements (`listening on`,
 * the clients' settings, trust, `stopping…`, `stopped`) on stdout, everything else on stderr.
 * No line carries a prompt or a reply: the parts log codes, providers and gateways, never a
 * request's or a reply's content.
 *
 * Exit codes: 0 after a graceful shutdown or `--help`, 2 for a configuration error (the
 * message names the flag or variable) or a daemon that cannot start (an unreadable key file),
 * 1 when the listen address cannot be bound.
 *
 * @module
 */

import { NetError } from "../errors.ts";
import { listenUrls } from "../http/mod.ts";
import { logFormatHint, type Logger, type ProgramLogs, programLogs } from "../io/log.ts";
import {
  type ApiKey,
  createDaemon,
  type Daemon,
  type DaemonConfig,
  type DaemonServer,
  parseDaemonConfig,
  serveDaemon,
} from "./service/mod.ts";

/** The start-up lines about trust: where keys are checked, or loudly that they are not. */
function trustLine(config: DaemonConfig): string {
  const measurements = config.measurementsFile ? `; measurements ${config.measurementsFile}` : "";
  if (!config.evm) {
    return "daemon: trust: NO CHAIN (--insecure-gateway-keys): verified-tier keys are whatever " +
      "the gateway lists, so a malicious gateway can read your prompts; every verdict says " +
      `"gateway-listed key"${measurements}`;
  }
  const { network, evm } = config;
  return `daemon: trust: network ${network?.name} (${network?.source}): chain ${
    evm.rpcUrls.join(", ")
  }${
    evm.chainId === null ? "" : ` (id ${evm.chainId})`
  }, Registry ${evm.registry}, Staking ${evm.staking}; serving keys, ads and bonds are checked on chain (grace ${config.chainGraceSecs} s while ` +
    `it is unreachable)${measurements}`;
}

/** The start-up line about the API key. */
function authLine(config: DaemonConfig, key: ApiKey | null): string {
  if (!key) {
    return config.auth.apiKey || config.auth.apiKeyFile
      ? "daemon: an API key is configured but not required on loopback (add --require-api-key " +
        "to require it)"
      : "daemon: no API key required (loopback only)";
  }
  const where = key.source === "NET_DAEMON_API_KEY"
    ? "the value of NET_DAEMON_API_KEY"
    : key.source;
  return `daemon: API key required on every endpoint but GET /, /api/version and /v1/gateways ` +
    `(Authorization: Bearer <key>); ${
      key.generated ? `generated a new key in ${where} (mode 0600)` : `the key is ${where}`
    }`;
}

/**
 * The `log` of the daemon's parts on `log`: a line alone, or a known failure (a `NetError`)
 * with its description, is a warning; anything else is an error, with its stack.
 */
export function daemonLog(log: Logger): (message: string, error?: unknown) => void {
  return (message, error) => {
    if (error === undefined) log.warn(message);
    else if (error instanceof NetError) log.warn(message, undefined, error);
    else log.error(message, undefined, error);
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The start-up announcements, on stdout: the addresses clients can use, never `0.0.0.0`. */
function announce(config: DaemonConfig, port: number, apiKey: ApiKey | null, out: Logger): void {
  const urls = listenUrls({ hostname: config.bind.hostname, port });
  for (const url of urls) out.info(`daemon: listening on ${url}`);
  // Beyond loopback, the first address other hosts can use; on loopback, loopback.
  const url = urls.find((u) => !/^http:\/\/(127\.|\[::1\])/.test(u)) ?? urls[0];
  out.info(`daemon:   OpenAI clients: OPENAI_BASE_URL=${url}/v1`);
  out.info(`daemon:   Ollama clients: OLLAMA_HOST=${url.slice("http://".length)}`);
  out.info(`daemon:   Anthropic clients: ANTHROPIC_BASE_URL=${url}`);
  out.info(authLine(config, apiKey));
  out.info(
    `daemon: gateways: ${
      config.gateway ? `pinned ${config.gateway}` : "discovered"
    } (peers asked again every 5 min)`,
  );
  out.info(trustLine(config));
}

/** Runs until SIGINT/SIGTERM; graceful: replies in flight finish (at most 30 s). */
async function runUntilStopped(daemon: Daemon, server: DaemonServer, logs: ProgramLogs) {
  // Connect in the background so the first request does not wait for it; then gossip.
  daemon.resolver.resolve().then(
    (url) => logs.out.info(`daemon: connected to gateway ${url}`),
    (error) => logs.err.warn(`daemon: ${describe(error).split("\n")[0]}`),
  );
  daemon.start();
  const finished = Promise.withResolvers<void>();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    logs.out.info("daemon: stopping…");
    Promise.all([daemon.close(), server.shutdown()]).then(() => finished.resolve());
    Deno.unrefTimer(setTimeout(() => {
      logs.err.warn("daemon: replies still running after 30 s; exiting anyway");
      Deno.exit(0);
    }, 30_000));
  };
  Deno.addSignalListener("SIGINT", stop);
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGTERM", stop);
  await finished.promise;
  logs.out.info("daemon: stopped");
}

/** Runs the daemon until SIGINT/SIGTERM; returns the process exit code. */
export async function main(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  let parsed;
  try {
    parsed = parseDaemonConfig(args, env);
  } catch (error) {
    const logs = programLogs(logFormatHint(args, env, "NET_DAEMON_LOG_FORMAT"), "daemon");
    logs.err.error(`daemon: ${describe(error)}`);
    return 2;
  }
  if (parsed.help) {
    console.log(parsed.text);
    return 0;
  }
  const { config } = parsed;
  const logs = programLogs(config.logFormat, "daemon");
  let handler: (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> = () =>
    Promise.resolve(new Response("starting", { status: 503 }));
  let server: DaemonServer;
  try {
    // Not Deno.serve: no header or idle timeout, and it does not tell a waiting request that
    // its client left (http/serve.ts).
    server = await serveDaemon((req, info) => handler(req, info), {
      hostname: config.bind.hostname,
      port: config.bind.port,
      onError: (error) => logs.err.error("daemon: cannot answer", undefined, error),
    });
  } catch (error) {
    logs.err.error(
      `daemon: cannot listen on ${config.bind.hostname}:${config.bind.port}: ${describe(error)}`,
    );
    return 1;
  }
  const port = server.port;
  let daemon;
  try {
    daemon = createDaemon(config, { port, log: daemonLog(logs.err) });
  } catch (error) {
    logs.err.error(`daemon: cannot start: ${describe(error)}`);
    await server.close();
    return 2;
  }
  let apiKey: ApiKey | null;
  try {
    apiKey = await daemon.apiKey;
  } catch (error) {
    logs.err.error(`daemon: cannot start: ${describe(error)}`);
    await server.shutdown();
    return 2;
  }
  handler = daemon.handler;
  announce(config, port, apiKey, logs.out);
  await runUntilStopped(daemon, server, logs);
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, Deno.env.toObject()));
}
