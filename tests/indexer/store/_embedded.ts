/** The embedded backend of the shared store suite, for the embedded store's test files. */

import { PGlite } from "@electric-sql/pglite";
import type { StoreLocation } from "../../../indexer/store/mod.ts";
import { freshDataDir } from "../_stores.ts";
import type { SuiteBackend } from "./_suite.ts";

/** The data directory of an embedded location. */
export function dataDirOf(location: StoreLocation): string {
  if (!("dataDir" in location)) throw new Error("not an embedded location");
  return location.dataDir;
}

/**
 * Fresh data directories (`../_stores.ts`): PGlite's `initdb` takes seconds, so the suite's
 * fresh stores start from a copy of one PGlite data directory made once per test file (exactly
 * what the store itself makes on first start); the creation itself is tested on its own
 * (`embedded_test.ts`).
 */
export function embeddedBackend(): SuiteBackend & AsyncDisposable {
  return {
    fresh: async () => ({ dataDir: await freshDataDir() }),
    async raw(location, statement) {
      const db = await PGlite.create(`${dataDirOf(location)}/pgdata`);
      try {
        await db.exec(statement);
      } finally {
        await db.close();
      }
    },
    // The directories go with the others when the test file ends.
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}
