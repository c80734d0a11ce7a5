/**
 * `indexer/main.ts` as a subprocess, for tests that kill it (`kill -9`) or run several of it
 * (replicas): started with a clean environment, its URL read from its `listening on` line.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { emptyDataDir } from "./_stores.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const MAIN = fileURLToPath(new URL("../../indexer/main.ts", import.meta.url));

/** A running indexer process. */
export interface IndexerProcess extends AsyncDisposable {
  /** Its base URL, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Its pid. */
  pid: number;
  /** What it printed on stderr so far. */
  stderr(): string;
  /** GET a path; the status and the JSON body (every answer of the indexer is JSON). */
  get(path: string): Promise<{ status: number; body: Json }>;
  /** Why it can no longer answer (it exited: the code and its stderr), or `undefined`. */
  failure(): string | undefined;
  /** `kill -9`, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number>;
}

/**
 * Starts `indexer/main.ts` with `args` and `env` (plus PATH and HOME) and waits until it listens.
 * Its data directory is a new empty one unless `env` or `args` name one: never the user's own.
 */
export async function startIndexer(
  args: readonly string[],
  env: Record<string, string>,
): Promise<IndexerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--bind", "127.0.0.1:0", ...args],
    env: {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: Deno.env.get("HOME") ?? "",
      NO_COLOR: "1",
      NET_STATS_DATA_DIR: emptyDataDir(),
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let errors = "";
  const draining = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) errors += chunk;
  })();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) {
      await draining;
      throw new Error(`the indexer exited before listening:\n${stdout}\n${errors}`);
    }
    stdout += value;
    url = stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  }
  const rest = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) stdout += r.value;
  })();
  let exited = false;
  let exitCode: number | undefined;
  const status = child.status.then(async (s) => {
    exited = true;
    exitCode = s.code;
    await Promise.all([rest, draining]);
    return s;
  });
  const kill = async () => {
    if (!exited) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
    await status;
  };
  const base = url;
  return {
    url: base,
    pid: child.pid,
    stderr: () => errors,
    async get(path) {
      const response = await fetch(`${base}${path}`);
      const text = await response.text();
      try {
        return { status: response.status, body: JSON.parse(text) };
      } catch {
        throw new Error(
          `GET ${path} answered ${response.status} with a body that is not JSON: ${
            text.slice(0, 200)
          }`,
        );
      }
    },
    failure: () =>
      exited ? `the indexer exited (code ${exitCode}):\n${errors.slice(-2000)}` : undefined,
    kill,
    async stop() {
      if (!exited) child.kill("SIGTERM");
      return (await status).code;
    },
    [Symbol.asyncDispose]: kill,
  };
}
