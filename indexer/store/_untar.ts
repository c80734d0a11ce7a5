/**
 * Writes the files of a ustar archive (what PGlite's `dumpDataDir` makes: directories and
 * regular files, POSIX ustar headers) into a directory, without PGlite: unpacking the
 * template through PGlite (`loadDataDir`) copies the whole tarball into its WebAssembly memory,
 * which never shrinks (measured: the creating process peaked at 325 MiB).
 *
 * Fails closed: a header whose checksum is wrong, an entry of another type (links, devices,
 * extended headers), a path that would leave the directory, or an archive cut short is an
 * error (the template is then made again, `_template.ts`).
 *
 * @module
 */

import { dirname, join } from "node:path";

const BLOCK = 512;
const decoder = new TextDecoder();

/** A NUL-terminated text field of a header. */
function text(header: Uint8Array, at: number, length: number): string {
  const field = header.subarray(at, at + length);
  const end = field.indexOf(0);
  return decoder.decode(end === -1 ? field : field.subarray(0, end));
}

/** An octal number field of a header. */
function octal(header: Uint8Array, at: number, length: number, what: string): number {
  const field = text(header, at, length).trim();
  if (!/^[0-7]+$/.test(field)) throw new Error(`a tar header's ${what} is "${field}", not octal`);
  return parseInt(field, 8);
}

/** The header's checksum, computed (its own field counted as spaces). */
function checksum(header: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i];
  return sum;
}

/** The entry's path inside `into`; throws when it would leave it. */
function inside(into: string, name: string): string {
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.length === 0 || parts.some((part) => part === "..")) {
    throw new Error(`a tar entry's path is "${name}", expected one inside the directory`);
  }
  return join(into, ...parts);
}

/** Exact reads over a stream of chunks: the bytes of a header, then a file's in pieces. */
class Blocks {
  readonly #chunks: AsyncIterator<Uint8Array>;
  #chunk: Uint8Array = new Uint8Array(0);
  #at = 0;
  /** Bytes read so far, for messages. */
  read = 0;

  constructor(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) {
    this.#chunks = Symbol.asyncIterator in chunks
      ? chunks[Symbol.asyncIterator]()
      : (async function* () {
        yield* chunks;
      })();
  }

  /** Up to `most` bytes (a view of the chunk in hand), or `null` at the end of the stream. */
  async upTo(most: number): Promise<Uint8Array | null> {
    while (this.#at >= this.#chunk.length) {
      const next = await this.#chunks.next();
      if (next.done) return null;
      this.#chunk = next.value;
      this.#at = 0;
    }
    const piece = this.#chunk.subarray(this.#at, this.#at + most);
    this.#at += piece.length;
    this.read += piece.length;
    return piece;
  }

  /** Stops reading the stream (a stream is cancelled, and a file it reads closed). */
  async close(): Promise<void> {
    await this.#chunks.return?.();
  }

  /** Exactly `length` bytes (copied when they span chunks), or `null` if the stream ends first. */
  async exactly(length: number): Promise<Uint8Array | null> {
    const first = await this.upTo(length);
    if (first === null || first.length === length) return first;
    const out = new Uint8Array(length);
    out.set(first);
    for (let filled = first.length; filled < length;) {
      const piece = await this.upTo(length - filled);
      if (piece === null) return null;
      out.set(piece, filled);
      filled += piece.length;
    }
    return out;
  }
}

const cut = (blocks: Blocks, what: string) =>
  new Error(`the tar archive ends at ${blocks.read} bytes, ${what}`);

/** Writes one file's `size` bytes, read from `blocks`, to `path` (mode 0600); none if cut. */
async function writeEntry(blocks: Blocks, path: string, name: string, size: number) {
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const file = await Deno.open(path, { write: true, create: true, truncate: true, mode: 0o600 });
  let whole = false;
  try {
    for (let left = size; left > 0;) {
      const piece = await blocks.upTo(left);
      if (piece === null) {
        throw new Error(
          `the tar entry "${name}" holds ${size} bytes, the archive ends before them (at ${blocks.read} bytes)`,
        );
      }
      for (let written = 0; written < piece.length;) {
        written += await file.write(piece.subarray(written));
      }
      left -= piece.length;
    }
    whole = true;
  } finally {
    file.close();
    if (!whole) await Deno.remove(path).catch(() => {});
  }
  const padding = (BLOCK - (size % BLOCK)) % BLOCK;
  if (padding > 0 && (await blocks.exactly(padding)) === null) {
    throw cut(blocks, `in the padding of "${name}"`);
  }
}

/**
 * Writes the directories and files of the ustar archive that `chunks` stream (a gzip stream
 * unzipped, say) into the existing directory `into`, as they come: it never holds more than a
 * chunk and a header.
 */
export async function untarStream(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  into: string,
): Promise<void> {
  const blocks = new Blocks(chunks);
  try {
    await writeEntries(blocks, into);
  } finally {
    await blocks.close().catch(() => {});
  }
}

async function writeEntries(blocks: Blocks, into: string): Promise<void> {
  for (;;) {
    const header = await blocks.exactly(BLOCK);
    if (header === null) throw cut(blocks, "without its end blocks");
    if (header.every((byte) => byte === 0)) return; // the end
    const expected = octal(header, 148, 8, "checksum");
    if (checksum(header) !== expected) {
      throw new Error(`a tar header's checksum is ${checksum(header)}, expected ${expected}`);
    }
    const prefix = text(header, 345, 155);
    const name = prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100);
    const size = octal(header, 124, 12, "size");
    const type = String.fromCharCode(header[156] || 48);
    const path = inside(into, name);
    if (type === "5") {
      await Deno.mkdir(path, { recursive: true, mode: 0o700 });
    } else if (type === "0") {
      await writeEntry(blocks, path, name, size);
    } else {
      throw new Error(`the tar entry "${name}" is of type "${type}", expected a file or directory`);
    }
  }
}

/** Writes the archive `tar`'s directories and files into the existing directory `into`. */
export async function untar(tar: Uint8Array, into: string): Promise<void> {
  await untarStream([tar], into);
}
