/**
 * `deno task demo`: the whole system on this machine — the reference network
 * (`network.ts`), then the indexer and the daemon, each started from its real entry point
 * (`indexer/main.ts`, `daemon/main.ts`) with the devnet's environment — and prints commands
 * to try that work at once. Ctrl-C stops everything.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { ensureAnvil } from "../tools/setup.ts";
import { describeDevnet } from "./main.ts";
import { type Devnet, startDevnet } from "./network.ts";

/** The `--help` text. */
export const DEMO_HELP = `Usage: deno task demo [options]

Starts the reference network, the indexer and the daemon on loopback, then prints commands
to try. Ctrl-C stops everything.

Options:
  --ports fixed|ephemeral   fixed: the daemon on 127.0.0.1:11435, the indexer on
                            127.0.0.1:8088, the chain on 8545 (default); ephemeral: free ports
  --upstream <url>          providers forward to this OpenAI-compatible server instead of
                            the built-in devnet/echo model
  --state-dir <dir>         devnet.env and the daemon's data directory (default: .devnet)
  -h, --help                show this text
`;

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A child process of the demo. */
interface Child {
  name: string;
  process: Deno.ChildProcess;
  url: string;
}

/** Starts `deno run -A <entry>` with `env`, prefixing its output with its name. */
function spawn(
  name: string,
  entry: string,
  args: string[],
  env: Record<string, string>,
): Deno.ChildProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", entry, ...args],
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
    try {
      const res = await fetch(child.url, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `${child.name} did not become ready at ${child.url} within ${timeoutMs / 1000} s`,
  );
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
    "  # The TEE tier: the devnet has no TEE hardware, so its providers answer mock",
    "  # attestations and the daemon refuses them (502 attestation_mock):",
    `  ${chat("net/tee/devnet/echo")}`,
    "",
    "  # The Ollama API (any Ollama client works with OLLAMA_HOST=" + host + "):",
    `  curl -s ${daemon}/api/chat -d '{"model":"net/verified/devnet/echo","stream":false,"messages":[{"role":"user","content":"Hi from Ollama"}]}'`,
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

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      ports: { type: "string", default: "fixed" },
      upstream: { type: "string" },
      "state-dir": { type: "string", default: ".devnet" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(DEMO_HELP);
    Deno.exit(0);
  }
  if (values.ports !== "fixed" && values.ports !== "ephemeral") {
    console.error(
      `demo: --ports must be fixed or ephemeral, found ${JSON.stringify(values.ports)}`,
    );
    Deno.exit(2);
  }
  const fixed = values.ports === "fixed";
  const stateDir = values["state-dir"];
  const children: Child[] = [];
  let devnet: Devnet | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log("demo: stopping…");
    for (const child of children) {
      try {
        child.process.kill("SIGTERM");
      } catch { /* already exited */ }
    }
    await Promise.all(children.map((c) => c.process.status));
    await devnet?.stop();
    console.log("demo: stopped");
    Deno.exit(code);
  };
  Deno.addSignalListener("SIGINT", () => stop(0));
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGTERM", () => stop(0));

  try {
    console.log("demo: [1/4] installing tools (anvil) if needed…");
    await ensureAnvil((l) => console.log(`demo: ${l}`));
    console.log("demo: [2/4] starting the reference network…");
    devnet = await startDevnet({
      ports: values.ports,
      stateDir,
      upstream: values.upstream,
      log: (l) => console.log(`  [devnet] ${l}`),
    });
    console.log(describeDevnet(devnet, stateDir));

    const free = () => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      listener.close();
      return port;
    };
    const indexerPort = fixed ? 8088 : free();
    const daemonPort = fixed ? 11435 : free();
    const base = { ...Deno.env.toObject(), ...devnet.env, NO_COLOR: "1" };

    console.log("demo: [3/4] starting the indexer…");
    const indexer: Child = {
      name: "indexer",
      url: `http://127.0.0.1:${indexerPort}/health`,
      process: spawn("indexer", "indexer/main.ts", [], {
        ...base,
        NET_STATS_BIND: `127.0.0.1:${indexerPort}`,
        NET_STATS_REFRESH_SECS: "5",
        NET_STATS_CONFIRMATIONS: "2",
      }),
    };
    children.push(indexer);
    await ready(indexer, 60_000);

    console.log("demo: [4/4] starting the daemon…");
    const daemonArgs = devnet.gateways.length > 0 && !fixed
      ? ["--gateway", devnet.gateways[0]]
      : [];
    const daemon: Child = {
      name: "daemon",
      url: `http://127.0.0.1:${daemonPort}/`,
      process: spawn("daemon", "daemon/main.ts", daemonArgs, {
        ...base,
        NET_DAEMON_BIND: `127.0.0.1:${daemonPort}`,
        NET_DATA_DIR: `${stateDir}/daemon`,
        NET_EVM_RPC_URL: devnet.rpcUrl,
        NET_EVM_REGISTRY: devnet.contracts.registry,
        NET_EVM_STAKING: devnet.contracts.staking,
      }),
    };
    children.push(daemon);
    await ready(daemon, 60_000);

    console.log(demoCommands(`http://127.0.0.1:${daemonPort}`, `http://127.0.0.1:${indexerPort}`));
    console.log("\ndemo: ready");
    // Any child that dies takes the demo down with it, visibly.
    const first = await Promise.race(children.map((c) => c.process.status.then((s) => ({ c, s }))));
    if (!stopping) {
      console.error(`demo: ${first.c.name} exited with code ${first.s.code}; stopping`);
      await stop(1);
    }
  } catch (error) {
    console.error(`demo: cannot start: ${error instanceof Error ? error.message : error}`);
    await stop(1);
  }
}
