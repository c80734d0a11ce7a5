/**
 * Paying for attempts (`daemon/account/payments.ts`): the voucher raises the total signed to a
 * provider by exactly the attempt's worst case over what the daemon may owe it, numbers follow
 * each other, the caps refuse before anything is signed with what was spent and when it
 * resets, and costs are recorded once, at most the worst case.
 */

import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { parseVoucher, VoucherSigner, VoucherVerifier, worstCaseCost } from "../../../chain/mod.ts";
import { Ledger } from "../../../daemon/account/ledger.ts";
import { DaemonPayments } from "../../../daemon/account/payments.ts";
import { parseSpendCap } from "../../../daemon/account/spend_cap.ts";
import { DaemonError, type PaymentAttempt } from "../../../daemon/core/mod.ts";

const domain = { chainId: 31337, escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9" } as const;
const P = "0x00000000000000000000000000000000000000aa" as const;
const prices = { input: 150_000n, output: 600_000n };

function attempt(extra: Partial<PaymentAttempt> = {}): PaymentAttempt {
  return {
    provider: P,
    model: "devnet/echo",
    tier: "verified",
    kind: "chat",
    prices,
    contextLength: 8192,
    requestBytes: 100,
    maxTokens: 50,
    key: "local",
    ...extra,
  };
}

async function setup(caps = {}) {
  const dir = await Deno.makeTempDir({ prefix: "net-pay-" });
  const now = new Date("2026-05-07T12:00:00Z"); // a Thursday
  const ledger = await Ledger.open(dir, { clock: () => now, log: () => {} });
  const signer = new VoucherSigner(generatePrivateKey(), domain);
  const payments = new DaemonPayments({ signer, ledger, caps, clock: () => now });
  return {
    payments,
    ledger,
    signer,
    [Symbol.asyncDispose]: async () => {
      payments.close();
      await ledger.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("DaemonPayments: each voucher adds the worst case to what may be owed, and is verifiable", async () => {
  await using s = await setup();
  const worst = worstCaseCost(prices, { requestBytes: 100, maxTokens: 50, contextLength: 8192 });
  const verifier = new VoucherVerifier(domain);
  const first = s.payments.authorize(attempt());
  const second = s.payments.authorize(attempt());
  const [v1, v2] = [first, second].map((t) => verifier.verify(parseVoucher(t.header[1])));
  assert.equal(first.header[0], "net-voucher");
  assert.deepEqual([v1.seq, v1.cumulative, v1.consumer], [1n, worst, s.signer.address]);
  assert.deepEqual([v2.seq, v2.cumulative], [2n, 2n * worst], "both in flight: both worst cases");
  assert.equal(first.paid({ promptTokens: 10, completionTokens: 20 }), 13n);
  second.refused();
  const third = verifier.verify(parseVoucher(s.payments.authorize(attempt()).header[1]));
  assert.deepEqual([third.seq, third.cumulative], [3n, 13n + worst], "what is owed, plus this one");
  // A provider's usage above the worst case is recorded at the worst case.
  const big = s.payments.authorize(attempt({ maxTokens: 1 }));
  const bigWorst = big.worst;
  assert.equal(big.paid({ promptTokens: 10_000, completionTokens: 10_000 }), bigWorst);
});

Deno.test("DaemonPayments: caps refuse before signing, with what was spent and when it resets", async () => {
  const cap = parseSpendCap("0.000000000000001/week"); // 1000 wei
  await using s = await setup({ daemon: null, keys: new Map([["agent", cap]]) });
  const worst = worstCaseCost(prices, { requestBytes: 100, maxTokens: 50, contextLength: 8192 });
  const fits = Number(1000n / worst);
  for (let i = 0; i < fits; i++) s.payments.authorize(attempt({ key: "agent" }));
  let refusal: DaemonError | undefined;
  try {
    s.payments.authorize(attempt({ key: "agent" }));
  } catch (error) {
    refusal = error as DaemonError;
  }
  assert.ok(refusal instanceof DaemonError && refusal.code === "budget_exceeded");
  assert.equal(refusal.status, 402);
  assert.deepEqual(refusal.data?.budget, {
    scope: "key",
    key: "agent",
    spent: String(BigInt(fits) * worst),
    cap: "1000",
    max_spend: "0.000000000000001/week",
    period: "week",
    resets_at: "2026-05-11T00:00:00.000Z",
    needed: String(worst),
  });
  assert.equal(s.ledger.provider(P).seq, BigInt(fits), "the refused attempt signed nothing");
  // Another key is not held by this key's cap.
  s.payments.authorize(attempt({ key: "editor" }));
});
