/**
 * Static checks of `compose.yaml` (no Docker engine exists here, so Compose never runs it),
 * made against the code rather than a copied list: every command is a program of the image's
 * entry point and a task of `deno.json`; the devnet's flags parse with the devnet's own
 * parser; every environment variable is one the indexer's or the daemon's help text names,
 * and the resolved environment parses with their own config parsers; published ports are
 * the bound ports; health checks probe paths those programs serve; dependencies wait for
 * health. One test starts the real devnet exactly as the compose command configures it and
 * proves that a fresh chain gets the contract addresses the indexer uses by default; another
 * opens the history store with the replicas' database URL on a real PostgreSQL set up as the
 * `postgres` service sets it up.
 */

import assert from "node:assert/strict";
import { DAEMON_HELP, parseDaemonConfig } from "../../daemon/service/config.ts";
import { createDaemon } from "../../daemon/service/daemon.ts";
import { parseDevnetArgs } from "../../devnet/main.ts";
import { DEVNET_PORTS, startDevnet } from "../../devnet/network.ts";
import { INDEXER_HELP, parseIndexerConfig } from "../../indexer/config.ts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { initialState } from "../../indexer/state.ts";
import { openStore } from "../../indexer/store/mod.ts";
import { startPostgres } from "../_postgres.ts";
import {
  type Compose,
  denoTasks,
  entrypointPrograms,
  environmentDefaults,
  exists,
  interpolate,
  parseProbe,
  readCompose,
  serviceEnv,
} from "./_files.ts";

const compose: Compose = readCompose();
const services: Record<string, Compose> = compose.services;
// The published ports live in compose.override.yaml (compose.host.yaml replaces them).
for (const [name, service] of Object.entries(readCompose("compose.override.yaml").services)) {
  // A copy: the replicas are one YAML anchor, so one object.
  services[name] = { ...services[name] };
  services[name].ports = (service as Compose).ports.map((p: string) =>
    p.replace(/\$\{NET_[A-Z0-9_]+:-(\d+)\}/, "$1")
  );
}
const REPLICAS = ["indexer-replica-1", "indexer-replica-2", "indexer-replica-3"];
/** The services built from this repository's Dockerfile (the others are third-party images). */
const ours: [string, Compose][] = Object.entries(services).filter(([, s]) => s.build);

/** The variables a program reads, as its `--help` text names them. */
function namesIn(help: string): Set<string> {
  return new Set(help.match(/\bNET_[A-Z0-9_]+\b/g));
}

/** `host_ip:host_port:container_port` → its parts. */
function portMapping(entry: string): { hostIp: string; host: number; container: number } {
  const match = /^(\d+\.\d+\.\d+\.\d+):(\d+):(\d+)$/.exec(entry);
  assert.ok(match, `port mapping ${entry}: expected host_ip:host_port:container_port`);
  return { hostIp: match[1], host: Number(match[2]), container: Number(match[3]) };
}

/** Arguments of the devnet service's command, without the program name. */
function devnetArgs(): string[] {
  const command: string[] = services.devnet.command;
  assert.equal(command[0], "devnet");
  return command.slice(1);
}

Deno.test("compose.yaml: parses; devnet, indexer, a daemon profile and a replicas profile", () => {
  assert.equal(compose.name, undefined, "no top-level name: docker-compose 1.29 refuses it");
  assert.deepEqual(Object.keys(services).toSorted(), [
    "daemon",
    "devnet",
    "indexer",
    ...REPLICAS,
    "postgres",
  ]);
  assert.deepEqual(services.daemon.profiles, ["daemon"], "the daemon is opt-in");
  assert.equal(services.indexer.profiles, undefined, "`up indexer` needs no profile");
  assert.deepEqual(services.postgres.profiles, ["replicas"], "PostgreSQL is opt-in");
  for (const name of REPLICAS) assert.deepEqual(services[name].profiles, ["replicas"]);
  assert.deepEqual(ours.map(([name]) => name).toSorted(), [
    "daemon",
    "devnet",
    "indexer",
    ...REPLICAS,
  ]);
  for (const service of Object.values(services)) assert.equal(service.deploy, undefined, "1.29");
  for (const [name, service] of ours) {
    assert.equal(service.build?.context, ".", `${name} builds the image of this Dockerfile`);
    assert.ok(exists("Dockerfile"));
  }
  // The third-party image is a pinned major version of the official PostgreSQL image.
  assert.match(interpolate(services.postgres.image, {}), /^postgres:\d+(-bookworm)?$/);
  assert.equal(services.postgres.build, undefined);
});

