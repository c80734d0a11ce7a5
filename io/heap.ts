/**
 * Gives the main isolate's spare heap back to the system after a burst of work (a history
 * scan): one full garbage collection, which V8 runs as a memory-reducing one when asked from
 * script — it shrinks the young generation back to its start size and releases emptied pages.
 *
 * Without it V8 keeps what a burst made it grow (measured on the indexer after a first scan of
 * 50,100 settlements: 56 MiB of young generation of which 7 in use, and the old generation's
 * garbage, 90–150 MiB resident for as long as the process runs), because its own memory
 * reducer does not run while the process is idle. The `gc` function is V8's (`--expose-gc`),
 * set by the program itself at the first call, so it holds however the program is started
 * (`deno task`, `deno run`, the container); it is obtained in a context of its own
 * (`node:vm`) and never appears in the program's globals.
 *
 * @module
 */

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let collect: (() => void) | null | undefined;

/**
 * Runs one full, memory-reducing garbage collection of the calling isolate (tens of ms on a
 * heap of tens of MiB: call it once after a burst, never per request).
 *
 * @returns whether it ran (`false` when the runtime does not offer V8's `gc`).
 */
export function compactHeap(): boolean {
  if (collect === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      const gc: unknown = runInNewContext("gc");
      collect = typeof gc === "function" ? gc as () => void : null;
    } catch {
      collect = null;
    }
  }
  if (!collect) return false;
  collect();
  return true;
}
