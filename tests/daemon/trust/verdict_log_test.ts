import assert from "node:assert/strict";
import {
  VerdictLog,
  type VerdictRecord,
  verdictToJson,
} from "../../../daemon/trust/verdict_log.ts";

const at = new Date("2026-11-22T12:00:00.000Z");

function record(i: number, extra: Partial<VerdictRecord> = {}): VerdictRecord {
  return {
    at: new Date(at.getTime() + i * 1000),
    tier: "tee",
    model: "devnet/tiny-chat",
    provider: `0x${String(i).padStart(40, "0")}`,
    gateway: "http://127.0.0.1:9201",
    outcome: "accepted",
    verdict: `verdict ${i}`,
    ...extra,
  };
}

Deno.test("verdict log: newest first, bounded by its capacity", () => {
  const log = new VerdictLog({ capacity: 3 });
  assert.deepEqual(log.latest(), []);
  for (let i = 0; i < 5; i++) log.append(record(i));
  assert.equal(log.size, 3);
  assert.equal(log.capacity, 3);
  assert.deepEqual(log.latest().map((r) => r.verdict), ["verdict 4", "verdict 3", "verdict 2"]);
  assert.deepEqual(log.latest(2).map((r) => r.verdict), ["verdict 4", "verdict 3"]);
  assert.deepEqual(log.latest(0), []);
  assert.deepEqual(log.latest(99).length, 3);
  assert.equal(new VerdictLog().capacity, 200);
});

Deno.test("verdict log: records are copied and long strings cut, so memory stays bounded", () => {
  const log = new VerdictLog({ capacity: 2 });
  const original = record(1, { verdict: "v".repeat(10_000), gateway: "g".repeat(500) });
  log.append(original);
  (original.at as Date).setTime(0);
  const [stored] = log.latest();
  assert.equal(stored.at.toISOString(), "2026-11-22T12:00:01.000Z");
  assert.equal(stored.verdict.length, 200);
  assert.ok(stored.verdict.endsWith("…"));
  assert.equal(stored.gateway.length, 200);
});

Deno.test("verdict log: refusals keep their code; the JSON form is flat", () => {
  const log = new VerdictLog();
  log.append(record(7, { outcome: "refused", code: "attestation_mock", verdict: "mock" }));
  log.append(record(8));
  assert.deepEqual(log.latest().map(verdictToJson), [
    {
      at: "2026-11-22T12:00:08.000Z",
      tier: "tee",
      model: "devnet/tiny-chat",
      provider: `0x${"8".padStart(40, "0")}`,
      gateway: "http://127.0.0.1:9201",
      outcome: "accepted",
      verdict: "verdict 8",
      code: null,
    },
    {
      at: "2026-11-22T12:00:07.000Z",
      tier: "tee",
      model: "devnet/tiny-chat",
      provider: `0x${"7".padStart(40, "0")}`,
      gateway: "http://127.0.0.1:9201",
      outcome: "refused",
      verdict: "mock",
      code: "attestation_mock",
    },
  ]);
});

Deno.test("verdict log: bad capacity and bad dates are refused", () => {
  for (const capacity of [0, -1, 1.5, 100_001, Number.NaN]) {
    assert.throws(() => new VerdictLog({ capacity }), RangeError, String(capacity));
  }
  const log = new VerdictLog();
  assert.throws(() => log.append(record(1, { at: new Date("nope") })), TypeError);
  assert.equal(log.size, 0);
});
