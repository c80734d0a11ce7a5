/**
 * The embedded stores' process: `_embedded_host.ts` starts it (`deno run` of this module, with
 * read and write access to the stores' directories and the template cache only) and talks to
 * it over its standard input and output, one JSON request per line in, one JSON reply per line
 * out (`_embedded_protocol.ts`; `_embedded_engine.ts` answers them).
 *
 * It exits when its input ends: when the host ends it for idleness, and when the process that
 * started it dies, however it died (`kill -9` included: the kernel closes the pipe), so it
 * never outlives its indexer. It exits at once, without closing PGlite: an open transaction is
 * rolled back as after a crash (PostgreSQL's recovery at the next start), and nothing else is
 * pending, since every request it was sent has been answered or is lost with its caller.
 *
 * It ignores SIGINT and SIGTERM: a Ctrl-C in a terminal reaches the whole process group, and the
 * indexer, shutting down, still needs its store (it exits when the indexer has, as above).
 *
 * Nothing else may write to its standard output: `console.log` and `console.info` go to
 * standard error, as PGlite's own output does (kept by the engine for error messages).
 *
 * @module
 */

import { LineSplitter } from "../../io/_line_splitter.ts";
import { handle } from "./_embedded_engine.ts";
import type { WorkerRequest } from "./_embedded_protocol.ts";

/** The longest request line read (a statement and its parameters), UTF-16 code units. */
const MAX_REQUEST = 64 * 2 ** 20;

for (
  const signal of Deno.build.os === "windows" ? ["SIGINT"] as const : ["SIGINT", "SIGTERM"] as const
) {
  Deno.addSignalListener(signal, () => {});
}

console.log = console.error;
console.info = console.error;

const encoder = new TextEncoder();
const out = Deno.stdout.writable.getWriter();
/** Replies are written one after the other, whole lines each. */
let writing: Promise<void> = Promise.resolve();

function reply(line: string): void {
  writing = writing.then(() => out.write(encoder.encode(line + "\n")));
}

const lines = new LineSplitter(
  MAX_REQUEST,
  (length) => new Error(`a request line of ${length} characters, over ${MAX_REQUEST}`),
);
const decoder = new TextDecoder();
try {
  for await (const chunk of Deno.stdin.readable) {
    for (const line of lines.push(decoder.decode(chunk, { stream: true }))) {
      if (!line) continue;
      const request = JSON.parse(line) as WorkerRequest;
      void handle(request).then((answer) => reply(JSON.stringify(answer)));
    }
  }
} finally {
  // The input ended (or could not be read): the host is gone or ended this process.
  Deno.exit(0);
}
