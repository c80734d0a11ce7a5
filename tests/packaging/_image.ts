/**
 * The project's own image (`net-consumer`, built by `packaging/ci.sh`), run through npm
 * `testcontainers` the way the design says the chain tests run: host networking (the engine
 * of `.ci/run` has no bridge), no Ryuk (its image cannot be pulled here), so every container
 * is labelled with its run's id and removed by {@linkcode ImageRun} on every path — a failed
 * start included.
 *
 * @module
 */

import { GenericContainer, PullPolicy, type StartedTestContainer, Wait } from "testcontainers";
import denoJson from "../../deno.json" with { type: "json" };
import { describePing, engineGet, engineRequest, engineUp, inCI, pingEngine } from "../_engine.ts";

/** The image under test: `$NET_IMAGE`, or the tag `packaging/ci.sh` builds. */
export const IMAGE: string = Deno.env.get("NET_IMAGE") ?? `net-consumer:${denoJson.version}`;

/** The label on every container a run starts; its value is the run's id. */
const LABEL = "net-consumer.test";

/**
 * Why the image tests cannot run here (no engine answers `/_ping`, or the image is not built),
 * or undefined when they can.
 */
export async function whyNoImage(): Promise<string | undefined> {
  const ping = await pingEngine();
  if (!engineUp(ping)) return describePing(ping);
  const found = await engineGet(`/images/${encodeURIComponent(IMAGE)}/json`);
  if (found.status === 404) {
    return `the image ${IMAGE} is not built (bash packaging/ci.sh builds it; NET_IMAGE names another)`;
  }
  if (found.status !== 200) {
    return `the engine at ${found.label} answered ${found.status} for the image ${IMAGE}: ${found.body}`;
  }
  return undefined;
}

/**
 * Settles whether the image tests run: `ignore` when they cannot and this is not CI (with a
 * `SKIPPED:` line); in CI (`CI=true`) they run and fail with `reason`.
 */
export async function imageTestPlan(file: string): Promise<{ ignore: boolean; reason?: string }> {
  const reason = await whyNoImage();
  if (reason === undefined) return { ignore: false };
  if (inCI()) return { ignore: false, reason };
  console.warn(`SKIPPED: ${file}: ${reason}`);
  return { ignore: true, reason };
}

/** How one container of the image starts. */
export interface StartOptions {
  /** The program and its flags (`indexer --network …`). */
  command: string[];
  /** Its environment. */
  env?: Record<string, string>;
  /** Files copied into it before it starts (`target` → content). */
  files?: Record<string, string>;
  /** The log line that says it is up. */
  ready: RegExp;
  /** How long it may take to print it. */
  timeoutMs: number;
}

/** The containers of one test run: started through testcontainers, all removed at its end. */
export class ImageRun implements AsyncDisposable {
  /** This run's id (the value of its containers' label). */
  readonly id = `${Deno.pid}-${Date.now().toString(36)}`;
  readonly #started: StartedTestContainer[] = [];
  readonly #logs = new Map<string, string[]>();

  constructor() {
    // Host networking: the containers listen on the host's loopback, which is the host
    // testcontainers must report (it looks for a bridge gateway when it runs in a container).
    if (!Deno.env.get("TESTCONTAINERS_HOST_OVERRIDE")) {
      Deno.env.set("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1");
    }
    // No Ryuk: its image is on Docker Hub, which we cannot reach. This class removes what it
    // starts instead.
    Deno.env.set("TESTCONTAINERS_RYUK_DISABLED", "true");
  }

  /** What the container named `role` printed so far (standard output and error). */
  logs(role: string): string {
    return (this.#logs.get(role) ?? []).join("");
  }

  /**
   * Starts `role` from the image on the host's network and waits for its `ready` line; on a
   * failed start the error carries its last output.
   */
  async start(role: string, options: StartOptions): Promise<StartedTestContainer> {
    const lines: string[] = [];
    this.#logs.set(role, lines);
    const files = Object.entries(options.files ?? {}).map(([target, content]) => ({
      target,
      content,
      mode: 0o644,
    }));
    const container = new GenericContainer(IMAGE)
      .withPullPolicy(PullPolicy.neverPull())
      .withNetworkMode("host")
      .withLabels({ [LABEL]: this.id })
      .withName(`net-consumer-test-${this.id}-${role}`)
      .withCommand(options.command)
      .withEnvironment(options.env ?? {})
      .withCopyContentToContainer(files)
      .withLogConsumer((stream) => {
        stream.on("data", (chunk: Buffer | string) => lines.push(chunk.toString()));
      })
      .withWaitStrategy(Wait.forLogMessage(options.ready))
      .withStartupTimeout(options.timeoutMs);
    try {
      const started = await container.start();
      this.#started.push(started);
      return started;
    } catch (error) {
      throw new Error(
        `the ${role} container of ${IMAGE} did not print ${options.ready} within ` +
          `${options.timeoutMs / 1000} s: ${(error as Error).message}\n` +
          `its output:\n${lines.join("").split("\n").slice(-30).join("\n")}`,
        { cause: error },
      );
    }
  }

  /**
   * Stops and removes every container of the run with its anonymous volumes: first those
   * testcontainers returned, then any other carrying the run's label (a start that failed
   * between create and ready).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    const problems: string[] = [];
    for (const started of this.#started.splice(0).reverse()) {
      await started.stop({ timeout: 10_000, remove: true, removeVolumes: true })
        .catch((error) => problems.push(`${started.getName()}: ${error.message}`));
    }
    // What testcontainers did not return (a start that failed before it was ready), found
    // by the label through the engine's API: stopped ones too.
    const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL}=${this.id}`] }));
    const listed = await engineGet(`/containers/json?all=1&filters=${filters}`);
    if (listed.status !== 200) problems.push(`listing: ${listed.status} ${listed.body}`);
    else {
      for (const { Id } of JSON.parse(listed.body) as { Id: string }[]) {
        const removed = await engineRequest("DELETE", `/containers/${Id}?force=1&v=1`, 30_000);
        if (removed.status !== 204) problems.push(`${Id}: ${removed.status} ${removed.body}`);
      }
    }
    if (problems.length > 0) {
      throw new Error(`Cannot remove the test's containers: ${problems.join("; ")}`);
    }
  }
}
