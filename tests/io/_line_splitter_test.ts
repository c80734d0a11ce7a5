import assert from "node:assert/strict";
import { LineSplitter } from "../../io/_line_splitter.ts";

const never = (length: number) => new Error(`unexpected limit at ${length}`);

/** Every line of `text` (CR, LF or CRLF endings) and the unfinished rest, the simple way. */
function reference(text: string): string[] {
  const parts = text.split(/\r\n|\r|\n/);
  parts.pop(); // the unfinished rest is not a line
  return parts;
}

Deno.test("a 1 MiB line fed in 64-byte pieces is examined once per character (linear work)", () => {
  const MiB = 1024 * 1024;
  const text = "data: " + "x".repeat(MiB) + "\n\n";
  const splitter = new LineSplitter(2 * MiB, never);
  const lines: string[] = [];
  let pushes = 0;
  for (let at = 0; at < text.length; at += 64) {
    lines.push(...splitter.push(text.slice(at, at + 64)));
    pushes++;
  }
  assert.equal(pushes, Math.ceil(text.length / 64));
  assert.deepEqual(lines.map((l) => l.length), [6 + MiB, 0]);
  assert.equal(lines[0], text.slice(0, 6 + MiB));
  // Each character is examined exactly once. The quadratic parser this replaced re-scanned the
  // whole pending line on every piece: about 16,000 pieces × 512 KiB on average ≈ 8.6e9.
  assert.equal(splitter.scanned, text.length);
  assert.equal(splitter.pending, 0);
});

Deno.test("lines split the same way at every cut, CRLF across pieces included", () => {
  const text = "a\r\nb\rc\nd\r\r\n\ne\r\n\rf é😀\rg";
  const expected = reference(text);
  for (let cut = 0; cut <= text.length; cut++) {
    for (let second = cut; second <= text.length; second++) {
      const splitter = new LineSplitter(1024, never);
      const lines = [
        ...splitter.push(text.slice(0, cut)),
        ...splitter.push(text.slice(cut, second)),
        ...splitter.push(""),
        ...splitter.push(text.slice(second)),
      ];
      assert.deepEqual(lines, expected, `cuts ${cut}, ${second}`);
      assert.equal(splitter.scanned, text.length);
      assert.equal(splitter.pending, 1, "the unfinished 'g' is held");
    }
  }
});

Deno.test("an unfinished line past the limit is refused with the caller's error", () => {
  const splitter = new LineSplitter(100, (length) => new RangeError(`line of ${length}`));
  assert.deepEqual(splitter.push("short\n" + "x".repeat(60)), ["short"]);
  assert.throws(() => splitter.push("y".repeat(41)), /line of 101/);
  // A complete line is not the splitter's to judge (the event size bound is the parser's).
  assert.deepEqual(new LineSplitter(4, never).push("abcdefgh\n"), ["abcdefgh"]);
});
