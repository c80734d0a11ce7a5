/**
 * Smoke test of the container image: runs its three programs the way a user would, each in
 * its own container on the host's network (free loopback ports, never the defaults), and
 * checks what a user sees. `bash packaging/ci.sh` runs it after building the image; a
 * developer runs the same:
 *
 * ```sh
 * deno run -A packaging/smoke.ts [--image net-consumer:0.1.0]
 * ```
 *
 * 1. `indexer|daemon|devnet --help` exit 0 and print their usage.
 * 2. The devnet (read-only root filesystem, ephemeral ports, its state in a host directory).
 * 3. The indexer on the devnet's profile, as a plain `docker run` (read-only root, the image's
 *    data directory on its volume): `/health` 200 with a snapshot, `/stats` 200, the settlement
 *    history written to the volume, and the image's HEALTHCHECK `healthy` on a non-default
 *    bind.
 * 4. An indexer whose history store is unusable (a data directory it cannot write): `/health`
 *    still 200, the HEALTHCHECK `unhealthy`.
 * 5. The daemon on the devnet's profile: a sealed chat in the OpenAI and the Ollama dialect.
 * 6. `docker stop` ends the daemon, the indexers and the devnet within 10 s, each with exit 0;
 *    with the chain gone, the first indexer's HEALTHCHECK turns `unhealthy` before that.
 *
 * Every container and volume it starts is removed at the end, also on failure.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  consumerOf,
  containerState,
  depositCommand,
  docker,
  exec,
  get,
  GiveUp,
  step,
  waitFor,
} from "./_docker.ts";
import { freeHostPort } from "./host_port.ts";

const LABEL = "net-consumer.smoke";

/** One smoke run's containers, all labelled with its id. */
class Run {
  readonly id = `${Deno.pid}-${Date.now().toString(36)}`;
  readonly names: string[] = [];
  constructor(readonly image: string) {}

  /** `docker run -d` a program of the image on the host network; returns the name. */
  async start(
    role: string,
    program: string[],
    options: { env?: Record<string, string>; flags?: string[] } = {},
  ): Promise<string> {
    const name = `net-consumer-smoke-${this.id}-${role}`;
    this.names.push(name);
    const env = Object.entries(options.env ?? {}).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    await docker(
      "run",
      "-d",
      "--name",
      name,
      "--label",
      `${LABEL}=${this.id}`,
      "--network",
      "host",
      // The image's HEALTHCHECK command, probed more often than in production.
      "--health-interval",
      "2s",
      "--health-start-period",
      "20s",
      ...env,
      ...(options.flags ?? []),
      this.image,
      ...program,
    );
    return name;
  }

  /** Removes every container of the run and its anonymous volumes. */
  async cleanup(): Promise<void> {
    const ids = (await docker("ps", "-aq", "--filter", `label=${LABEL}=${this.id}`))
      .split("\n").filter(Boolean);
    if (ids.length > 0) await exec("docker", ["rm", "-f", "-v", ...ids]);
  }
}

/** `docker stop` within 10 s and exit code 0, or an error with the container's last output. */
async function stopCleanly(name: string): Promise<number> {
  const started = performance.now();
  await docker("stop", "--time", "10", name);
  const secs = (performance.now() - started) / 1000;
  const state = await containerState(name);
  if (state.exitCode !== 0 || secs > 10) {
    const logs = await exec("docker", ["logs", "--tail", "20", name]);
    throw new Error(
      `docker stop ${name}: exit code ${state.exitCode} after ${secs.toFixed(1)} s ` +
        `(expected 0 within 10 s)\n${logs.stdout}${logs.stderr}`,
    );
  }
  return secs;
}

/** Waits for the container's health to be `want`. */
function health(name: string, want: string, timeoutMs: number): Promise<string> {
  return waitFor(
    `${name} ${want}`,
    async () => {
      const state = await containerState(name);
      if (state.status !== "running") throw new Error(`it is ${state.status}`);
      if (state.health === want) return state.lastProbe ?? "";
      throw new Error(`health ${state.health}: ${state.lastProbe ?? "no probe yet"}`);
    },
    timeoutMs,
    1000,
  );
}

