import assert from "node:assert/strict";
import { ReplayGuard } from "../../devnet/replay_guard.ts";

const now = new Date("2026-11-22T12:00:00Z");
const at = (seconds: number) => new Date(now.getTime() + seconds * 1000);
const enc = (n: number) => Uint8Array.from({ length: 39 }, (_, i) => (i * 7 + n) & 0xff);

Deno.test("a fresh, dated request is admitted once", () => {
  const guard = new ReplayGuard();
  assert.deepEqual(guard.admit(enc(1), now.toUTCString(), now), { ok: true });
  const again = guard.admit(enc(1), now.toUTCString(), at(1));
  assert.equal(again.ok, false);
  assert.equal(!again.ok && again.reason, "replayed");
  assert.deepEqual(guard.admit(enc(2), now.toUTCString(), at(1)), { ok: true });
});

Deno.test("undated, unparseable and out-of-window requests are refused", () => {
  const guard = new ReplayGuard({ windowMs: 60_000 });
  const reason = (date: string | null, clock = now) => {
    const v = guard.admit(enc(9), date, clock);
    return v.ok ? "ok" : v.reason;
  };
  assert.equal(reason(null), "no_date");
  assert.equal(reason("yesterday-ish"), "stale");
  assert.equal(reason(at(-61).toUTCString()), "stale");
  assert.equal(reason(at(61).toUTCString()), "stale", "a date in the future counts too");
  assert.equal(reason(at(-59).toUTCString()), "ok");
});

Deno.test("old keys are forgotten once they could only be refused as stale anyway", () => {
  const guard = new ReplayGuard({ windowMs: 1000, capacity: 10 });
  guard.admit(enc(1), now.toUTCString(), now);
  // Far later, the same prefix with a fresh date: the old entry has been pruned.
  const later = at(10);
  assert.deepEqual(guard.admit(enc(1), later.toUTCString(), later), { ok: true });
  for (let i = 2; i < 40; i++) guard.admit(enc(i), later.toUTCString(), later);
  assert.equal(guard.admit(enc(39), later.toUTCString(), later).ok, false, "recent keys are kept");
});
