/**
 * The event-stream parser's cost is linear in the size of an event, however it is chunked.
 *
 * Groups (each prints ratios against its baseline):
 * - `chunking`: one 1 MiB event parsed from one chunk (baseline), from 4 KiB chunks and from
 *   64-byte chunks: the ratios are the per-chunk overhead (stream reads, decoding);
 * - `event size, 64-byte chunks`: 256 KiB (baseline) and 1 MiB events. Linear work makes the
 *   second about 4× the first; the quadratic parser this replaced (which re-scanned the whole
 *   pending line on every chunk) made it about 16×.
 *
 * Run: `deno bench -A bench/sse_bench.ts` (or `deno task bench`).
 *
 * @module
 */

import { parseSse } from "../io/sse.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

function event(size: number): Uint8Array {
  return new TextEncoder().encode(`data: ${"x".repeat(size)}\n\n`);
}

function chunked(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

async function parse(chunks: Uint8Array[], expected: number): Promise<void> {
  let length = 0;
  for await (const event of parseSse(ReadableStream.from(chunks), { maxEventBytes: 2 * MiB })) {
    length += event.data.length;
  }
  if (length !== expected) {
    throw new Error(`benchmark self-check failed: parsed ${length} of ${expected} characters`);
  }
}

const large = event(MiB);
const cases: [group: string, name: string, chunks: Uint8Array[], size: number][] = [
  ["chunking", "1 MiB event, 1 chunk", [large], MiB],
  ["chunking", "1 MiB event, 4 KiB chunks", chunked(large, 4 * KiB), MiB],
  ["chunking", "1 MiB event, 64 B chunks", chunked(large, 64), MiB],
  ["event size, 64-byte chunks", "256 KiB event", chunked(event(256 * KiB), 64), 256 * KiB],
  ["event size, 64-byte chunks", "1 MiB event", chunked(large, 64), MiB],
];

const baselines = new Set(["1 MiB event, 1 chunk", "256 KiB event"]);
for (const [group, name, chunks, size] of cases) {
  Deno.bench({
    name,
    group,
    baseline: baselines.has(name),
    // An async function: the runner awaits each iteration.
    fn: async () => {
      await parse(chunks, size);
    },
  });
}
