import assert from "node:assert/strict";
import { getHeapSpaceStatistics } from "node:v8";
import { compactHeap } from "../../io/heap.ts";

const youngMiB = () =>
  (getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0) / 2 ** 20;

Deno.test("compactHeap gives back a young generation a burst grew, and the garbage", async () => {
  // A burst that keeps part of what it allocates across turns (as a scan does): V8 grows its
  // young generation and promotes garbage to the old one.
  let kept: unknown[][] = [];
  for (let round = 0; round < 60; round++) {
    kept.push(Array.from({ length: 20_000 }, (_, i) => ({ text: `settlement ${round} ${i}`, i })));
    if (kept.length > 4) kept.shift();
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  kept = [];
  const before = { young: youngMiB(), used: Deno.memoryUsage().heapUsed };
  assert.ok(before.young >= 8, `the burst grew the young generation to ${before.young} MiB`);
  assert.equal(compactHeap(), true);
  const after = { young: youngMiB(), used: Deno.memoryUsage().heapUsed };
  assert.ok(after.young < before.young / 2, `young ${before.young} → ${after.young} MiB`);
  assert.ok(after.used < before.used, `used ${before.used} → ${after.used} bytes`);
  // The function stays out of the program's globals.
  assert.equal("gc" in globalThis, false);
  assert.equal(compactHeap(), true);
});
