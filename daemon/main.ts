/**
 * The consumer daemon: `deno run -A daemon/main.ts` (or `deno task daemon`). Serves the
 * OpenAI and Ollama APIs on `127.0.0.1:11435` and forwards each request, sealed end to end,
 * to a provider of the network. `--help` lists the options; see `docs/daemon.md`.
 *
 * @module
 */

import { parseDaemonConfig } from "./config.ts";
import { createDaemon } from "./daemon.ts";
import { type DaemonServer, serveDaemon } from "./serve.ts";

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
  let handler: (req: Request) => Promise<Response> = () =>
    Promise.resolve(new Response("starting", { status: 503 }));
  let server: DaemonServer;
  try {
    // Not Deno.serve: it does not tell a waiting request that its client left (serve.ts).
    server = await serveDaemon((req) => handler(req), {
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
  handler = daemon.handler;
  const host = config.bind.hostname.includes(":")
    ? `[${config.bind.hostname}]`
    : config.bind.hostname;
  console.log(`daemon: listening on http://${host}:${port}`);
  console.log(`daemon:   OpenAI clients: OPENAI_BASE_URL=http://${host}:${port}/v1`);
  console.log(`daemon:   Ollama clients: OLLAMA_HOST=${host}:${port}`);
  console.log(
    `daemon: gateways: ${config.gateway ? `pinned ${config.gateway}` : "discovered"}; trust: ${
      config.evm
        ? `chain ${config.evm.rpcUrl}, Registry ${config.evm.registry}`
        : "serving keys as the gateway lists them (set NET_EVM_RPC_URL, NET_EVM_REGISTRY and NET_EVM_STAKING to check them on chain)"
    }${config.measurementsFile ? `; measurements ${config.measurementsFile}` : ""}`,
  );
  // Connect in the background so the first request does not wait for it.
  daemon.resolver.resolve().then(
    (url) => console.log(`daemon: connected to gateway ${url}`),
    (error) =>
      console.warn(`daemon: ${error instanceof Error ? error.message.split("\n")[0] : error}`),
  );
  // Graceful: stop accepting, let replies in flight finish (at most 30 s), then exit.
  const finished = Promise.withResolvers<void>();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    console.log("daemon: stopping…");
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
