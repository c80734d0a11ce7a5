import assert from "node:assert/strict";
import { NonceBook } from "../../../crypto/tee/mod.ts";
import { plusSeconds } from "./_helpers.ts";

const now = new Date("2026-11-22T12:00:00Z");

Deno.test("a nonce is accepted once", () => {
  const book = new NonceBook();
  const nonce = book.issue(now);
  assert.equal(nonce.length, 32);
  assert.equal(book.consume(nonce, now), "ok");
  assert.equal(book.consume(nonce, now), "reused");
  assert.equal(book.consume(nonce, plusSeconds(now, 30)), "reused");
});

Deno.test("a nonce is accepted up to its max age and not a millisecond later", () => {
  const book = new NonceBook();
  const a = book.issue(now);
  const b = book.issue(now);
  assert.equal(book.consume(a, plusSeconds(now, 60)), "ok");
  assert.equal(book.consume(b, plusSeconds(now, 60.001)), "expired");
  assert.equal(book.consume(b, plusSeconds(now, 61)), "reused", "an expired nonce is spent too");
  const short = new NonceBook({ maxAgeSeconds: 5 });
  const c = short.issue(now);
  assert.equal(short.consume(c, plusSeconds(now, 6)), "expired");
});

Deno.test("nonces that were never issued, or were forgotten, are unknown", () => {
  const book = new NonceBook({ capacity: 2 });
  assert.equal(book.consume(new Uint8Array(32), now), "unknown");
  assert.equal(book.consume(new Uint8Array(31), now), "unknown");
  const first = book.issue(now);
  book.issue(now);
  book.issue(now); // evicts `first`
  assert.equal(book.size, 2);
  assert.equal(book.consume(first, now), "unknown");
  // Entries are pruned after twice the window.
  const old = book.issue(now);
  assert.equal(book.consume(old, plusSeconds(now, 121)), "unknown");
});

Deno.test("the random source is injected and checked", () => {
  let counter = 0;
  const book = new NonceBook({ random: (n) => new Uint8Array(n).fill(++counter) });
  assert.deepEqual(book.issue(now), new Uint8Array(32).fill(1));
  const stuck = new NonceBook({ random: (n) => new Uint8Array(n) });
  stuck.issue(now);
  assert.throws(() => stuck.issue(now), /repeated/);
  assert.throws(() => new NonceBook({ random: () => new Uint8Array(8) }).issue(now), /32 bytes/);
  assert.throws(() => new NonceBook({ maxAgeSeconds: 0 }), RangeError);
  assert.throws(() => new NonceBook({ capacity: 0 }), RangeError);
});

// A nonce issued at an Invalid Date has a NaN issue time: its age check (`now - issuedAt >
// maxAge`) is always false, so it would never expire. Consuming at an Invalid Date is the same.
Deno.test("an invalid clock or window is refused, never read as 'no expiry'", () => {
  const book = new NonceBook();
  for (const bad of [new Date(Number.NaN), undefined, 0]) {
    assert.throws(() => book.issue(bad as Date), /NonceBook.issue: "now" must be a valid Date/);
  }
  assert.equal(book.size, 0, "nothing was issued");
  const nonce = book.issue(now);
  assert.throws(
    () => book.consume(nonce, new Date(Number.NaN)),
    /NonceBook.consume: "now" must be a valid Date/,
  );
  assert.equal(book.consume(nonce, now), "ok", "a refused call does not spend the nonce");
  for (const bad of [Number.NaN, Infinity, -5, 0.5, 1.5]) {
    assert.throws(() => new NonceBook({ maxAgeSeconds: bad }), RangeError, String(bad));
  }
});