Deno.test("compose.yaml: every command is a program of the image and a task of deno.json", () => {
  const programs = entrypointPrograms();
  const tasks = denoTasks();
  for (const [name, service] of ours) {
    const command: string[] = service.command;
    assert.ok(Array.isArray(command) && command.length > 0, `${name} has a command list`);
    assert.ok(programs.includes(command[0]), `${name}: ${command[0]} is not a program`);
    const task = tasks.get(command[0]);
    assert.ok(task, `${name}: deno.json has no task ${command[0]}`);
    const entry = /deno run -A --config deno\.runtime\.json (\S+\.ts)/.exec(task)?.[1];
    assert.ok(entry && exists(entry), `${name}: the task's entry ${entry} does not exist`);
    assert.doesNotMatch(task, /tools\/setup\.ts/, `${name}: the task installs tools`);
  }
});

Deno.test("compose.yaml: the devnet's flags parse and make it reachable as `devnet`", () => {
  const options = parseDevnetArgs(devnetArgs(), {});
  assert.ok(!("help" in options));
  assert.equal(options.hostname, "0.0.0.0");
  assert.equal(options.publicHost, "devnet", "advertises the service name");
  assert.equal(options.ports, "fixed");
  assert.equal(options.rpcUrl, undefined, "a fresh chain of its own every start");
});

Deno.test("compose.yaml: the indexer's variables are the ones it reads, and they parse", () => {
  const indexer = services.indexer;
  const known = namesIn(INDEXER_HELP);
  for (const name of Object.keys(indexer.environment)) {
    assert.ok(known.has(name), `${name} is not a variable of the indexer (--help)`);
  }
  for (const required of ["NET_EVM_REGISTRY", "NET_EVM_STAKING", "NET_EVM_EMISSION"]) {
    assert.ok(required in indexer.environment, `${required} is missing`);
  }
  // Out of the box: the defaults point at the devnet service.
  const parsed = parseIndexerConfig([], serviceEnv(indexer));
  assert.ok(!parsed.help);
  const { config } = parsed;
  assert.equal(config.rpcUrl, `http://devnet:${DEVNET_PORTS.anvil}`);
  assert.equal(config.bind.hostname, "0.0.0.0");
  assert.equal(config.multicall, null);
  assert.equal(config.refreshSecs, 30, "an empty variable leaves the indexer's default");
  // Published where the host reaches it, on the port it binds.
  const [mapping] = indexer.ports.map(portMapping);
  assert.deepEqual(mapping, { hostIp: "127.0.0.1", host: 8088, container: config.bind.port });
  // Pointed at a real chain: every variable overrides its default.
  const real = {
    NET_EVM_RPC_URL: "https://rpc.example/key",
    NET_EVM_REGISTRY: `0x${"a".repeat(40)}`,
    NET_EVM_STAKING: `0x${"b".repeat(40)}`,
    NET_EVM_EMISSION: `0x${"c".repeat(40)}`,
    NET_EVM_ESCROW: `0x${"d".repeat(40)}`,
    NET_EVM_MULTICALL: `0x${"e".repeat(40)}`,
    NET_STATS_SCAN_FROM_BLOCK: "19000000",
    NET_STATS_REFRESH_SECS: "60",
    NET_STATS_CONFIRMATIONS: "20",
  };
  const overridden = parseIndexerConfig([], serviceEnv(indexer, real));
  assert.ok(!overridden.help);
  assert.equal(overridden.config.rpcUrl, real.NET_EVM_RPC_URL);
  assert.deepEqual(overridden.config.contracts, {
    registry: real.NET_EVM_REGISTRY,
    staking: real.NET_EVM_STAKING,
    emission: real.NET_EVM_EMISSION,
    escrow: real.NET_EVM_ESCROW,
  });
  assert.equal(overridden.config.multicall, real.NET_EVM_MULTICALL);
  assert.equal(overridden.config.scanFromBlock, 19_000_000n);
  assert.equal(overridden.config.refreshSecs, 60);
  assert.equal(overridden.config.confirmations, 20);
});

