/**
 * Where the refresher's settlement history lives: an open store, a location opened once the
 * chain id is known (a rebuild asked for at start done once), an opener, or by default a
 * temporary embedded store deleted when it is closed.
 *
 * @module
 */

import type { StoreOpener } from "./history.ts";
import {
  type HistoryStore,
  openStore,
  type RebuildPolicy,
  type StoreLocation,
  storeMayExist,
} from "./store/mod.ts";

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** A temporary embedded store, deleted when closed. */
export async function temporaryStore(
  identity: Parameters<StoreOpener>[0],
  confirmations: number,
): Promise<HistoryStore> {
  const dir = await Deno.makeTempDir({ prefix: "net-indexer-history-" });
  const store = await openStore({ dataDir: dir }, { ...identity, confirmations, log: () => {} });
  const close = async () => {
    await store.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === "close" || key === Symbol.asyncDispose) return close;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * The store, or how to open it, from the refresher's `history` option: a location is opened
 * with the identity the history gives and `rebuild` (only the first time: a lost connection
 * reopened later must not rebuild again); nothing gives a temporary store.
 */
export function storeOpener(
  where: HistoryStore | StoreLocation | StoreOpener | undefined,
  options: { confirmations: number; rebuild?: RebuildPolicy; log: (line: string) => void },
): HistoryStore | StoreOpener {
  if (typeof where === "function") return where;
  if (where && ("dataDir" in where || "databaseUrl" in where)) {
    let rebuild = options.rebuild;
    return async (identity) => {
      const opened = await openStore(where, {
        ...identity,
        confirmations: options.confirmations,
        rebuild,
        log: options.log,
      });
      rebuild = "never";
      return opened;
    };
  }
  if (where) return where as HistoryStore;
  return (identity) => temporaryStore(identity, options.confirmations);
}

/**
 * Whether the store of the refresher's `history` option will be a new one when opened (a
 * location with no store yet, or one rebuilt at start; a temporary store): the history then
 * scans while it is created. `undefined` for an open store or an opener (not known).
 */
export function storeIsNew(
  where: HistoryStore | StoreLocation | StoreOpener | undefined,
  rebuild: RebuildPolicy | undefined,
): (() => Promise<boolean>) | undefined {
  if (typeof where === "function") return undefined;
  if (where && ("dataDir" in where || "databaseUrl" in where)) {
    if (rebuild === "always") return () => Promise.resolve(true);
    return async () => !(await storeMayExist(where));
  }
  if (where) return undefined;
  return () => Promise.resolve(true);
}
