import assert from "node:assert/strict";
import { abbreviate, findCause, NetError } from "../errors.ts";

class ExampleError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ExampleError" as const;
}

Deno.test("message joins short message, details and hints; shortMessage stays one line", () => {
  const root = new Error("socket closed");
  const error = new ExampleError("Cannot read the thing: found A, expected B", {
    details: "at offset 7",
    hints: ["Try again later."],
    cause: root,
  });
  assert.equal(error.name, "ExampleError");
  assert.equal(error.shortMessage, "Cannot read the thing: found A, expected B");
  assert.equal(
    error.message,
    "Cannot read the thing: found A, expected B\nDetails: at offset 7\nTry again later.",
  );
  assert.equal(error.cause, root);
  assert.ok(error instanceof NetError && error instanceof Error);
  assert.equal(new NetError("x").cause, undefined);
});

Deno.test("findCause walks the chain and stops on cycles", () => {
  const inner = new ExampleError("inner");
  const outer = new NetError("outer", { cause: new Error("middle", { cause: inner }) });
  assert.equal(outer.walk((e) => e instanceof ExampleError), inner);
  assert.equal(findCause(outer, (e) => e instanceof TypeError), undefined);
  const a: { cause?: unknown } = {};
  const b = { cause: a };
  a.cause = b;
  assert.equal(findCause(a, () => false), undefined);
});

Deno.test("abbreviate keeps short values and cuts long ones", () => {
  assert.equal(abbreviate("0x1234", 10), "0x1234");
  assert.equal(abbreviate("0x91eb2b44d141d4ece09f", 6), "0x91eb…");
});
