/**
 * The PostgreSQL test fixture, the way the chain tests start anvil: Debian's own `initdb` and
 * `postgres` binaries run on a free loopback port in a temporary directory, and everything is
 * removed again afterwards. It is `AsyncDisposable`: `await using pg = await startPostgres()`
 * stops the server and deletes its directory when the scope ends, also when a test fails.
 * Servers still running when the process unloads are killed.
 *
 * Run as root (CI is), the server runs as the `postgres` user (PostgreSQL refuses to run as
 * root): the temporary directory is given to that user and the binaries are started through
 * `setpriv` (or `runuser` when `setpriv` is missing). Authentication is `trust` on loopback
 * only; nothing here is meant for anything but tests.
 *
 * The binaries come from Debian's `postgresql` package (`.ci/run` installs it when missing); set
 * `NET_POSTGRES_BIN` to another directory holding `initdb` and `postgres` to use those instead.
 *
 * @example
 * ```ts ignore
 * import { startPostgres } from "./_postgres.ts";
 *
 * Deno.test("talks to a real PostgreSQL", async () => {
 *   await using pg = await startPostgres();
 *   const url = await pg.createDatabase("history");
 *   // ... connect to `url` ...
 * });
 * ```
 *
 * @module
 */

import pg from "pg";
import { HANG_AFTER_MS } from "./_wait.ts";

/** Environment variable naming a directory with `initdb` and `postgres` to use instead. */
export const POSTGRES_BIN_ENV = "NET_POSTGRES_BIN";

/** Where Debian's `postgresql-<major>` packages put their server binaries. */
const DEBIAN_ROOT = "/usr/lib/postgresql";

/** The server binaries the fixture runs. */
export interface PostgresBinaries {
  /** Path of `initdb`. */
  initdb: string;
  /** Path of `postgres`. */
  postgres: string;
  /** The directory they are in. */
  dir: string;
}

/** Options of {@linkcode startPostgres}. */
export interface PostgresOptions {
  /**
   * Whether the server syncs to disk. Off by default: the tests kill clients, never the
   * server, and a shared machine runs them faster without it. Turn it on to measure.
   *
   * @default {false}
   */
  fsync?: boolean;
  /**
   * How long to wait for the server to accept connections, milliseconds: only a hang fails the
   * start (a busy machine may take long; an exit fails it at once).
   *
   * @default {HANG_AFTER_MS}
   */
  readyTimeoutMs?: number;
  /**
   * The binaries to run.
   *
   * @default {postgresBinaries()}
   */
  binaries?: PostgresBinaries;
}