async function helps(run: Run): Promise<void> {
  for (
    const [program, text] of [
      ["indexer", /^net-consumer indexer:/m],
      ["daemon", /^net-consumer daemon:/m],
      ["devnet", /--public-host <name>/],
    ] as const
  ) {
    const out = await exec("docker", [
      "run",
      "--rm",
      "--network",
      "host",
      run.image,
      program,
      "--help",
    ]);
    if (out.code !== 0 || !text.test(out.stdout)) {
      throw new Error(`${program} --help: exit ${out.code}\n${out.stdout}${out.stderr}`);
    }
    step("smoke", `${program} --help: exit 0`);
  }
}

async function chat(daemon: string): Promise<void> {
  const openai = await get(`${daemon}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "Hi from the smoke test" }],
    }),
  }, 60_000);
  if (openai.status !== 200) throw new Error(`OpenAI chat: ${openai.status} ${openai.body}`);
  const reply = JSON.parse(openai.body).choices?.[0]?.message?.content ?? "";
  if (!reply.includes("Hi from the smoke test")) throw new Error(`OpenAI chat: ${openai.body}`);
  step("smoke", `chat (OpenAI): ${JSON.stringify(reply)}`);
  const ollama = await get(`${daemon}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "net/verified/devnet/echo",
      stream: false,
      messages: [{ role: "user", content: "Hi from Ollama" }],
    }),
  }, 60_000);
  if (ollama.status !== 200) throw new Error(`Ollama chat: ${ollama.status} ${ollama.body}`);
  const said = JSON.parse(ollama.body).message?.content ?? "";
  if (!said.includes("Hi from Ollama")) throw new Error(`Ollama chat: ${ollama.body}`);
  step("smoke", `chat (Ollama): ${JSON.stringify(said)}`);
}

