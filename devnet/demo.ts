/**
 * `deno task demo`: the whole system on this machine — the reference network
 * (`network.ts`), then the indexer and the daemon, each started from its real entry point
 * (`indexer/main.ts`, `daemon/main.ts`) with the network profile the devnet wrote
 * (`<state-dir>/network.json`, `--network`) — and prints commands to try that work at once.
 * The daemon checks every verified provider's serving key, ad and bond on the devnet's chain,
 * as it would on any network. Ctrl-C stops everything.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import {
  choice,
  defineSettings,
  SettingError,
  type SettingValues,
  text,
  url,
} from "../settings/mod.ts";
import { ensureAnvil } from "../tools/setup.ts";
import type { Devnet } from "./network.ts";

/** The settings of `deno task demo`: flags, defaults, checks and `--help`. */
export const DEMO_SETTINGS = defineSettings({
  usage: "Usage: deno task demo [options]",
  summary: [
    "Starts the reference network, the indexer and the daemon on loopback, then prints",
    "commands to try. Ctrl-C stops everything.",
  ].join("\n"),
}, {
  ports: {
    flag: "ports",
    kind: choice(["fixed", "ephemeral"]),
    default: "fixed",
    help: "fixed: the daemon on 127.0.0.1:11435, the indexer on 127.0.0.1:8088, the chain on " +
      "8545; ephemeral: free ports.",
  },
  upstream: {
    flag: "upstream",
    kind: url({ example: "http://127.0.0.1:11434" }),
    help: "Providers forward to this OpenAI-compatible server instead of the built-in " +
      "devnet/echo model.",
  },
  upstreamApiKey: {
    env: "NET_UPSTREAM_API_KEY",
    kind: text("<key>"),
    help: "The API key sent to --upstream.",
  },
  stateDir: {
    flag: "state-dir",
    kind: text("<dir>"),
    default: ".devnet",
    help: "devnet.env, the network profile network.json and the daemon's data directory.",
  },
});

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** One service the demo checks before it says `demo: ready`. */
interface Service {
  name: string;
  url: string;
  /** Whether a 200 body means ready (default: any 200). */
  ready?: (body: string) => boolean;
}

/** A child process of the demo: a service it started. */
interface Child extends Service {
  process: Deno.ChildProcess;
}

/** Starts `deno run -A <entry>` with `env`, prefixing its output with its name. */
function spawn(
  name: string,
  entry: string,
  args: string[],
  env: Record<string, string>,
): Deno.ChildProcess {
  // The run-time dependency set, like the demo itself (deno.json's tasks): nothing the tests
  // need is installed for the demo.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", "deno.runtime.json", entry, ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const prefix = async (stream: ReadableStream<Uint8Array>, write: (line: string) => void) => {
    let pending = "";
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      pending += text;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) write(`  [${name}] ${line}`);
    }
  };
  prefix(child.stdout, (l) => console.log(l)).catch(() => {});
  prefix(child.stderr, (l) => console.error(l)).catch(() => {});
  return child;
}

