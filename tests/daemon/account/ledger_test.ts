/**
 * The spend ledger (`daemon/account/ledger.ts`) on a real data directory: what is written is
 * read back the same, an attempt is counted once however often its cost is recorded, a torn last
 * line (a crash of the machine mid-write) is dropped, and no content is ever written.
 */

import assert from "node:assert/strict";
import { Ledger, type LedgerOpen } from "../../../daemon/account/ledger.ts";

const A = "0x00000000000000000000000000000000000000aa" as const;
const B = "0x00000000000000000000000000000000000000bb" as const;

function open(id: string, at: string, extra: Partial<LedgerOpen> = {}): LedgerOpen {
  return {
    id,
    at: new Date(at),
    provider: A,
    model: "devnet/echo",
    tier: "verified",
    key: "local",
    seq: 1n,
    cumulative: 100n,
    worst: 100n,
    ...extra,
  };
}

Deno.test("Ledger: pending at the worst case, then the cost once; read back the same", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-ledger-" });
  try {
    let now = new Date("2026-05-04T10:00:00Z");
    const clock = () => now;
    const ledger = await Ledger.open(dir, { clock, log: () => {} });
    ledger.open(open("a1", "2026-05-04T10:00:00Z"));
    ledger.open(open("a2", "2026-05-04T10:00:01Z", { seq: 2n, cumulative: 250n, worst: 150n }));
    ledger.open(open("b1", "2026-05-04T10:00:02Z", { provider: B, key: "agent", worst: 40n }));
    assert.deepEqual(ledger.provider(A), { seq: 2n, signed: 250n, final: 0n, pending: 250n });
    assert.equal(ledger.spentSince(new Date("2026-05-04T00:00:00Z")), 290n);
    assert.equal(
      ledger.settle("a1", { cost: 7n, promptTokens: 3, completionTokens: 4, source: "reply" }),
      true,
    );
    // Counted once: a second cost for the same attempt is refused and writes nothing.
    assert.equal(
      ledger.settle("a1", { cost: 9n, promptTokens: 3, completionTokens: 4, source: "bill" }),
      false,
    );
    // A cost above the worst case is recorded at the worst case.
    assert.equal(
      ledger.settle("b1", { cost: 99n, promptTokens: 1, completionTokens: 1, source: "reply" }),
      true,
    );
    assert.deepEqual(ledger.provider(A), { seq: 2n, signed: 250n, final: 7n, pending: 150n });
    assert.equal(ledger.spentSince(new Date("2026-05-04T00:00:00Z")), 7n + 150n + 40n);
    assert.equal(ledger.spentSince(new Date("2026-05-04T00:00:00Z"), "agent"), 40n);
    assert.deepEqual(ledger.pending().map((e) => e.id), ["a2"]);
    now = new Date("2026-06-01T00:00:05Z"); // a new month, a new file
    ledger.settle("a2", { cost: 0n, promptTokens: 0, completionTokens: 0, source: "refused" });
    const rows = ledger.usage("2026-05-01", "2026-05-31");
    await ledger.close();

    const again = await Ledger.open(dir, { clock, log: () => {} });
    assert.deepEqual(again.usage("2026-05-01", "2026-05-31"), rows);
    assert.deepEqual(again.provider(A), { seq: 2n, signed: 250n, final: 7n, pending: 0n });
    assert.deepEqual(again.pending(), []);
    assert.deepEqual(rows.map((r) => [r.provider, r.key, r.requests, r.cost, r.pending]), [
      [A, "local", 2, 7n, 0n],
      [B, "agent", 1, 40n, 0n],
    ]);
    await again.close();
    const files = [];
    for await (const entry of Deno.readDir(dir)) files.push(entry.name);
    assert.deepEqual(files.sort(), ["2026-05.jsonl", "2026-06.jsonl"]);
    const text = await Deno.readTextFile(`${dir}/2026-05.jsonl`);
    assert.ok(!/hello|content|messages/i.test(text), "no content is ever written");
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(`${dir}/2026-05.jsonl`)).mode! & 0o777, 0o600);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Ledger: a torn last line is dropped and cut off; a bad whole line is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-ledger-" });
  try {
    const clock = () => new Date("2026-05-04T10:00:00Z");
    const ledger = await Ledger.open(dir, { clock, log: () => {} });
    ledger.open(open("a1", "2026-05-04T10:00:00Z"));
    await ledger.close();
    const path = `${dir}/2026-05.jsonl`;
    const whole = await Deno.readTextFile(path);
    await Deno.writeTextFile(path, whole + '{"t":"cost","id":"a1","cos', { append: false });
    const warnings: string[] = [];
    const again = await Ledger.open(dir, { clock, log: (m) => warnings.push(m) });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /torn record/);
    assert.equal(
      await Deno.readTextFile(path),
      whole,
      "the file is cut back to its last whole line",
    );
    assert.deepEqual(again.pending().map((e) => e.id), ["a1"]);
    await again.close();
    await Deno.writeTextFile(path, whole + "not json\n" + whole);
    await assert.rejects(Ledger.open(dir, { clock, log: () => {} }), /line 2 is not a record/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