Deno.test("compose.yaml: the daemon's variables are the ones it reads, and they parse", async () => {
  const daemon = services.daemon;
  const known = namesIn(DAEMON_HELP);
  for (const name of Object.keys(daemon.environment)) {
    assert.ok(known.has(name), `${name} is not a variable of the daemon (--help)`);
  }
  const parsed = parseDaemonConfig([], serviceEnv(daemon), { os: "linux" });
  assert.ok(!parsed.help);
  const { config } = parsed;
  assert.equal(config.gateway, `http://devnet:${DEVNET_PORTS.gateways}`);
  assert.deepEqual(config.evm, {
    rpcUrls: [`http://devnet:${DEVNET_PORTS.anvil}`],
    chainId: null,
    registry: services.indexer.environment.NET_EVM_REGISTRY.match(/0x[0-9a-f]{40}/)[0],
    staking: services.indexer.environment.NET_EVM_STAKING.match(/0x[0-9a-f]{40}/)[0],
    escrow: services.indexer.environment.NET_EVM_ESCROW.match(/0x[0-9a-f]{40}/)[0],
  });
  assert.equal(config.insecureGatewayKeys, false, "trust is anchored on the devnet's chain");
  // Bound to every interface of its container: a key is required (generated when unset).
  assert.deepEqual(config.auth, {
    required: true,
    apiKey: null,
    apiKeyFile: null,
    apiKeysFile: null,
  });
  assert.equal(config.bind.hostname, "0.0.0.0");
  const [mapping] = daemon.ports.map(portMapping);
  assert.deepEqual(mapping, { hostIp: "127.0.0.1", host: 11435, container: config.bind.port });
  // Its data directory is on the volume.
  const [volume] = daemon.volumes.map((v: string) => v.split(":"));
  assert.ok(volume[0] in compose.volumes, `volume ${volume[0]} is declared`);
  assert.ok(config.dataDir.startsWith(`${volume[1]}/`), `${config.dataDir} is on the volume`);
  // The host's clients send Host: 127.0.0.1:11435, which the daemon accepts (DNS-rebinding
  // check against the bound port): the published port must equal the bound one.
  const dataDir = await Deno.makeTempDir();
  try {
    const { handler, apiKey } = createDaemon({ ...config, dataDir }, { port: config.bind.port });
    const response = await handler(new Request(`http://127.0.0.1:${mapping.host}/api/version`));
    assert.equal(response.status, 200, "the health check's path needs no key");
    // Anything else needs the key the daemon generated on its volume.
    const verdicts = `http://127.0.0.1:${mapping.host}/v1/verdicts`;
    const refused = await handler(new Request(verdicts));
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
    const key = await apiKey;
    assert.equal(key?.source, `${dataDir}/api-key`);
    const allowed = await handler(
      new Request(verdicts, { headers: { authorization: `Bearer ${key!.key}` } }),
    );
    assert.equal(allowed.status, 200);
    await allowed.body?.cancel();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("compose.yaml: health checks probe what each program serves, on its port", async () => {
  for (const [name, service] of ours) {
    const probe = parseProbe(service.healthcheck.test);
    assert.ok(exists(probe.script), `${name}: ${probe.script} does not exist`);
    assert.ok(probe.argv.includes("--no-config"), `${name}: the probe starts without deps`);
  }
  const indexer = parseProbe(services.indexer.healthcheck.test);
  assert.equal(indexer.service, "indexer", "the indexer's probe follows NET_STATS_BIND");
  const state = () => initialState(30, 60);
  const health = await createIndexerHandler({ state })(new Request("http://127.0.0.1/health"));
  assert.equal(health.status, 503, "/health answers (503 until the first snapshot)");
  await health.body?.cancel();
  assert.equal(parseProbe(services.daemon.healthcheck.test).service, "daemon");
  const devnet = parseProbe(services.devnet.healthcheck.test);
  assert.equal(devnet.url?.port, String(DEVNET_PORTS.gateways), "gateway 0 of --ports fixed");
  // The replicas probe like the indexer; PostgreSQL's own probe asks for its user and database.
  for (const name of REPLICAS) {
    assert.deepEqual(services[name].healthcheck.test, services.indexer.healthcheck.test);
  }
  const pg = services.postgres;
  const env = serviceEnv(pg);
  assert.deepEqual(pg.healthcheck.test, [
    "CMD",
    "pg_isready",
    `--username=${env.POSTGRES_USER}`,
    `--dbname=${env.POSTGRES_DB}`,
    "--host=127.0.0.1",
  ]);
});

/** The replicas' database URL, and the `postgres` service's settings it must match. */
function replicaDatabase(shell: Record<string, string> = {}) {
  const parsed = parseIndexerConfig([], serviceEnv(services[REPLICAS[0]], shell));
  assert.ok(!parsed.help);
  return { url: new URL(parsed.config.databaseUrl!), pg: serviceEnv(services.postgres, shell) };
}

Deno.test("compose.yaml: the indexer keeps its history on a volume", () => {
  const indexer = services.indexer;
  const parsed = parseIndexerConfig([], serviceEnv(indexer));
  assert.ok(!parsed.help);
  const [volume, mount] = indexer.volumes[0].split(":");
  assert.ok(volume in compose.volumes, `volume ${volume} is declared`);
  assert.ok(parsed.config.dataDir!.startsWith(`${mount}/`), `${parsed.config.dataDir} is on it`);
  assert.equal(parsed.config.databaseUrl, null, "the plain indexer uses the embedded store");
  assert.equal(parsed.config.rebuildHistory, false);
});

Deno.test("compose.yaml: the replicas share PostgreSQL and are otherwise the indexer", () => {
  const indexer = serviceEnv(services.indexer);
  const history = ["NET_STATS_DATA_DIR", "NET_STATS_REBUILD_HISTORY", "NET_STATS_DATABASE_URL"];
  const strip = (env: Record<string, string>) =>
    Object.fromEntries(Object.entries(env).filter(([name]) => !history.includes(name)));
  const known = namesIn(INDEXER_HELP);
  const hostPorts: number[] = [];
  for (const name of REPLICAS) {
    const replica = services[name];
    assert.deepEqual(strip(serviceEnv(replica)), strip(indexer), name);
    for (const variable of Object.keys(replica.environment)) assert.ok(known.has(variable));
    assert.equal(replica.volumes, undefined, "no local history: it is in PostgreSQL");
    const [mapping] = replica.ports.map(portMapping);
    const parsed = parseIndexerConfig([], serviceEnv(replica));
    assert.ok(!parsed.help);
    assert.equal(mapping.container, parsed.config.bind.port);
    hostPorts.push(mapping.host);
    assert.deepEqual(replica.depends_on, {
      devnet: { condition: "service_healthy" },
      postgres: { condition: "service_healthy" },
    });
  }
  assert.equal(new Set(hostPorts).size, REPLICAS.length, "one host port per replica");
  assert.ok(hostPorts.every((port) => port !== 8088), "beside the plain indexer's 8088");
  // The URL names the service, its user, password and database, on PostgreSQL's port.
  const { url, pg } = replicaDatabase();
  assert.equal(url.hostname, "postgres");
  assert.equal(url.port, "5432");
  assert.equal(decodeURIComponent(url.username), pg.POSTGRES_USER);
  assert.equal(decodeURIComponent(url.password), pg.POSTGRES_PASSWORD);
  assert.equal(url.pathname, `/${pg.POSTGRES_DB}`);
  const changed = replicaDatabase({ NET_POSTGRES_PASSWORD: "s3cret" });
  assert.deepEqual([changed.url.password, changed.pg.POSTGRES_PASSWORD], ["s3cret", "s3cret"]);
  // PostgreSQL keeps its data on a volume and is not published on the host.
  assert.equal(services.postgres.ports, undefined);
  const [volume, mount] = services.postgres.volumes[0].split(":");
  assert.ok(volume in compose.volumes);
  assert.equal(mount, "/var/lib/postgresql/data");
});

Deno.test("the replicas' database URL opens the history store on a PostgreSQL set up like the service", async () => {
  await using server = await startPostgres();
  const { url, pg } = replicaDatabase();
  // What the official image does with POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB.
  await server.sql(`CREATE ROLE ${pg.POSTGRES_USER} LOGIN PASSWORD '${pg.POSTGRES_PASSWORD}'`);
  await server.sql(`CREATE DATABASE ${pg.POSTGRES_DB} OWNER ${pg.POSTGRES_USER}`);
  url.hostname = "127.0.0.1";
  url.port = String(server.port);
  const store = await openStore({ databaseUrl: url.href }, {
    chainId: 31337,
    escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
    scanFromBlock: 1n,
    log: () => {},
  });
  try {
    assert.equal(store.backend, "postgres");
    assert.equal(store.writer, true);
    assert.equal(store.location.includes(pg.POSTGRES_PASSWORD), false, "shown without password");
  } finally {
    await store.close();
  }
});

Deno.test("compose.yaml: services start after their dependencies are healthy", () => {
  for (const [name, service] of Object.entries(services)) {
    for (const [dependency, condition] of Object.entries(service.depends_on ?? {})) {
      assert.deepEqual(condition, { condition: "service_healthy" }, `${name} → ${dependency}`);
      assert.ok(services[dependency]?.healthcheck, `${dependency} has a health check`);
    }
  }
  assert.ok("devnet" in services.indexer.depends_on);
  assert.ok("devnet" in services.daemon.depends_on);
});

Deno.test("compose.yaml: interpolation reader follows Compose's rules", () => {
  assert.equal(interpolate("${A:-x}", {}), "x");
  assert.equal(interpolate("${A:-x}", { A: "" }), "x");
  assert.equal(interpolate("${A-x}", { A: "" }), "");
  assert.equal(interpolate("${A:-}", {}), "");
  assert.equal(interpolate("$$A ${A}", { A: "y" }), "$A y");
  assert.throws(() => interpolate("${A:?need}", {}), /unsupported interpolation/);
});

Deno.test("a fresh devnet, started as compose starts it, deploys at the indexer's default addresses", async () => {
  // The compose command, on ephemeral loopback ports (tests never bind fixed ports or every
  // interface); addresses depend only on the deployer and its nonce on a fresh chain.
  const options = parseDevnetArgs(devnetArgs(), {});
  assert.ok(!("help" in options));
  await using devnet = await startDevnet({
    ...options,
    ports: "ephemeral",
    hostname: "127.0.0.1",
    publicHost: undefined,
    tokenDelayMs: 0,
  });
  const defaults = environmentDefaults(services.indexer);
  assert.deepEqual(
    {
      registry: defaults.get("NET_EVM_REGISTRY"),
      staking: defaults.get("NET_EVM_STAKING"),
      emission: defaults.get("NET_EVM_EMISSION"),
      escrow: defaults.get("NET_EVM_ESCROW"),
    },
    devnet.contracts,
  );
  assert.equal(defaults.get("NET_STATS_SCAN_FROM_BLOCK"), String(devnet.fromBlock));
  assert.equal(
    environmentDefaults(services.daemon).get("NET_EVM_REGISTRY"),
    devnet.contracts.registry,
  );
  // The devnet's health check path answers once the devnet is up.
  const probe = parseProbe(services.devnet.healthcheck.test);
  const response = await fetch(`${devnet.gateways[0]}${probe.url!.pathname}`);
  assert.equal(response.status, 200);
  await response.body?.cancel();
});
