/**
 * The API key over a real network, with the real clients (issue: "an exposed daemon is an open
 * wallet"). The daemon (`daemon/main.ts`, as users run it) listens on a non-loopback address in
 * front of the devnet, with no key configured: it generates one into its data directory. The
 * real `openai` and `ollama` clients then call it from a second network namespace (a veth pair;
 * this needs root) — or, where namespaces cannot be made, from a non-loopback address of this
 * machine: no key, a spoofed `Host: 127.0.0.1:<port>` and a wrong key are 401, the right key is
 * 200 in both dialects, and repeated failures lock the address out (429). A daemon on loopback
 * still answers both clients without any key.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { Ollama } from "ollama";
import { startDevnet } from "../../../devnet/network.ts";
import { devnetEvm, startDaemon } from "../_e2e.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = fileURLToPath(new URL("../../../daemon/main.ts", import.meta.url));
const CLIENT = fileURLToPath(new URL("./_remote_client.ts", import.meta.url));
const MODEL = "net/verified/devnet/echo";

async function sh(...args: string[]): Promise<{ ok: boolean; text: string }> {
  try {
    const out = await new Deno.Command(args[0], { args: args.slice(1) }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    return { ok: out.success, text };
  } catch (error) {
    return { ok: false, text: String(error) };
  }
}

/** Where the clients run: a second network namespace, or this host's non-loopback address. */
interface Remote extends AsyncDisposable {
  /** The address the daemon binds and the clients call. */
  readonly daemonAddress: string;
  /** The command prefix that runs a program "on the other host". */
  readonly prefix: string[];
  /** How the other host was made, for messages. */
  readonly kind: string;
}

/** A veth pair between this namespace and a new one, on a random /30 of 10.200.0.0/13. */
async function namespace(): Promise<Remote | undefined> {
  if (Deno.build.os !== "linux" || Deno.uid() !== 0) return undefined;
  const id = crypto.getRandomValues(new Uint8Array(3));
  const hex = [...id].map((b) => b.toString(16).padStart(2, "0")).join("");
  const ns = `net16-${hex}`;
  const [host, peer] = [`vh${hex}`, `vn${hex}`];
  const subnet = `10.${200 + (id[0] & 7)}.${id[1]}.${id[2] & 0xfc}`;
  const base = subnet.split(".").map(Number);
  const address = (last: number) => `${base[0]}.${base[1]}.${base[2]}.${base[3] + last}`;
  const steps = [
    ["ip", "netns", "add", ns],
    ["ip", "link", "add", host, "type", "veth", "peer", "name", peer],
    ["ip", "link", "set", peer, "netns", ns],
    ["ip", "addr", "add", `${address(1)}/30`, "dev", host],
    ["ip", "link", "set", host, "up"],
    ["ip", "netns", "exec", ns, "ip", "addr", "add", `${address(2)}/30`, "dev", peer],
    ["ip", "netns", "exec", ns, "ip", "link", "set", peer, "up"],
    ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
  ];
  const cleanup = async () => {
    await sh("ip", "netns", "del", ns);
    await sh("ip", "link", "del", host);
  };
  for (const step of steps) {
    const result = await sh(...step);
    if (!result.ok) {
      await cleanup();
      console.warn(`cannot make a network namespace (${step.join(" ")}: ${result.text.trim()})`);
      return undefined;
    }
  }
  return {
    daemonAddress: address(1),
    prefix: ["ip", "netns", "exec", ns],
    kind: `network namespace ${ns} (${address(2)} → ${address(1)})`,
    [Symbol.asyncDispose]: cleanup,
  };
}

/** This machine's first non-loopback IPv4 address, when it has one. */
function localAddress(): Remote | undefined {
  const found = Deno.networkInterfaces().find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.") && !i.address.startsWith("169.254.")
  );
  if (!found) return undefined;
  return {
    daemonAddress: found.address,
    prefix: [],
    kind: `this host's address ${found.address} on ${found.name}`,
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}

