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

/** Writes the archive `tar`'s directories and files into the existing directory `into`. */
export async function untar(tar: Uint8Array, into: string): Promise<void> {
  let at = 0;
  while (at + BLOCK <= tar.length) {
    const header = tar.subarray(at, at + BLOCK);
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
    at += BLOCK;
    if (type === "5") {
      await Deno.mkdir(path, { recursive: true, mode: 0o700 });
    } else if (type === "0") {
      if (at + size > tar.length) {
        throw new Error(`the tar entry "${name}" holds ${size} bytes, the archive ends before`);
      }
      await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
      await Deno.writeFile(path, tar.subarray(at, at + size), { mode: 0o600 });
      at += Math.ceil(size / BLOCK) * BLOCK;
    } else {
      throw new Error(`the tar entry "${name}" is of type "${type}", expected a file or directory`);
    }
  }
  throw new Error(`the tar archive ends at ${tar.length} bytes without its end blocks`);
}
