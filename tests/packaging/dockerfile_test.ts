/**
 * Static checks of the `Dockerfile`: no Docker engine exists on our machines, so the image is
 * never built here. What can be checked without one is checked against the code: pinned base
 * images, the anvil version of `tools/setup.ts`, a non-root user, a health check that probes
 * the port the indexer binds with the image's environment, files that exist, an entry point
 * that runs the tasks of `deno.json`, and the layer order that keeps dependencies cached.
 */

import assert from "node:assert/strict";
import { parseIndexerConfig } from "../../indexer/config.ts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { initialState } from "../../indexer/state.ts";
import { ANVIL_VERSION } from "../../tools/setup.ts";
import { VERSION } from "../../version.ts";
import {
  argDefaults,
  denoTasks,
  entrypointPrograms,
  envOf,
  execForm,
  exists,
  type Instruction,
  parseDockerfile,
  parseProbe,
  readText,
  substituteArgs,
} from "./_files.ts";

const instructions = parseDockerfile(readText("Dockerfile"));
const froms = instructions.filter((i) => i.keyword === "FROM");
const finalStage = froms.at(-1)!.stage;
const inFinal = (keyword: string): Instruction[] =>
  instructions.filter((i) => i.stage === finalStage && i.keyword === keyword);
const env = envOf(instructions, finalStage);

/** Placeholder addresses: the image sets no contract address, the deployment does. */
const CONTRACTS = {
  NET_EVM_REGISTRY: `0x${"1".repeat(40)}`,
  NET_EVM_STAKING: `0x${"2".repeat(40)}`,
  NET_EVM_EMISSION: `0x${"3".repeat(40)}`,
  NET_EVM_ESCROW: `0x${"4".repeat(40)}`,
};

Deno.test("Dockerfile: multi-stage, every base image pinned to an exact version and a digest", () => {
  assert.ok(froms.length >= 2, "expected a build stage and a runtime stage");
  for (const from of froms) {
    const image = substituteArgs(from.args.split(" ")[0], argDefaults(instructions, from.stage));
    const stageNames = new Set(froms.map((f) => f.stage));
    if (stageNames.has(image)) continue; // FROM an earlier stage
    assert.match(
      image,
      /^[\w./-]+:\d+\.\d+\.\d+[\w.-]*@sha256:[0-9a-f]{64}$/,
      `${from.args} resolves to ${image}: expected name:X.Y.Z@sha256:<digest>`,
    );
  }
  const deno = substituteArgs(
    froms.at(-1)!.args.split(" ")[0],
    argDefaults(instructions, "global"),
  );
  assert.match(deno, /^denoland\/deno:2\.\d+\.\d+@/, "the runtime is the official Deno 2 image");
});

Deno.test("Dockerfile: the anvil stage installs the version tools/setup.ts pins", () => {
  const stage = froms.find((f) => /AS anvil$/.test(f.args))!.stage;
  assert.equal(argDefaults(instructions, stage).get("ANVIL_VERSION"), ANVIL_VERSION);
  const run = instructions.find((i) => i.stage === stage && i.keyword === "RUN")!;
  assert.match(run.args, /npm install .*"@foundry-rs\/anvil-linux-\$\{arch\}@\$\{ANVIL_VERSION\}"/);
  assert.match(run.args, /grep -qx "anvil Version: \$\{ANVIL_VERSION\}"/, "the build checks it");
  // The binary lands where NET_ANVIL_BIN points, so tools/setup.ts never installs at run time.
  const copy = inFinal("COPY").find((i) => i.args.startsWith("--from=anvil "))!;
  const [, source, target] = copy.args.split(" ");
  assert.equal(source, "/usr/local/bin/anvil");
  assert.equal(env.get("NET_ANVIL_BIN"), target);
  assert.equal(env.get("NET_ANVIL_RUNTIME"), undefined, "the container runtime was removed");
});

Deno.test("Dockerfile: runs as a non-root user", () => {
  const users = inFinal("USER");
  assert.ok(users.length > 0, "the runtime stage sets USER");
  const user = users.at(-1)!.args;
  assert.ok(!["root", "0", "0:0", "root:root"].includes(user), `USER ${user} is root`);
  // …and it is in effect before the dependencies are installed and at run time.
  const index = (i: Instruction) => instructions.indexOf(i);
  const install = inFinal("RUN").find((i) => i.args.startsWith("deno install"))!;
  assert.ok(index(users.at(-1)!) < index(install));
});

