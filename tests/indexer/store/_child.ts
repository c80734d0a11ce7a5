/**
 * A child process for the store tests. `deno run -A _child.ts <mode> <location JSON> [options JSON]`:
 *
 * - `hold`: opens the store, prints `ready writer=<bool>`, and waits to be killed.
 * - `write`: becomes the writer (waiting for the lock), then commits chunks of the synthetic
 *   chain from the store's cursor on, printing `committed <next block>` after each commit,
 *   until `lastBlock` is scanned; prints `done`.
 */

import { openStore, type StoreLocation } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { IDENTITY } from "./_helpers.ts";
import { unitRandom } from "../../_random.ts";

/** Options of the `write` mode. */
export interface WriterOptions {
  seed: number;
  confirmations: number;
  lastBlock: string;
  /** Seeds the chunk sizes and heads (differs per run, so kills land in new places). */
  run: number;
}

const [mode, locationJson, optionsJson] = Deno.args;
const location = JSON.parse(locationJson) as StoreLocation;
const write = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));

if (mode === "hold") {
  const store = await openStore(location, { ...IDENTITY, confirmations: 5, log: () => {} });
  write(`ready writer=${store.writer}`);
  await new Promise(() => {});
} else if (mode === "write") {
  const options = JSON.parse(optionsJson) as WriterOptions;
  const chain = new SyntheticChain({ seed: options.seed, maxPerBlock: 8 });
  const store = await openStore(location, {
    ...IDENTITY,
    confirmations: options.confirmations,
    log: () => {},
  });
  while (!(await store.tryBecomeWriter())) await new Promise((r) => setTimeout(r, 50));
  write("ready");
  const rand = unitRandom(options.run);
  const last = BigInt(options.lastBlock);
  let next = (await store.state()).cursor.nextBlock;
  while (next <= last) {
    const size = BigInt(1 + Math.floor(rand() * 30));
    const to = next + size - 1n < last ? next + size - 1n : last;
    const head = to + BigInt(Math.floor(rand() * (options.confirmations + 4)));
    const result = await store.commitChunk(chain.chunk(next, to, head, options.confirmations));
    next = result.cursor.nextBlock;
    write(`committed ${next}`);
  }
  write("done");
  await store.close();
} else {
  throw new Error(`unknown mode ${mode}`);
}