/** Waits until `url` answers 200, or the child exits, or the time is up. */
async function ready(child: Child, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.process.status.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${child.name} exited before it was ready (see its output above)`);
    if (await notReady(child) === undefined) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `${child.name} did not become ready at ${child.url} within ${timeoutMs / 1000} s`,
  );
}

/** Why `service` is not ready now, or undefined when it answers 200 (and its check passes). */
async function notReady(service: Service): Promise<string | undefined> {
  try {
    const res = await fetch(service.url, { signal: AbortSignal.timeout(5000) });
    const body = await res.text();
    if (res.status !== 200) return `${service.name}: ${res.status} at ${service.url}`;
    if (!(service.ready?.(body) ?? true)) return `${service.name}: not ready at ${service.url}`;
    return undefined;
  } catch (error) {
    return `${service.name}: ${(error as Error).message} at ${service.url}`;
  }
}

/**
 * Waits until every service answers 200 in the same pass (the indexer with a snapshot), so
 * `demo: ready` is true when it is printed; throws naming what was not ready at the deadline.
 */
async function allReady(services: readonly Service[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const problems = (await Promise.all(services.map(notReady))).filter((p) => p !== undefined);
    if (problems.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`not every service answers 200: ${problems.join("; ")}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The commands printed once everything is up. */
export function demoCommands(daemon: string, indexer: string): string {
  const host = new URL(daemon).host;
  const chat = (model: string, extra = "") =>
    `curl -s ${daemon}/v1/chat/completions -H 'content-type: application/json' \\\n` +
    `    -d '{"model":"${model}","messages":[{"role":"user","content":"Hello, network!"}]${extra}}'`;
  return [
    "",
    "Everything is up. Try these (copy and paste):",
    "",
    "  # Chat through the network, sealed end to end (verified tier):",
    `  ${chat("net/verified/devnet/echo")}`,
    "",
    "  # The same, streamed:",
    `  ${chat("net/verified/devnet/echo", ',"stream":true').replace("curl -s", "curl -sN")}`,
    "",
    "  # Embeddings, sealed like chat (devnet/embed: a hashed bag of words, 256 dimensions):",
    `  curl -s ${daemon}/v1/embeddings -H 'content-type: application/json' \\\n` +
    `    -d '{"model":"net/verified/devnet/embed","input":["the cat sat on the mat","a dog ran in the park"],"dimensions":8}'`,
    "",
    "  # The OpenAI Responses API (what the Vercel AI SDK's openai(model) posts):",
    `  curl -s ${daemon}/v1/responses -H 'content-type: application/json' \\\n` +
    `    -d '{"model":"net/verified/devnet/echo","input":"Hello from the Responses API"}'`,
    "",
    "  # The TEE tier: the devnet has no TEE hardware, so its providers answer mock",
    "  # attestations and the daemon refuses them (403 attestation_mock):",
    `  ${chat("net/tee/devnet/echo")}`,
    "",
    "  # The Ollama API (any Ollama client works with OLLAMA_HOST=" + host + "):",
    `  curl -s ${daemon}/api/chat -H 'content-type: application/json' -d '{"model":"net/verified/devnet/echo","stream":false,"messages":[{"role":"user","content":"Hi from Ollama"}]}'`,
    "",
    "  # An Ollama client (ollama-js; with the ollama CLI: OLLAMA_HOST=" + host +
    " ollama run net/verified/devnet/echo):",
    `  npx -y deno@2 eval \\`,
    `    'import { Ollama } from "npm:ollama@0.6"; const r = await new Ollama({ host: "${daemon}" }).chat({ model: "net/verified/devnet/echo", messages: [{ role: "user", content: "Hi from ollama-js" }] }); console.log(r.message.content)'`,
    "",
    "  # The OpenAI SDK:",
    `  OPENAI_BASE_URL=${daemon}/v1 OPENAI_API_KEY=unused npx -y deno@2 eval \\`,
    `    'import OpenAI from "npm:openai@7"; const c = await new OpenAI().chat.completions.create({ model: "net/verified/devnet/echo", messages: [{ role: "user", content: "Hi from the SDK" }] }); console.log(c.choices[0].message.content)'`,
    "",
    "  # What was verified, and which gateways the daemon knows:",
    `  curl -s ${daemon}/v1/verdicts`,
    `  curl -s ${daemon}/v1/gateways`,
    "",
    "  # The indexer:",
    `  curl -s ${indexer}/stats`,
    `  curl -s ${indexer}/models`,
    `  curl -s ${indexer}/providers`,
    "",
    "Ctrl-C stops everything.",
  ].join("\n");
}

type DemoSettings = SettingValues<typeof DEMO_SETTINGS.specs>;

/** A free loopback port. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * The environment of the demo's children: the user's, without any `NET_*` variable (the
 * network profile says everything; a stray `NET_EVM_REGISTRY` in a shell must not override it).
 */
function childEnv(): Record<string, string> {
  return {
    ...Object.fromEntries(
      Object.entries(Deno.env.toObject()).filter(([name]) => !name.startsWith("NET_")),
    ),
    NO_COLOR: "1",
  };
}

/**
 * Starts the indexer, refreshing every 5 s and counting settlements at 2 confirmations, its
 * settlement history in the demo's state directory (a fresh chain each run, so never the
 * user's own history store).
 */
function startIndexer(profile: string, options: { port: number; stateDir: string }): Child {
  return {
    name: "indexer",
    url: `http://127.0.0.1:${options.port}/health`,
    // Ready when it serves a snapshot (a 200 from /health says so).
    ready: (body) => JSON.parse(body).snapshot !== null,
    process: spawn("indexer", "indexer/main.ts", ["--network", profile], {
      ...childEnv(),
      NET_STATS_BIND: `127.0.0.1:${options.port}`,
      NET_STATS_DATA_DIR: `${options.stateDir}/indexer`,
      NET_STATS_REFRESH_SECS: "5",
      NET_STATS_CONFIRMATIONS: "2",
    }),
  };
}

/** Starts the daemon on the devnet's profile: its chain, contracts and gateways. */
function startDaemon(profile: string, options: { port: number; stateDir: string }): Child {
  return {
    name: "daemon",
    url: `http://127.0.0.1:${options.port}/`,
    process: spawn("daemon", "daemon/main.ts", ["--network", profile], {
      ...childEnv(),
      NET_DAEMON_BIND: `127.0.0.1:${options.port}`,
      NET_DATA_DIR: `${options.stateDir}/daemon`,
    }),
  };
}

/** What is running, and how to stop all of it (once). */
class Demo {
  readonly children: Child[] = [];
  devnet: Devnet | undefined;
  stopping = false;

  /**
   * Stops everything in the order that leaves nothing failing, then exits with `code`: the
   * devnet's background work (its block miner writes to the chain every second), the indexer
   * and the daemon, then the devnet's servers and its chain (anvil is in its own process
   * group: a terminal's Ctrl-C reaches the demo and its children, not the chain they read).
   */
  async stop(code: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    console.log("demo: stopping…");
    await this.devnet?.stopBackground();
    for (const child of this.children) {
      try {
        child.process.kill("SIGTERM");
      } catch { /* already exited */ }
    }
    await Promise.all(this.children.map((c) => c.process.status));
    await this.devnet?.stop();
    console.log("demo: stopped");
    Deno.exit(code);
  }
}

/** Starts everything in order, prints the commands, and stops when any child dies. */
async function run(demo: Demo, settings: DemoSettings): Promise<void> {
  const fixed = settings.ports === "fixed";
  console.log("demo: [1/4] installing tools (anvil) if needed…");
  // anvil's install (npm, a process of its own) runs while this process loads the network's
  // code (viem and the rest: seconds of CPU on a first run), so on a busy machine the two
  // overlap instead of adding up.
  const [, { startDevnet }, { describeDevnet }] = await Promise.all([
    ensureAnvil((l) => console.log(`demo: ${l}`)),
    import("./network.ts"),
    import("./main.ts"),
  ]);
  console.log("demo: [2/4] starting the reference network…");
  const devnet = demo.devnet = await startDevnet({
    ports: settings.ports,
    stateDir: settings.stateDir,
    upstream: settings.upstream,
    upstreamApiKey: settings.upstreamApiKey,
    detachChain: true,
    log: (l) => console.log(`  [devnet] ${l}`),
  });
  console.log(describeDevnet(devnet, settings.stateDir));
  const indexerPort = fixed ? 8088 : freePort();
  const daemonPort = fixed ? 11435 : freePort();
  const profile = devnet.profilePath!;

  // The indexer and the daemon need only the network, not each other: they start side by side.
  console.log("demo: [3/4] starting the indexer and the daemon…");
  // The chain is new each run: the last run's settlement history must not meet it.
  await Deno.remove(`${settings.stateDir}/indexer`, { recursive: true }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  const indexer = startIndexer(profile, { port: indexerPort, stateDir: settings.stateDir });
  demo.children.push(indexer);
  const daemon = startDaemon(profile, { port: daemonPort, stateDir: settings.stateDir });
  demo.children.push(daemon);
  await Promise.all([ready(indexer, 60_000), ready(daemon, 60_000)]);
  console.log("demo: [4/4] waiting until every service answers…");
  await allReady([
    ...devnet.gateways.map((url, i) => ({ name: `gateway ${i}`, url: `${url}/v1/gateways` })),
    ...devnet.routers.map((url, i) => ({ name: `router ${i}`, url: `${url}/v1/ads` })),
    ...devnet.providers.map((p, i) => ({ name: `provider ${i}`, url: `${p.url}/v1/ad` })),
    indexer,
    daemon,
  ], 60_000);

  console.log(demoCommands(`http://127.0.0.1:${daemonPort}`, `http://127.0.0.1:${indexerPort}`));
  console.log("\ndemo: ready");
  // Any child that dies takes the demo down with it, visibly.
  const first = await Promise.race(
    demo.children.map((c) => c.process.status.then((s) => ({ c, s }))),
  );
  if (!demo.stopping) {
    console.error(`demo: ${first.c.name} exited with code ${first.s.code}; stopping`);
    await demo.stop(1);
  }
}

/** Runs `deno task demo`; exits 2 on bad settings, 1 when something fails to start. */
async function main(args: readonly string[], env: Record<string, string>): Promise<void> {
  let settings: DemoSettings;
  try {
    const parsed = DEMO_SETTINGS.parse(args, env);
    if (parsed.help) {
      console.log(parsed.text);
      Deno.exit(0);
    }
    settings = parsed.values;
  } catch (error) {
    if (!(error instanceof SettingError)) throw error;
    console.error(`demo: ${error.message}`);
    Deno.exit(2);
  }
  const demo = new Demo();
  Deno.addSignalListener("SIGINT", () => demo.stop(0));
  if (Deno.build.os !== "windows") {
    Deno.addSignalListener("SIGTERM", () => demo.stop(0));
    // A closed terminal: the chain is in its own process group and would outlive it.
    Deno.addSignalListener("SIGHUP", () => demo.stop(0));
  }
  try {
    await run(demo, settings);
  } catch (error) {
    console.error(`demo: cannot start: ${error instanceof Error ? error.message : error}`);
    await demo.stop(1);
  }
}

if (import.meta.main) await main(Deno.args, Deno.env.toObject());