/** A running PostgreSQL server. */
export interface PostgresInstance extends AsyncDisposable {
  /** URL of the `postgres` database as the superuser `postgres`, e.g. `postgres://postgres@127.0.0.1:40123/postgres`. */
  readonly url: string;
  /** The loopback port. */
  readonly port: number;
  /** The pid of the postmaster. */
  readonly pid: number;
  /** The last lines the server printed, for error messages. */
  output(): string;
  /** Creates a fresh database (a generated name unless given) and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Runs one statement on the `postgres` database as the superuser and returns its rows. */
  sql(text: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
  /** Stops the server (fast shutdown) and removes its directory; idempotent. */
  stop(): Promise<void>;
}

function installHint(): string {
  return "Install PostgreSQL's server: `apt-get install -y postgresql` on Debian or Ubuntu " +
    `(\`.ci/run\` does this when it is missing), or point ${POSTGRES_BIN_ENV} at a directory ` +
    "holding initdb and postgres.";
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Finds `initdb` and `postgres`: in `$NET_POSTGRES_BIN` when set, otherwise in the newest
 * `/usr/lib/postgresql/<major>/bin`.
 *
 * @throws {Error} when they are not there; the message says how to install them.
 */
export function postgresBinaries(): PostgresBinaries {
  const override = Deno.env.get(POSTGRES_BIN_ENV);
  const candidates: string[] = [];
  if (override) {
    candidates.push(override);
  } else {
    try {
      const majors = [...Deno.readDirSync(DEBIAN_ROOT)]
        .filter((entry) => entry.isDirectory && /^\d+$/.test(entry.name))
        .map((entry) => Number(entry.name))
        .sort((a, b) => b - a);
      candidates.push(...majors.map((major) => `${DEBIAN_ROOT}/${major}/bin`));
    } catch {
      // no Debian PostgreSQL at all
    }
  }
  for (const dir of candidates) {
    const initdb = `${dir}/initdb`;
    const postgres = `${dir}/postgres`;
    if (isFile(initdb) && isFile(postgres)) return { initdb, postgres, dir };
  }
  const where = override
    ? `${POSTGRES_BIN_ENV}=${override} holds no initdb and postgres`
    : `nothing under ${DEBIAN_ROOT}/<version>/bin`;
  throw new Error(
    `Cannot find PostgreSQL's initdb and postgres binaries: ${where}\n${installHint()}`,
  );
}

/** Servers still running, killed when the process unloads. */
const running = new Set<Deno.ChildProcess>();
let unloadHooked = false;

function hookUnload(): void {
  if (unloadHooked) return;
  unloadHooked = true;
  globalThis.addEventListener("unload", () => {
    for (const child of running) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  });
}

/** When running as root: the uid and gid of the `postgres` user, and how to become it. */
function runAsPostgres(): { uid: number; gid: number; prefix: string[] } | undefined {
  if (Deno.uid() !== 0) return undefined;
  const line = Deno.readTextFileSync("/etc/passwd").split("\n").find((l) =>
    l.startsWith("postgres:")
  );
  if (!line) {
    throw new Error(
      "Cannot run PostgreSQL as root and there is no `postgres` user to run it as\n" +
        installHint(),
    );
  }
  const [, , uid, gid] = line.split(":");
  const prefix = isFile("/usr/bin/setpriv")
    ? ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
    : ["runuser", "-u", "postgres", "--"];
  return { uid: Number(uid), gid: Number(gid), prefix };
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function runInitdb(
  binaries: PostgresBinaries,
  dataDir: string,
  prefix: string[],
): Promise<void> {
  const argv = [
    ...prefix,
    binaries.initdb,
    "-D",
    dataDir,
    "-U",
    "postgres",
    "--auth=trust",
    "-E",
    "UTF8",
    "--no-locale",
    "--no-sync",
  ];
  const out = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(
      `Cannot initialize a PostgreSQL data directory: initdb exited with code ${out.code}\n${text.trim()}`,
    );
  }
}

interface Started {
  child: Deno.ChildProcess;
  output: () => string;
  exited: Promise<Deno.CommandStatus>;
}

/** Starts `postgres` and resolves once it logs that it accepts connections. */
async function runServer(
  binaries: PostgresBinaries,
  dataDir: string,
  port: number,
  prefix: string[],
  options: PostgresOptions,
): Promise<Started> {
  const argv = [
    ...prefix,
    binaries.postgres,
    "-D",
    dataDir,
    "-p",
    String(port),
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "unix_socket_directories=",
    "-c",
    `fsync=${options.fsync ? "on" : "off"}`,
    "-c",
    "max_connections=200",
  ];
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  running.add(child);
  hookUnload();
  const lines: string[] = [];
  let ready!: () => void;
  const readyPromise = new Promise<void>((resolve) => (ready = resolve));
  (async () => {
    let buffer = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      const parts = buffer.split("\n");
      buffer = parts.pop() ?? "";
      for (const line of parts) {
        lines.push(line);
        if (lines.length > 40) lines.shift();
        if (line.includes("database system is ready to accept connections")) ready();
      }
    }
  })().catch(() => {});
  const exited = child.status.finally(() => running.delete(child));
  const timeoutMs = options.readyTimeoutMs ?? HANG_AFTER_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    readyPromise.then(() => "ready" as const),
    exited.then(() => "exited" as const),
    new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs))),
  ]);
  clearTimeout(timer);
  const output = () => lines.join("\n");
  if (outcome !== "ready") {
    if (outcome === "timeout") child.kill("SIGKILL");
    await exited;
    throw new Error(
      outcome === "timeout"
        ? `Cannot start PostgreSQL on port ${port}: not ready within ${timeoutMs} ms\n${output()}`
        : `Cannot start PostgreSQL on port ${port}: the server exited\n${output()}`,
    );
  }
  return { child, output, exited };
}

/** Runs one statement against `url` on a short-lived connection. */
async function runSql(
  url: string,
  text: string,
  params: readonly unknown[] = [],
): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    const result = await client.query(text, [...params]);
    return result.rows as Record<string, unknown>[];
  } finally {
    await client.end().catch(() => {});
  }
}

let databaseCounter = 0;

/**
 * Starts a fresh PostgreSQL server on a free loopback port in a new temporary directory and
 * waits until it accepts connections.
 *
 * @throws {Error} when the binaries are missing (with how to install them), `initdb` fails, or
 * the server does not start; the message carries the server's last output.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresInstance> {
  const binaries = options.binaries ?? postgresBinaries();
  const asPostgres = runAsPostgres();
  const root = await Deno.makeTempDir({ prefix: "net-pg-" });
  const removeRoot = () => Deno.remove(root, { recursive: true }).catch(() => {});
  let started: Started | undefined;
  let port = 0;
  try {
    if (asPostgres) await Deno.chown(root, asPostgres.uid, asPostgres.gid);
    const dataDir = `${root}/data`;
    await runInitdb(binaries, dataDir, asPostgres?.prefix ?? []);
    // A port picked here may be taken by someone else before the server binds it: retry.
    for (let attempt = 1; !started; attempt++) {
      port = freePort();
      try {
        started = await runServer(binaries, dataDir, port, asPostgres?.prefix ?? [], options);
      } catch (error) {
        const busy = error instanceof Error && /could not bind|in use/i.test(error.message);
        if (!busy || attempt >= 5) throw error;
      }
    }
  } catch (error) {
    await removeRoot();
    throw error;
  }
  const { child, output, exited } = started;
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      try {
        child.kill("SIGINT"); // fast shutdown: disconnects clients, aborts their transactions
      } catch {
        // already gone
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), 10_000))),
      ]);
      clearTimeout(timer);
      if (late) {
        child.kill("SIGKILL");
        await exited;
      }
      await removeRoot();
    })();
    return stopping;
  };
  return {
    url,
    port,
    pid: child.pid,
    output,
    async createDatabase(name?: string): Promise<string> {
      const db = name ?? `test_${Deno.pid}_${++databaseCounter}`;
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(db)) {
        throw new RangeError(`Cannot create database ${JSON.stringify(db)}: not a plain name`);
      }
      await runSql(url, `CREATE DATABASE ${db}`);
      return `postgres://postgres@127.0.0.1:${port}/${db}`;
    },
    sql: (text, params) => runSql(url, text, params),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
