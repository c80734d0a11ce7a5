/**
 * Runs `compose.yaml` for real with `compose.host.yaml` (the host's network, free loopback
 * ports): `up indexer` (`/stats` 200), the `daemon` profile (a sealed chat through it), the
 * `replicas` profile (three indexers on PostgreSQL; the writer is killed and the others keep
 * serving), then `down -v`, which must leave no container or volume. Uses `docker compose`
 * (v2) when the engine's CLI has it, else `docker-compose` (Debian's 1.29). `bash
 * packaging/ci.sh` runs it; a developer runs the same:
 *
 * ```sh
 * deno run -A packaging/compose_smoke.ts [--postgres-image postgres:17-bookworm]
 * ```
 *
 * @module
 */

import { parseArgs } from "node:util";
import { consumerOf, depositCommand, docker, exec, get, must, step, waitFor } from "./_docker.ts";
import { freeHostPort } from "./host_port.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** `docker compose` when the CLI has it, else `docker-compose`. */
async function composeCommand(): Promise<string[]> {
  const v2 = await exec("docker", ["compose", "version"]).catch(() => ({ code: 1 }));
  return v2.code === 0 ? ["docker", "compose"] : ["docker-compose"];
}

/** The compose run: its command, project, files and environment. */
class Compose {
  constructor(
    readonly command: string[],
    readonly project: string,
    readonly env: Record<string, string>,
  ) {}

  run(...args: string[]): Promise<string> {
    const [bin, ...pre] = this.command;
    return must(bin, [
      ...pre,
      "-p",
      this.project,
      "-f",
      "compose.yaml",
      "-f",
      "compose.host.yaml",
      ...args,
    ], { env: { ...Deno.env.toObject(), ...this.env }, cwd: ROOT });
  }

  /** Every profile, so `down` and `ps` see every service. */
  all(...args: string[]): Promise<string> {
    return this.run("--profile", "daemon", "--profile", "replicas", ...args);
  }
}

async function serving(url: string): Promise<void> {
  await waitFor(
    `${url}/stats 200`,
    async () => {
      const stats = await get(`${url}/stats`);
      if (stats.status !== 200) throw new Error(`${stats.status} ${stats.body.slice(0, 200)}`);
      return stats;
    },
    240_000,
    1000,
  );
}

/** The compose run; throws on the first failure, always ends with `down -v`. */
export async function composeSmoke(postgresImage: string | undefined): Promise<void> {
  const ports = {
    NET_INDEXER_PORT: freeHostPort(),
    NET_DAEMON_PORT: freeHostPort(),
    NET_REPLICA_PORT_1: freeHostPort(),
    NET_REPLICA_PORT_2: freeHostPort(),
    NET_REPLICA_PORT_3: freeHostPort(),
    NET_POSTGRES_PORT: freeHostPort(),
  };
  const env: Record<string, string> = Object.fromEntries(
    Object.entries(ports).map(([k, v]) => [k, String(v)]),
  );
  if (postgresImage) env.NET_POSTGRES_IMAGE = postgresImage;
  const project = `netsmoke${Deno.pid}`;
  const compose = new Compose(await composeCommand(), project, env);
  step("compose", `${compose.command.join(" ")}, project ${project}`);
  try {
    await compose.run("up", "-d", "indexer");
    await serving(`http://127.0.0.1:${ports.NET_INDEXER_PORT}`);
    step("compose", `up indexer: /stats 200 on 127.0.0.1:${ports.NET_INDEXER_PORT}`);

    await compose.run("--profile", "daemon", "up", "-d", "daemon");
    const daemon = `http://127.0.0.1:${ports.NET_DAEMON_PORT}`;
    // The host-network devnet takes payment by vouchers: the daemon's consumer gets a deposit.
    const consumer = await waitFor("the daemon's account", () => consumerOf(daemon), 180_000, 2000);
    await compose.run(
      "exec",
      "-T",
      "devnet",
      ...depositCommand("/var/lib/net-consumer/devnet/network.json", consumer),
    );
    step("compose", `devnet: 1 ether deposited for the daemon's consumer ${consumer}`);
    const reply = await waitFor(
      "a chat through the daemon",
      async () => {
        const chat = await get(`${daemon}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "net/verified/devnet/echo",
            messages: [{ role: "user", content: "Hi from compose" }],
          }),
        }, 60_000);
        if (chat.status !== 200) throw new Error(`${chat.status} ${chat.body.slice(0, 200)}`);
        return JSON.parse(chat.body).choices[0].message.content as string;
      },
      180_000,
      2000,
    );
    if (!reply.includes("Hi from compose")) throw new Error(`the chat answered ${reply}`);
    step("compose", `--profile daemon: chat answered ${JSON.stringify(reply)}`);

    const replicas = ["indexer-replica-1", "indexer-replica-2", "indexer-replica-3"];
    await compose.run("--profile", "replicas", "up", "-d", ...replicas);
    const urls = [1, 2, 3].map((n) =>
      `http://127.0.0.1:${ports[`NET_REPLICA_PORT_${n}` as keyof typeof ports]}`
    );
    for (const url of urls) await serving(url);
    const roles = async () =>
      await Promise.all(urls.map(async (url) => {
        const health = JSON.parse((await get(`${url}/health`)).body);
        return health.settlements.role as string | null;
      }));
    const writer = await waitFor(
      "one replica writing the history",
      async () => {
        const now = await roles();
        return now.filter((r) => r === "writer").length === 1 ? now.indexOf("writer") : undefined;
      },
      180_000,
      1000,
    );
    step("compose", `--profile replicas: 3 replicas serve /stats, ${replicas[writer]} writes`);
    await compose.run("--profile", "replicas", "kill", replicas[writer]);
    const others = urls.filter((_, i) => i !== writer);
    for (const url of others) await serving(url);
    const taken = await waitFor(
      "another replica taking over the history",
      async () => {
        const now = await Promise.all(others.map(async (url) => {
          const health = JSON.parse((await get(`${url}/health`)).body);
          return health.settlements.role as string | null;
        }));
        return now.includes("writer") ? now : undefined;
      },
      180_000,
      1000,
    );
    step("compose", `writer killed: the other two serve /stats, roles now ${taken.join(", ")}`);
  } finally {
    await compose.all("down", "-v", "--remove-orphans").catch((error) => {
      console.error(`compose: down -v failed: ${error.message}`);
    });
  }
  const left = await docker("ps", "-aq", "--filter", `label=com.docker.compose.project=${project}`);
  const volumes = await docker("volume", "ls", "-q", "--filter", `name=${project}_`);
  if (left.trim() || volumes.trim()) {
    throw new Error(`down -v left containers [${left.trim()}] volumes [${volumes.trim()}]`);
  }
  step("compose", "down -v: no container or volume left");
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { "postgres-image": { type: "string" } },
  });
  const started = performance.now();
  try {
    await composeSmoke(values["postgres-image"]);
    step("compose", `passed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } catch (error) {
    console.error(`compose: FAILED: ${error instanceof Error ? error.message : error}`);
    Deno.exit(1);
  }
}
