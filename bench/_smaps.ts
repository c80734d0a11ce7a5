/**
 * What a process's resident memory is made of, from `/proc/<pid>/smaps` (Linux), in a few
 * kinds a reader can act on: the program's own binary, other files, the main `[heap]`, the
 * large anonymous reservations (WebAssembly memories and V8's code ranges reserve GiBs), the
 * 64 MiB regions glibc's malloc gives each thread's arena, and the rest of the anonymous memory
 * (V8's heap pages, stacks). RSS and PSS per kind, MiB.
 *
 * @module
 */

/** A kind of mapping. */
export type Kind = "binary" | "files" | "[heap]" | "reserved ≥ 1 GiB" | "arena-sized" | "other";

/** RSS and PSS per kind, MiB. */
export type Breakdown = Record<Kind, { rss: number; pss: number }>;

const KINDS: readonly Kind[] = [
  "binary",
  "files",
  "[heap]",
  "reserved ≥ 1 GiB",
  "arena-sized",
  "other",
];

/** The breakdown of process `pid` now (empty when it has exited). */
export function smapsOf(pid: number): Breakdown {
  const out = Object.fromEntries(KINDS.map((k) => [k, { rss: 0, pss: 0 }])) as Breakdown;
  let text: string;
  let exe = "";
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/smaps`);
    exe = Deno.readLinkSync(`/proc/${pid}/exe`);
  } catch {
    return out;
  }
  let kind: Kind = "other";
  for (const line of text.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const size = Number(BigInt(`0x${head[2]}`) - BigInt(`0x${head[1]}`));
      const path = head[3];
      kind = path === exe
        ? "binary"
        : path === "[heap]"
        ? "[heap]"
        : path.startsWith("/")
        ? "files"
        : size >= 2 ** 30
        ? "reserved ≥ 1 GiB"
        : size <= 2 ** 26 && size >= 2 ** 25 && path === ""
        ? "arena-sized"
        : "other";
      continue;
    }
    const field = /^(Rss|Pss):\s+(\d+) kB/.exec(line);
    if (field) out[kind][field[1] === "Rss" ? "rss" : "pss"] += Number(field[2]) / 1024;
  }
  return out;
}

/** One line per kind, `rss/pss` MiB. */
export function formatBreakdown(breakdown: Breakdown): string {
  return KINDS.map((k) => `${k} ${breakdown[k].rss.toFixed(1)}/${breakdown[k].pss.toFixed(1)}`)
    .join(" · ");
}