const remote = await namespace() ?? localAddress();

Deno.test({
  name:
    "from another host: no key, a spoofed Host, a wrong key → 401; the right key → 200 with openai and ollama",
  ignore: remote === undefined,
  fn: async () => {
    await using other = remote!;
    const stateDir = await Deno.makeTempDir();
    const dataDir = await Deno.makeTempDir();
    await using devnet = await startDevnet({
      tokenDelayMs: 0,
      verifiedProviders: 1,
      teeProviders: 0,
      gateways: 1,
      stateDir,
    });
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MAIN,
        "--bind",
        `${other.daemonAddress}:0`,
        "--network",
        devnet.profilePath!,
        "--data-dir",
        dataDir,
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let stdout = "";
    try {
      while (!/connected to gateway/.test(stdout)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the daemon exited:\n${stdout}\n${await stderr}`);
        stdout += value;
      }
      const url = stdout.match(/listening on (http:\/\/[0-9.]+:\d+)/)![1];
      console.log(`clients run from ${other.kind}; daemon at ${url}`);
      // The key was generated into the data directory, readable by its owner only, and its
      // path (never the key) was printed.
      const keyPath = `${dataDir}/api-key`;
      assert.match(stdout, new RegExp(`generated a new key in ${keyPath} \\(mode 0600\\)`));
      assert.equal((await Deno.stat(keyPath)).mode! & 0o777, 0o600);
      const key = (await Deno.readTextFile(keyPath)).trim();
      assert.ok(!stdout.includes(key), "the key itself is never printed");

      const run = await new Deno.Command(other.prefix[0] ?? Deno.execPath(), {
        args: [
          ...other.prefix.slice(1),
          ...(other.prefix.length > 0 ? [Deno.execPath()] : []),
          "run",
          "-A",
          CLIENT,
          url,
          key,
        ],
        cwd: ROOT,
        env: { NO_COLOR: "1" },
      }).output();
      const output = new TextDecoder().decode(run.stdout);
      assert.ok(run.success, `${output}\n${new TextDecoder().decode(run.stderr)}`);
      const results = JSON.parse(output.trim().split("\n").at(-1)!);
      const statuses = Object.fromEntries(
        Object.entries(results).map(([name, r]) => [name, (r as { status: number }).status]),
      );
      assert.deepEqual(statuses, {
        openaiRightKey: 200,
        openaiModelsRightKey: 200,
        ollamaRightKey: 200,
        versionNoKey: 200,
        rawNoKey: 401,
        spoofedHostNoKey: 401,
        ollamaNoKey: 401,
        openaiWrongKey: 401,
        ollamaWrongKey: 401,
        openaiRightKeyWhileLockedOut: 429,
      }, `from ${other.kind}: ${output}`);
      // The sealed reply came back through the network: the echo model answered.
      assert.match(results.openaiRightKey.text, /hello from another host/);
      assert.match(results.ollamaRightKey.text, /hello from another host/);
    } finally {
      child.kill("SIGTERM");
      await child.status;
      await reader.cancel().catch(() => {});
      await stderr;
      await Deno.remove(dataDir, { recursive: true });
      await Deno.remove(stateDir, { recursive: true });
    }
  },
});

Deno.test("on loopback no key is needed: openai and ollama get 200 unchanged", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
    gateways: 1,
  });
  await using daemon = await startDaemon({
    gateway: devnet.gateways[0],
    evm: devnetEvm(devnet),
  });
  const messages = [{ role: "user" as const, content: "hello from this host" }];
  const openai = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const completion = await openai.chat.completions.create({ model: MODEL, messages });
  assert.match(completion.choices[0].message.content ?? "", /hello from this host/);
  const ollama = new Ollama({ host: daemon.url });
  const reply = await ollama.chat({ model: MODEL, messages, stream: false });
  assert.match(reply.message.content, /hello from this host/);
});
