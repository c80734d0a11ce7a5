/**
 * The PostgreSQL backend: one `pg` client connection (one session) per store. One session,
 * because the writer lock is a session-level advisory lock: it lives exactly as long as this
 * connection, and `pg` never reconnects behind our back (a dead connection fails every later
 * statement; the store then reports it).
 *
 * @module
 */

import pg from "pg";
import { StoreError } from "./errors.ts";
import { Mutex, type SqlParam, type SqlQuery, type SqlRow, type SqlSession } from "./_sql.ts";

/** The part of `pg.Client` used here (the package ships no types). */
interface PgClient {
  connect(): Promise<void>;
  query(text: string, values?: SqlParam[]): Promise<{ rows: SqlRow[] }>;
  end(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): void;
}

const PgClientClass = (pg as unknown as {
  Client: new (config: Record<string, unknown>) => PgClient;
}).Client;

/** The URL without its password, for messages and `location`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(a malformed URL)";
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0];
}

/**
 * Whether `error` says the server ended this session: SQLSTATE class 08 (connection
 * exception) or 57P01–57P03 (terminated by an administrator, a crash, or a shutdown).
 */
function sessionEnded(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && (code.startsWith("08") || /^57P0[123]$/.test(code));
}

/** An open server backend. */
export interface ServerBackend {
  /** The SQL session. */
  session: SqlSession;
  /** The error that broke the connection, once it broke. */
  broken(): Error | undefined;
}

/**
 * Connects to the database at `url`.
 *
 * @throws {StoreError} `unreachable` when the URL is malformed or the server does not accept
 * the connection within `connectTimeoutMs`.
 */
export async function openServer(
  url: string,
  options: { connectTimeoutMs?: number; applicationName?: string } = {},
): Promise<ServerBackend> {
  const where = redactUrl(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StoreError(
      "unreachable",
      `Cannot open the history store: the database URL is malformed; expected postgres://user:password@host:port/database`,
    );
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new StoreError(
      "unreachable",
      `Cannot open the history store at ${where}: the scheme is ${parsed.protocol}, expected postgres: or postgresql:`,
    );
  }
  const client = new PgClientClass({
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: options.applicationName ?? "net-indexer-history",
  });
  let brokenBy: Error | undefined;
  client.on("error", (error) => {
    brokenBy ??= error;
  });
  try {
    await client.connect();
  } catch (cause) {
    await client.end().catch(() => {});
    throw new StoreError(
      "unreachable",
      `Cannot open the history store at ${where}: ${firstLine(cause)}`,
      { cause },
    );
  }
  const mutex = new Mutex();
  const direct: SqlQuery = async (text, params = []) => {
    try {
      const result = await client.query(text, [...params]);
      return result.rows;
    } catch (error) {
      // The server ended the session (its answer may come before the client's "error" event):
      // the connection is lost from now on, and with it the session's writer lock.
      if (sessionEnded(error)) brokenBy ??= error as Error;
      throw error;
    }
  };
  const session: SqlSession = {
    query: (text, params) => mutex.run(() => direct(text, params)),
    transaction: (work) =>
      mutex.run(async () => {
        await direct("BEGIN");
        let result;
        try {
          result = await work(direct);
        } catch (error) {
          await direct("ROLLBACK").catch(() => {});
          throw error;
        }
        await direct("COMMIT");
        return result;
      }),
    close: () => mutex.run(() => client.end()).catch(() => {}),
  };
  return { session, broken: () => brokenBy };
}
