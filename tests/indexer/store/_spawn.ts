/** Runs `_child.ts` in its own process and follows what it prints. */

import type { StoreLocation } from "../../../indexer/store/mod.ts";
import { HANG_AFTER_MS } from "../../_wait.ts";

const CHILD = new URL("./_child.ts", import.meta.url).pathname;

/** A running child. */
export interface Child extends AsyncDisposable {
  /** Its pid. */
  pid: number;
  /** Every line printed on stdout so far. */
  lines: string[];
  /**
   * Resolves with the `count`-th line matching `pattern` (default the first), waiting for it;
   * fails when the child exits before printing it.
   */
  waitFor(pattern: RegExp, count?: number): Promise<string>;
  /** `kill -9`, then waits for the exit. */
  kill(): Promise<void>;
  /** Resolves with the exit status and stderr when it ends. */
  done: Promise<{ code: number; stderr: string }>;
}

/** Starts `_child.ts <mode> <location> [options]`. */
export function spawnChild(mode: string, location: StoreLocation, options?: object): Child {
  const args = ["run", "-A", CHILD, mode, JSON.stringify(location)];
  if (options) args.push(JSON.stringify(options));
  const process = new Deno.Command(Deno.execPath(), {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const reading = (async () => {
    let buffer = "";
    for await (const chunk of process.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      const parts = buffer.split("\n");
      buffer = parts.pop() ?? "";
      lines.push(...parts);
      for (const wake of waiters) wake();
    }
  })();
  const stderr = new Response(process.stderr).text();
  const done = (async () => {
    const status = await process.status;
    await reading;
    for (const wake of waiters) wake();
    return { code: status.code, stderr: await stderr };
  })();
  let exited = false;
  done.then(() => (exited = true));
  const waitFor = (pattern: RegExp, count = 1): Promise<string> =>
    new Promise((resolve, reject) => {
      // A guard against a hang, not a budget: the child's progress is what is waited for.
      const timer = setTimeout(
        () => finish(new Error(`no line ${count} matching ${pattern} in ${HANG_AFTER_MS} ms`)),
        HANG_AFTER_MS,
      );
      const check = () => {
        const found = lines.filter((l) => pattern.test(l));
        if (found.length >= count) return finish(undefined, found[count - 1]);
        if (exited) {
          done.then(({ code, stderr }) =>
            finish(
              new Error(`the child exited (code ${code}) before printing ${pattern}:\n${stderr}`),
            )
          );
        }
      };
      const finish = (error?: Error, line?: string) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (error) reject(error);
        else resolve(line!);
      };
      waiters.add(check);
      check();
    });
  const kill = async () => {
    try {
      process.kill("SIGKILL");
    } catch {
      // already gone
    }
    await done;
  };
  return { pid: process.pid, lines, waitFor, kill, done, [Symbol.asyncDispose]: kill };
}
