import assert from "node:assert/strict";
import { Pager } from "../../../indexer/dashboard/src/pager.ts";

const letters = "abcdefg".split("");

Deno.test("a paginating indexer: cursors forward, remembered backward, kept on refresh", () => {
  const pager = new Pager("providers", 3);
  assert.equal(pager.request(), "providers?limit=3");
  let page = pager.accept(["a", "b", "c"], { next_cursor: "c1" });
  assert.deepEqual(page, {
    rows: ["a", "b", "c"],
    hasPrevious: false,
    hasNext: true,
    label: "1–3",
    mode: "server",
  });
  pager.next();
  assert.equal(pager.request(), "providers?limit=3&cursor=c1");
  page = pager.accept(["d", "e", "f"], { next_cursor: "c/2+" });
  assert.equal(page.label, "4–6");
  pager.next();
  assert.equal(pager.request(), "providers?limit=3&cursor=c%2F2%2B");
  page = pager.accept(["g"], { next_cursor: null });
  assert.deepEqual([page.label, page.hasNext, page.hasPrevious], ["7–7", false, true]);
  pager.next(); // no next page: stays
  assert.equal(pager.request(), "providers?limit=3&cursor=c%2F2%2B");
  // A refresh asks for the same page again.
  assert.equal(pager.request(), "providers?limit=3&cursor=c%2F2%2B");
  pager.previous();
  assert.equal(pager.request(), "providers?limit=3&cursor=c1");
  pager.previous();
  pager.previous();
  assert.equal(pager.request(), "providers?limit=3");
});

Deno.test("a whole list (today's indexer): paged in the page, clamped when it shrinks", () => {
  const pager = new Pager("models", 3);
  let page = pager.accept(letters, {});
  assert.deepEqual(page, {
    rows: ["a", "b", "c"],
    hasPrevious: false,
    hasNext: true,
    label: "1–3 of 7",
    mode: "client",
  });
  pager.next();
  pager.next();
  assert.equal(pager.request(), "models?limit=3", "no cursor is sent to an indexer without them");
  page = pager.accept(letters, {});
  assert.deepEqual([page.rows, page.label, page.hasNext], [["g"], "7–7 of 7", false]);
  pager.next();
  assert.equal(pager.accept(letters, {}).label, "7–7 of 7");
  // The list shrinks to 4: the third page no longer exists, the last one is shown.
  page = pager.accept(letters.slice(0, 4), {});
  assert.deepEqual([page.rows, page.label], [["d"], "4–4 of 4"]);
  assert.deepEqual(pager.accept([], {}).label, "no rows");
});

Deno.test("an indexer that starts paginating starts over from the first page", () => {
  const pager = new Pager("providers", 2);
  pager.accept(letters, {});
  pager.next();
  const page = pager.accept(["a", "b"], { next_cursor: "x" });
  assert.deepEqual([page.mode, page.label, page.hasPrevious], ["server", "1–2", false]);
});

Deno.test("a page size must be a positive integer", () => {
  for (const bad of [0, -1, 1.5, NaN]) {
    assert.throws(() => new Pager("providers", bad), /pageSize must be a positive integer/);
  }
});