Deno.test("Dockerfile: HEALTHCHECK probes the indexer wherever NET_STATS_BIND puts it", async () => {
  const [check] = inFinal("HEALTHCHECK");
  assert.ok(check, "the runtime stage has a HEALTHCHECK");
  const cmd = /^(?:--\S+ )*CMD (\[.*\])$/.exec(check.args);
  assert.ok(cmd, `HEALTHCHECK must use the exec form: ${check.args}`);
  const probe = parseProbe(execForm(cmd[1]));
  assert.ok(exists(probe.script), `${probe.script} does not exist`);
  assert.equal(probe.service, "indexer");
  assert.ok(probe.argv.includes("--allow-env=NET_STATS_BIND"), "it reads the bind");
  assert.ok(probe.argv.includes("--no-config"), "it starts without the dependencies");
  // The image's own bind parses with the indexer's parser and is reachable from outside.
  const parsed = parseIndexerConfig([], { ...CONTRACTS, ...Object.fromEntries(env) });
  assert.ok(!parsed.help);
  assert.equal(parsed.config.bind.hostname, "0.0.0.0", "reachable from outside the container");
  assert.equal(parsed.config.dataDir, env.get("NET_STATS_DATA_DIR"), "a data dir of its own");
  assert.ok(env.get("NET_STATS_DATA_DIR")!.startsWith("/var/lib/net-consumer/"), "on the volume");
  assert.equal(inFinal("VOLUME")[0]?.args, "/var/lib/net-consumer");
  const handler = createIndexerHandler({ state: () => initialState(30, 60) });
  const response = await handler(new Request(`http://127.0.0.1:${parsed.config.bind.port}/health`));
  assert.equal(response.status, 503);
  assert.equal((await response.json()).status, "starting");
  assert.ok(inFinal("EXPOSE")[0].args.split(" ").includes(String(parsed.config.bind.port)));
});

Deno.test("Dockerfile: every copied file exists and is not ignored", () => {
  const ignored = readText(".dockerignore").split("\n").map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  for (const copy of instructions.filter((i) => i.keyword === "COPY")) {
    if (copy.args.startsWith("--from=")) continue;
    const parts = copy.args.split(" ").filter((p) => !p.startsWith("--"));
    for (const source of parts.slice(0, -1)) {
      assert.ok(exists(source), `COPY ${source}: no such file`);
      assert.ok(!ignored.includes(source), `COPY ${source}: excluded by .dockerignore`);
    }
  }
  // What the runtime needs is not ignored.
  for (const needed of ["deno.json", "deno.lock", "packaging", "contracts", "tools"]) {
    assert.ok(!ignored.includes(needed), `.dockerignore drops ${needed}`);
  }
});

Deno.test("Dockerfile: the run-time dependencies are cached in their own layer, before the sources", () => {
  const steps = instructions.filter((i) => i.stage === finalStage);
  const at = (pred: (i: Instruction) => boolean) => steps.findIndex(pred);
  const manifests = at((i) =>
    i.keyword === "COPY" && i.args.startsWith("deno.runtime.json deno.runtime.lock ")
  );
  const install = at((i) =>
    i.keyword === "RUN" && i.args.startsWith("deno install --config deno.runtime.json --frozen")
  );
  const sources = at((i) => i.keyword === "COPY" && i.args === ". .");
  assert.ok(manifests >= 0 && install > manifests && sources > install, "order of the layers");
  // The final cache step names every entry point the image runs, with the run-time config.
  const cache = steps.find((i) => i.keyword === "RUN" && i.args.startsWith("deno cache"))!;
  assert.match(cache.args, /^deno cache --config deno\.runtime\.json --frozen /);
  const entries = cache.args.split(" ").filter((a) => a.endsWith(".ts"));
  for (const entry of entries) assert.ok(exists(entry), `${entry} does not exist`);
  const tasks = denoTasks();
  for (const program of entrypointPrograms()) {
    const entry = /deno run -A --config deno\.runtime\.json (\S+\.ts)/.exec(tasks.get(program)!)
      ?.[1];
    assert.ok(entry && entries.includes(entry), `deno cache misses ${program}'s ${entry}`);
  }
});

Deno.test("Dockerfile: the entry point runs the programs of deno.json, the indexer by default", () => {
  const [entrypoint] = inFinal("ENTRYPOINT");
  const argv = execForm(entrypoint.args);
  assert.deepEqual(argv.slice(0, 3), ["/tini", "--", "sh"], "tini as PID 1, the script via sh");
  assert.equal(argv[3], "/app/packaging/entrypoint.sh");
  assert.ok(exists("packaging/entrypoint.sh"));
  assert.equal(inFinal("WORKDIR").at(-1)!.args, "/app");
  assert.deepEqual(execForm(inFinal("CMD")[0].args), ["indexer"]);
  const tasks = denoTasks();
  const programs = entrypointPrograms();
  assert.deepEqual(programs.toSorted(), ["daemon", "devnet", "indexer"]);
  for (const program of programs) {
    const command = tasks.get(program);
    assert.ok(command, `deno.json has no task ${program}`);
    // Tasks that install tools at run time are not offered.
    assert.doesNotMatch(command, /tools\/setup\.ts|npm /, `task ${program} installs tools`);
  }
});

Deno.test("Dockerfile: the image's version label is the package version", () => {
  const label = inFinal("LABEL").map((l) => l.args).join(" ");
  assert.match(label, new RegExp(`org\\.opencontainers\\.image\\.version="${VERSION}"`));
});

Deno.test("packaging/entrypoint.sh: runs the selected program and refuses others", async () => {
  const run = async (...args: string[]) => {
    const out = await new Deno.Command("sh", {
      args: ["packaging/entrypoint.sh", ...args],
      cwd: new URL("../../", import.meta.url),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
  };
  const indexer = await run("indexer", "--help");
  assert.equal(indexer.code, 0, indexer.stderr);
  assert.match(indexer.stdout, /^net-consumer indexer:/);
  const devnet = await run("devnet", "--help");
  assert.equal(devnet.code, 0, devnet.stderr);
  assert.match(devnet.stdout, /--public-host <name>/);
  const test = await run("test");
  assert.equal(test.code, 64);
  assert.match(test.stderr, /unknown program "test"; expected indexer, daemon or devnet/);
});
