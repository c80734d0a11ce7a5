import assert from "node:assert/strict";
import { join } from "node:path";
import { ApprovedMeasurements, MeasurementSetError } from "../../../crypto/tee/mod.ts";

const a = "0x" + "ab".repeat(32);
const b = "0x" + "01".repeat(32);

Deno.test("a set from a list normalizes case and bytes", () => {
  const set = ApprovedMeasurements.fromList([
    a.toUpperCase().replace("0X", "0x"),
    new Uint8Array(32).fill(1),
    b,
  ]);
  assert.equal(set.size, 2);
  assert.ok(set.has(a));
  assert.ok(set.has(new Uint8Array(32).fill(0xab)));
  assert.ok(!set.has("0x" + "cd".repeat(32)));
  assert.ok(!set.has("not an id"));
  assert.deepEqual(set.list(), [b, a]);
  assert.equal(ApprovedMeasurements.fromList([]).size, 0);
});

Deno.test("bad entries are refused with the entry named", () => {
  for (const bad of ["0x1234", "ab".repeat(32), "0x" + "zz".repeat(32), new Uint8Array(31)]) {
    assert.throws(
      () => ApprovedMeasurements.fromList([a, bad as string]),
      (error: unknown) => error instanceof MeasurementSetError && /entry 1/.test(error.message),
    );
  }
});

Deno.test("the file format is read strictly", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "measurements.json");
    await Deno.writeTextFile(path, JSON.stringify({ measurements: [a, b] }));
    const set = await ApprovedMeasurements.fromFile(path);
    assert.equal(set.size, 2);
    assert.equal(set.source, path);
    const bad: [string, RegExp][] = [
      ["[]", /expected an object/],
      ["{", /not JSON/],
      [JSON.stringify({ measurements: [a], extra: 1 }), /unknown field "extra"/],
      [JSON.stringify({ measurements: "0x00" }), /must be an array/],
      [JSON.stringify({ measurements: [a, "0x12"] }), /entry 1 must be 0x/],
    ];
    for (const [text, message] of bad) {
      await Deno.writeTextFile(path, text);
      await assert.rejects(ApprovedMeasurements.fromFile(path), (error: unknown) => {
        assert.ok(error instanceof MeasurementSetError);
        assert.match(error.message, message);
        assert.ok(error.message.includes(path), "the message names the file");
        return true;
      });
    }
    await assert.rejects(
      ApprovedMeasurements.fromFile(join(dir, "missing.json")),
      /cannot be read/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
