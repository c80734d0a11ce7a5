/**
 * The provider's till (`devnet/provider_payments.ts`) as a unit: its coverage and deposit
 * rules, the voucher-number window, out-of-order arrival of concurrent requests, and the cap of
 * a bill at the worst case. The chain read is a function here; `provider_payments_test.ts` runs
 * the same till against the real Escrow.
 */

import assert from "node:assert/strict";
import type { Address } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { VoucherSigner, voucherToJson } from "../../chain/voucher.ts";
import { type PaymentHold, ProviderTill } from "../../devnet/provider_payments.ts";

const domain = { chainId: 31337, escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9" } as const;
const provider = "0x5b38da6a701c568545dcfcb03fcb875f56beddc4" as Address;
const usage = { promptTokens: 1, completionTokens: 1 };

function setup(account = { available: 1_000n, settled: 0n }, seqWindow?: number) {
  const consumer = new VoucherSigner(generatePrivateKey(), domain);
  let reads = 0;
  const till = new ProviderTill({
    provider,
    domain,
    seqWindow,
    readAccount: () => {
      reads++;
      return Promise.resolve(account);
    },
  });
  const header = (cumulative: bigint, seq: bigint) =>
    JSON.stringify(voucherToJson(consumer.sign({ provider, cumulative, seq })));
  return { consumer, till, header, reads: () => reads, account };
}

Deno.test("ProviderTill: concurrent requests arriving out of order are covered by the best voucher", async () => {
  const { till, header, consumer } = setup();
  // The consumer signed A (worst 50) then B (worst 50, both in flight): C_A = 50, C_B = 100.
  const b = await till.admit(header(100n, 2n), 50n) as PaymentHold;
  const a = await till.admit(header(50n, 1n), 50n) as PaymentHold;
  assert.ok(a.ok && b.ok);
  assert.deepEqual(till.account(consumer.address), {
    charged: 0n,
    held: 100n,
    settled: 0n,
    best: 100n,
  });
  a.charge(80n, usage); // a provider's bill above the worst case is capped at it
  b.charge(10n, usage);
  b.charge(40n, usage); // only the first charge counts
  assert.deepEqual(till.account(consumer.address), {
    charged: 60n,
    held: 0n,
    settled: 0n,
    best: 100n,
  });
  // A third request needing more than the vouchers cover is refused.
  const c = await till.admit(header(100n, 3n), 41n);
  assert.ok(!c.ok && c.code === "voucher_insufficient", c.ok ? "" : c.message);
  assert.match(c.ok ? "" : c.message, /cover 100 in total; this request needs 101/);
});

Deno.test("ProviderTill: used and too-old voucher numbers are refused", async () => {
  const { till, header } = setup(undefined, 4);
  assert.ok((await till.admit(header(10n, 9n), 1n)).ok);
  const again = await till.admit(header(10n, 9n), 1n);
  assert.ok(!again.ok && again.code === "voucher_replayed");
  const old = await till.admit(header(20n, 5n), 1n);
  assert.ok(!old.ok && old.code === "voucher_stale", old.ok ? "" : old.message);
  assert.ok((await till.admit(header(20n, 6n), 1n)).ok, "within the window, out of order");
});

Deno.test("ProviderTill: the used numbers, dropped in batches, still refuse every replay", async () => {
  // Window 4: `used` is pruned only once it holds more than 8 numbers. Before and after each
  // pruning, a number in the window that was used is a replay, one below it is stale, and one
  // in the window never used is served.
  const { till, header } = setup({ available: 10n ** 6n, settled: 0n }, 4);
  for (let seq = 1n; seq <= 30n; seq++) {
    assert.ok((await till.admit(header(seq * 10n, seq), 1n)).ok, `voucher ${seq}`);
    for (let old = 1n; old <= seq; old++) {
      const again = await till.admit(header(seq * 10n, old), 1n);
      assert.ok(!again.ok, `voucher ${old} again, after ${seq}`);
      assert.equal(again.code, old + 4n <= seq ? "voucher_stale" : "voucher_replayed");
    }
  }
  // A gap left in the window is served once, then replayed.
  assert.ok((await till.admit(header(400n, 33n), 1n)).ok);
  assert.ok((await till.admit(header(400n, 32n), 1n)).ok, "within the window, out of order");
  const twice = await till.admit(header(400n, 32n), 1n);
  assert.ok(!twice.ok && twice.code === "voucher_replayed");
});

Deno.test("ProviderTill: the deposit must cover what is unpaid; a refusal reads the chain again", async () => {
  const state = { available: 100n, settled: 0n };
  const { till, header, reads, consumer } = setup(state);
  const first = await till.admit(header(90n, 1n), 90n) as PaymentHold;
  assert.ok(first.ok);
  const refused = await till.admit(header(180n, 2n), 90n);
  assert.ok(!refused.ok && refused.code === "insufficient_deposit");
  const before = reads();
  // The consumer tops up: the read made before refusing admits it.
  state.available = 1_000n;
  const admitted = await till.admit(header(180n, 3n), 90n);
  assert.ok(admitted.ok, admitted.ok ? "" : admitted.message);
  assert.ok(reads() > before);
  // Claims: what was charged, under the best voucher; paid claims are not claimed again.
  first.charge(30n, usage);
  (admitted as PaymentHold).charge(20n, usage);
  const claims = till.claims();
  assert.equal(claims.length, 1);
  assert.equal(claims[0].total, 50n);
  assert.equal(claims[0].voucher.cumulative, 180n);
  till.paid(claims[0]);
  assert.deepEqual(till.claims(), []);
  assert.equal(till.account(consumer.address)?.settled, 50n);
});

Deno.test("ProviderTill: what the Escrow already paid counts as owed (a provider restarted)", async () => {
  const { till, header } = setup({ available: 1_000n, settled: 500n });
  const low = await till.admit(header(500n, 1n), 1n);
  assert.ok(!low.ok && low.code === "voucher_insufficient");
  assert.ok((await till.admit(header(501n, 2n), 1n)).ok);
});

Deno.test("ProviderTill: a chain that cannot be read is account_unavailable, never a free pass", async () => {
  const consumer = new VoucherSigner(generatePrivateKey(), domain);
  const till = new ProviderTill({
    provider,
    domain,
    readAccount: () => Promise.reject(new Error("connection refused")),
  });
  const header = JSON.stringify(
    voucherToJson(consumer.sign({ provider, cumulative: 10n, seq: 1n })),
  );
  const verdict = await till.admit(header, 1n);
  assert.ok(!verdict.ok && verdict.code === "account_unavailable");
  assert.match(verdict.ok ? "" : verdict.message, /cannot be read now: connection refused/);
  assert.deepEqual(till.claims(), []);
});
