/**
 * `daemon/main.ts` as users run it, in a subprocess: its stdout read as it comes, its stderr
 * kept for the end.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../daemon/main.ts", import.meta.url));

/** A running `daemon/main.ts`. */
export interface SpawnedDaemon {
  /** The process. */
  child: Deno.ChildProcess;
  /** Reads stdout until `pattern` matches what was read so far; rejects if it exits first. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  /** Once it has exited: its whole stdout, then its whole stderr. */
  rest(): Promise<string>;
  /** Once it has exited: its whole stdout and stderr, apart. */
  output(): Promise<{ stdout: string; stderr: string }>;
}

/** Starts `deno run -A daemon/main.ts ...args` with `env` (and `NO_COLOR`), output piped. */
export function spawnDaemon(args: string[], env: Record<string, string>): SpawnedDaemon {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = new Response(child.stderr).text();
  let buffered = "";
  const waitFor = async (pattern: RegExp): Promise<RegExpMatchArray> => {
    while (true) {
      const match = buffered.match(pattern);
      if (match) return match;
      const { done, value } = await reader.read();
      if (done) throw new Error(`the daemon exited first:\n${buffered}\n${await stderr}`);
      buffered += value;
      lines.push(value);
    }
  };
  const output = async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) buffered += r.value;
    return { stdout: buffered, stderr: await stderr };
  };
  const rest = async () => {
    const { stdout, stderr } = await output();
    return stdout + stderr;
  };
  return { child, waitFor, rest, output };
}
