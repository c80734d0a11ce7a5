/**
 * The consumer daemon: `deno run -A daemon/main.ts` (or `deno task daemon`). Serves the
 * OpenAI and Ollama APIs on `127.0.0.1:11435` and forwards each request, sealed end to end,
 * to a provider of the network. `--help` lists the options; see `docs/daemon.md`.
 *
 * @module
 */

import type { ApiKey } from "./auth.ts";
import { type DaemonConfig, parseDaemonConfig } from "./config.ts";
import { createDaemon } from "./daemon.ts";
import { type DaemonServer, serveDaemon } from "./serve.ts";

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

if (import.meta.main) {
  let parsed;
  try {
    parsed = parseDaemonConfig(Deno.args, Deno.env.toObject());
  } catch (error) {
    console.error(`daemon: ${error instanceof Error ? error.message : error}`);
    Deno.exit(2);
  }
  if (parsed.help) {
    console.log(parsed.text);
    Deno.exit(0);
  }
  const { config } = parsed;
  let handler: (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> = () =>
    Promise.resolve(new Response("starting", { status: 503 }));
  let server: DaemonServer;
  try {
    // Not Deno.serve: it does not tell a waiting request that its client left (serve.ts).
    server = await serveDaemon((req, info) => handler(req, info), {
      hostname: config.bind.hostname,
      port: config.bind.port,
    });
  } catch (error) {
    console.error(
      `daemon: cannot listen on ${config.bind.hostname}:${config.bind.port}: ${
        error instanceof Error ? error.message : error
      }`,
    );
    Deno.exit(1);
  }
  const port = server.port;
  let daemon;
  try {
    daemon = createDaemon(config, { port });
  } catch (error) {
    console.error(`daemon: cannot start: ${error instanceof Error ? error.message : error}`);
    await server.close();
    Deno.exit(2);
  }
  let apiKey: ApiKey | null;
  try {
    apiKey = await daemon.apiKey;
  } catch (error) {
    console.error(`daemon: cannot start: ${error instanceof Error ? error.message : error}`);
    await server.shutdown();
    Deno.exit(2);
  }
  handler = daemon.handler;
  const host = config.bind.hostname.includes(":")
    ? `[${config.bind.hostname}]`
    : config.bind.hostname;
  console.log(`daemon: listening on http://${host}:${port}`);
  console.log(`daemon:   OpenAI clients: OPENAI_BASE_URL=http://${host}:${port}/v1`);
  console.log(`daemon:   Ollama clients: OLLAMA_HOST=${host}:${port}`);
  console.log(authLine(config, apiKey));
  console.log(
    `daemon: gateways: ${
      config.gateway ? `pinned ${config.gateway}` : "discovered"
    } (peers asked again every 5 min)`,
  );
  console.log(trustLine(config));
  // Connect in the background so the first request does not wait for it; then gossip.
  daemon.resolver.resolve().then(
    (url) => console.log(`daemon: connected to gateway ${url}`),
    (error) =>
      console.warn(`daemon: ${error instanceof Error ? error.message.split("\n")[0] : error}`),
  );
  daemon.start();
  // Graceful: stop accepting, let replies in flight finish (at most 30 s), then exit.
  const finished = Promise.withResolvers<void>();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    console.log("daemon: stopping…");
    daemon.close();
    server.shutdown().then(finished.resolve);
    Deno.unrefTimer(setTimeout(() => {
      console.warn("daemon: replies still running after 30 s; exiting anyway");
      Deno.exit(0);
    }, 30_000));
  };
  Deno.addSignalListener("SIGINT", stop);
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGTERM", stop);
  await finished.promise;
  console.log("daemon: stopped");
  Deno.exit(0);
}
