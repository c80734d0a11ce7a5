import assert from "node:assert/strict";
import { readAllLimited } from "../../io/read_limited.ts";

const bytes = (...values: number[]) => Uint8Array.from(values);

Deno.test("readAllLimited: bodies within the limit are read whole, the rest is refused", async () => {
  const cases: [string, Uint8Array[], number, Uint8Array | null][] = [
    ["empty stream, limit 0", [], 0, bytes()],
    ["empty chunks only", [bytes(), bytes()], 0, bytes()],
    ["one chunk below the limit", [bytes(1, 2, 3)], 4, bytes(1, 2, 3)],
    ["exactly the limit", [bytes(1, 2), bytes(3, 4)], 4, bytes(1, 2, 3, 4)],
    ["many small chunks, joined in order", [bytes(1), bytes(2), bytes(3)], 3, bytes(1, 2, 3)],
    ["one byte over, in the last chunk", [bytes(1, 2), bytes(3, 4, 5)], 4, null],
    ["one byte over, limit 0", [bytes(9)], 0, null],
    ["the first chunk alone is over", [bytes(1, 2, 3, 4, 5), bytes(6)], 4, null],
    ["empty chunks do not count", [bytes(), bytes(1), bytes(), bytes(2)], 2, bytes(1, 2)],
  ];
  for (const [label, chunks, limit, expected] of cases) {
    const stream = ReadableStream.from(chunks);
    assert.deepEqual(await readAllLimited(stream, limit), expected, label);
    assert.equal(stream.locked, false, `${label}: the reader is released`);
  }
});

Deno.test("readAllLimited: a null stream reads as empty", async () => {
  assert.deepEqual(await readAllLimited(null, 0), new Uint8Array());
});

Deno.test("readAllLimited: an endless stream is cut at the limit and the rest cancelled", async () => {
  let pulls = 0;
  let cancelled = false;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(new Uint8Array(1000).fill(7));
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  assert.equal(await readAllLimited(endless, 10_000), null);
  assert.ok(cancelled, "the rest of the stream was cancelled");
  // 10 chunks fill the limit, the 11th goes over: nothing more is pulled after that.
  assert.equal(pulls, 11);
  assert.equal(endless.locked, false);
});

Deno.test("readAllLimited: a stream that fails passes its error on and releases the reader", async () => {
  const failure = new Error("connection reset");
  let sent = false;
  const broken = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) controller.error(failure);
      else controller.enqueue(bytes(1, 2));
      sent = true;
    },
  });
  await assert.rejects(readAllLimited(broken, 100), (error: unknown) => error === failure);
  assert.equal(broken.locked, false);
});
