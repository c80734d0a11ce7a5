/**
 * The embedded stores' process (`_embedded_process.ts`), seen from the caller: started with
 * `deno run`, the same Deno and the same configuration as the caller, and permission to read
 * and write the directories it is given (plus reading PGlite's own files) and nothing else.
 * Requests go in as JSON lines on its standard input, replies come back on its standard
 * output; its standard error is the caller's.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { LineSplitter } from "../../io/_line_splitter.ts";
import type { WorkerReply, WorkerRequest } from "./_embedded_protocol.ts";

/** The longest reply line read (the rows of one statement), UTF-16 code units. */
const MAX_REPLY = 256 * 2 ** 20;

/** The caller's flags that choose its configuration, lock file and packages: the child's too. */
const CONFIG_FLAGS = new Set(["--config", "-c", "--lock", "--import-map", "--node-modules-dir"]);
const CONFIG_SWITCHES = new Set(["--frozen", "--cached-only", "--no-lock", "--no-config"]);

/**
 * The caller's own configuration flags, read from its command line (`/proc/self/cmdline`;
 * elsewhere none, and the child finds the project's `deno.json` from the project's root, its
 * working directory). Paths are made absolute against the caller's working directory.
 */
function configFlags(): string[] {
  let args: string[];
  try {
    args = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
  } catch {
    return [];
  }
  const flags: string[] = [];
  // Up to the script: what follows it is the program's own arguments.
  const script = args.findIndex((arg, i) =>
    i > 1 && !arg.startsWith("-") &&
    !CONFIG_FLAGS.has(args[i - 1]) && /\.(ts|js|mjs|tsx|jsx)$/.test(arg)
  );
  const mine = script === -1 ? args : args.slice(0, script);
  for (let i = 0; i < mine.length; i++) {
    const [name, value] = mine[i].split(/=(.*)/s, 2);
    if (CONFIG_SWITCHES.has(name)) flags.push(mine[i]);
    else if (CONFIG_FLAGS.has(name)) {
      const given = value ?? mine[++i];
      if (given === undefined) continue;
      const path = name === "--node-modules-dir" ? given : resolve(given);
      flags.push(`${name}=${path}`);
    }
  }
  return flags;
}

/** The directory of PGlite's package (its WebAssembly and data files), which the child reads. */
function pgliteDir(): string | undefined {
  const url = import.meta.resolve("@electric-sql/pglite");
  // `dist/index.js`: its package (PGlite reads `dist/`, the template its `package.json`).
  return url.startsWith("file:") ? dirname(dirname(fromFileUrl(url))) : undefined;
}

/**
 * The command that starts the store process from the module at `base` (this one's URL): the
 * script's path, and the project's root (where `deno.json` is) as its working directory. Only a
 * local copy of the package can start it (`deno run` of a file it reads with the caller's
 * configuration); from a remote one (a `jsr:` import) this says so, instead of failing on import.
 */
export function storeProcessCommand(
  base: string = import.meta.url,
): { script: string; cwd: string } {
  const script = new URL("./_embedded_process.ts", base);
  if (script.protocol !== "file:") {
    throw new Error(
      `Cannot start the embedded store's process from ${script.href}: expected a local copy of ` +
        "the package (a checkout, or the image); with a remote import, use PostgreSQL (`databaseUrl`, --database-url)",
    );
  }
  return { script: fromFileUrl(script), cwd: fromFileUrl(new URL("../../", base)) };
}

/** A running store process. */
export class StoreChild {
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #encoder = new TextEncoder();
  /** Settles with the exit code once the process has exited. */
  readonly exited: Promise<number>;

  /**
   * Starts the process, allowed to read and write `dirs` (absolute paths); `onReply` gets each
   * reply, `onStray` each line of its output that is not one (never expected).
   */
  constructor(
    dirs: readonly string[],
    onReply: (reply: WorkerReply) => void,
    onStray: (line: string) => void = (line) => console.error(line),
  ) {
    const { script, cwd } = storeProcessCommand();
    const readable = [...dirs, pgliteDir()].filter((dir): dir is string => dir !== undefined);
    const args = [
      "run",
      ...configFlags(),
      "--no-prompt",
      `--allow-read=${readable.join(",")}`,
      `--allow-write=${dirs.join(",")}`,
      script,
    ];
    this.#child = new Deno.Command(Deno.execPath(), {
      args,
      cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
      // One malloc arena: V8's background threads (compilers, GC) would each get one of up to
      // 64 MiB, which glibc keeps (measured on the store process: 10–17 MiB less at its peak).
      env: { MALLOC_ARENA_MAX: "1" },
    }).spawn();
    this.#stdin = this.#child.stdin.getWriter();
    this.exited = this.#read(onReply, onStray);
    this.unref();
  }

  /** The process's id. */
  get pid(): number {
    return this.#child.pid;
  }

  async #read(onReply: (reply: WorkerReply) => void, onStray: (line: string) => void) {
    const lines = new LineSplitter(
      MAX_REPLY,
      (length) => new Error(`a reply line of ${length} characters, over ${MAX_REPLY}`),
    );
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.#child.stdout) {
        for (const line of lines.push(decoder.decode(chunk, { stream: true }))) {
          if (!line) continue;
          let reply: WorkerReply;
          try {
            reply = JSON.parse(line);
          } catch {
            onStray(line);
            continue;
          }
          onReply(reply);
        }
      }
    } catch {
      // The pipe broke: the exit below says how the process ended.
    }
    return (await this.#child.status).code;
  }

  /** Sends one request (lines are written whole, in order). */
  send(request: WorkerRequest): void {
    this.#stdin.write(this.#encoder.encode(JSON.stringify(request) + "\n")).catch(() => {
      // The process is gone: `exited` reports it.
    });
  }

  /** Keeps the caller running while a reply is awaited. */
  ref(): void {
    this.#child.ref();
  }

  /** Lets the caller exit whatever the process does. */
  unref(): void {
    this.#child.unref();
  }

  /** Ends the process: its input is closed and it exits (`_embedded_process.ts`). */
  async end(): Promise<number> {
    // Waited for: the caller stays until the process has exited.
    this.ref();
    await this.#stdin.close().catch(() => {});
    return await this.exited;
  }

  /** Kills the process now (SIGKILL) and waits for its exit. */
  async kill(): Promise<number> {
    this.ref();
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await this.#stdin.close().catch(() => {});
    return await this.exited;
  }
}