/** The smoke test; throws on the first failure. */
export async function smoke(image: string): Promise<void> {
  const run = new Run(image);
  const state = await Deno.makeTempDir({ prefix: "net-consumer-smoke-" });
  // The image's user (uid 1993) writes the devnet's profile here.
  await Deno.chmod(state, 0o777);
  const readOnly = ["--read-only", "--tmpfs", "/tmp"];
  try {
    await helps(run);

    const devnet = await run.start("devnet", [
      "devnet",
      "--ports",
      "ephemeral",
      "--state-dir",
      "/state",
    ], { flags: [...readOnly, "-v", `${state}:/state`] });
    const profile = await waitFor("the devnet's network.json", async () => {
      const s = await containerState(devnet);
      if (s.status !== "running") throw new Error(`the devnet is ${s.status}`);
      return JSON.parse(await Deno.readTextFile(`${state}/network.json`)) as { gateways: string[] };
    }, 180_000);
    step("smoke", `devnet up (read-only root): gateways ${profile.gateways.join(", ")}`);
    const mount = ["-v", `${state}:/state:ro`];

    const indexerPort = freeHostPort();
    const indexer = await run.start("indexer", ["indexer", "--network", "/state/network.json"], {
      env: {
        NET_STATS_BIND: `127.0.0.1:${indexerPort}`,
        NET_STATS_REFRESH_SECS: "3",
        NET_STATS_STALE_AFTER_SECS: "10",
      },
      flags: [...readOnly, ...mount],
    });
    const base = `http://127.0.0.1:${indexerPort}`;
    await waitFor("the indexer serving a snapshot", async () => {
      const h = await get(`${base}/health`, {}, 5_000);
      return h.status === 200 && JSON.parse(h.body).snapshot ? h : undefined;
    }, 180_000);
    await waitFor("/stats 200", async () => {
      const stats = await get(`${base}/stats`);
      if (stats.status !== 200) throw new Error(`/stats: ${stats.status} ${stats.body}`);
      return stats;
    }, 60_000);
    step("smoke", `indexer: /health 200 with a snapshot, /stats 200 on 127.0.0.1:${indexerPort}`);
    // Creating the embedded store (its database cluster) is the CPU-heaviest start-up step: on
    // a busy 2-core machine it takes minutes, so the wait is long, and ends early on a verdict.
    const written = await waitFor("the history store on the volume", async () => {
      const c = await containerState(indexer);
      if (c.status !== "running") throw new GiveUp(`the indexer is ${c.status} (${c.exitCode})`);
      const h = await get(`${base}/health`, {}, 5_000);
      if (h.status !== 200) throw new Error(`/health ${h.status}: ${h.body.slice(0, 200)}`);
      const s = JSON.parse(h.body).settlements;
      if (s.stopped) throw new GiveUp(`the history stopped: ${s.stopped}`);
      if (s.role === "writer" && s.store?.backend === "embedded") return s.store.location as string;
      throw new Error(`not open yet (role ${s.role}, store ${JSON.stringify(s.store)})`);
    }, 600_000);
    step("smoke", `indexer: settlement history written to ${written} (the image's volume)`);
    step("smoke", `indexer HEALTHCHECK: ${await health(indexer, "healthy", 120_000)}`);

    const brokenPort = freeHostPort();
    const broken = await run.start("indexer-no-store", [
      "indexer",
      "--network",
      "/state/network.json",
    ], {
      env: { NET_STATS_BIND: `127.0.0.1:${brokenPort}`, NET_STATS_DATA_DIR: "/app/not-writable" },
      flags: [...readOnly, ...mount],
    });
    const why = await health(broken, "unhealthy", 180_000);
    const brokenHealth = await get(`http://127.0.0.1:${brokenPort}/health`);
    step(
      "smoke",
      `indexer with an unusable store: /health ${brokenHealth.status}, HEALTHCHECK unhealthy (${why})`,
    );

    const daemonPort = freeHostPort();
    const daemon = await run.start("daemon", ["daemon", "--network", "/state/network.json"], {
      env: { NET_DAEMON_BIND: `127.0.0.1:${daemonPort}` },
      flags: [...readOnly, ...mount],
    });
    const daemonUrl = `http://127.0.0.1:${daemonPort}`;
    await waitFor("the daemon", async () => {
      const v = await get(`${daemonUrl}/api/version`, {}, 5_000);
      return v.status === 200 ? v : undefined;
    }, 120_000);
    const probe = await exec("docker", [
      "exec",
      daemon,
      "deno",
      "run",
      "--no-config",
      "--allow-net",
      "--allow-env=NET_DAEMON_BIND",
      "packaging/healthcheck.ts",
      "--daemon",
    ]);
    if (probe.code !== 0) throw new Error(`healthcheck --daemon: ${probe.stderr}${probe.stdout}`);
    step("smoke", `daemon up (read-only root): ${probe.stdout.trim()}`);
    // Requests are paid by vouchers: the daemon's consumer gets a deposit first.
    const consumer = await consumerOf(daemonUrl);
    await docker("exec", devnet, ...depositCommand("/state/network.json", consumer));
    step("smoke", `devnet: 1 ether deposited for the daemon's consumer ${consumer}`);
    await chat(daemonUrl);

    step("smoke", `docker stop daemon: exit 0 in ${(await stopCleanly(daemon)).toFixed(1)} s`);
    step(
      "smoke",
      `docker stop indexer-no-store: exit 0 in ${(await stopCleanly(broken)).toFixed(1)} s`,
    );
    step("smoke", `docker stop devnet: exit 0 in ${(await stopCleanly(devnet)).toFixed(1)} s`);
    step(
      "smoke",
      `indexer without its chain: HEALTHCHECK ${await health(indexer, "unhealthy", 120_000)}`,
    );
    step("smoke", `docker stop indexer: exit 0 in ${(await stopCleanly(indexer)).toFixed(1)} s`);
  } finally {
    await run.cleanup();
    await Deno.remove(state, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { image: { type: "string", default: "net-consumer:0.1.0" } },
  });
  const started = performance.now();
  try {
    await smoke(values.image!);
    step("smoke", `passed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } catch (error) {
    console.error(`smoke: FAILED: ${error instanceof Error ? error.message : error}`);
    Deno.exit(1);
  }
}
