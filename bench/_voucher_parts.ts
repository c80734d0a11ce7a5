/**
 * The voucher's parts, each timed alone (for `daemon_voucher_bench.ts`): what the daemon does
 * per paid attempt (the voucher signed, the ledger's open and cost records, the header's JSON)
 * and what the provider does (the header read, the signature verified against the consumer's
 * cached key, the till's checks and hold), each on its own on this thread, so that their sum can
 * be set against what the voucher adds to a whole chat. Each is timed in this process's CPU time
 * (`process.cpuUsage`), which others' load on the machine does not inflate as it does wall time.
 *
 * @module
 */

import type { Address } from "viem";
import { hexToBytes } from "@noble/hashes/utils.js";
import process from "node:process";
import {
  parseVoucher,
  PreparedNonces,
  type VoucherDomain,
  VoucherSigner,
  voucherToJson,
  VoucherVerifier,
} from "../chain/mod.ts";
import { DaemonPayments, Ledger } from "../daemon/account/mod.ts";
import type { PaymentAttempt } from "../daemon/core/mod.ts";
import { type ConsumerAccountReading, ProviderTill } from "../devnet/provider_payments.ts";

const ROUNDS = 7;
const PER_ROUND = 300;

/**
 * This process's CPU time (user + system) in µs: parts are timed in CPU, not wall time, so that
 * others' load on the machine does not count.
 */
function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** Median over rounds (after one to warm up) of the mean CPU µs per call of `step(i)`. */
function time(step: (i: number) => void): number {
  const means: number[] = [];
  let i = 0;
  for (let r = -1; r < ROUNDS; r++) {
    const t0 = cpuUs();
    for (let k = 0; k < PER_ROUND; k++) step(i++);
    if (r >= 0) means.push((cpuUs() - t0) / PER_ROUND);
  }
  return means.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
}

/** As {@linkcode time}, with `before` run untimed before each round (it fills a pool). */
function timeWith(before: () => void, step: (i: number) => void): number {
  const means: number[] = [];
  let i = 0;
  for (let r = -1; r < ROUNDS; r++) {
    before();
    const t0 = cpuUs();
    for (let k = 0; k < PER_ROUND; k++) step(i++);
    if (r >= 0) means.push((cpuUs() - t0) / PER_ROUND);
  }
  return means.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
}

/** Times each part; returns µs per call by part. */
export async function timeVoucherParts(
  consumerKey: `0x${string}`,
  domain: VoucherDomain,
  readAccount: (consumer: Address) => Promise<ConsumerAccountReading>,
): Promise<Record<string, string>> {
  const provider = "0x00000000000000000000000000000000000000aa" as const;
  const signer = new VoucherSigner(consumerKey, domain);
  const dir = await Deno.makeTempDir({ prefix: "net-voucher-parts-" });
  const ledger = await Ledger.open(dir, { log: () => {} });
  const payments = new DaemonPayments({ signer, ledger });
  const attempt: PaymentAttempt = {
    provider,
    model: "devnet/echo",
    tier: "verified",
    kind: "chat",
    prices: { input: 1_000n, output: 2_000n },
    contextLength: 8192,
    requestBytes: 200,
    maxTokens: 64,
    key: "local",
  };
  const usage = { promptTokens: 20, completionTokens: 10 };
  const parts: Record<string, number> = {};
  try {
    parts["daemon: sign (RFC 6979)"] = time((i) =>
      signer.sign({ provider, cumulative: BigInt(i + 1), seq: BigInt(i + 1) })
    );
    // The daemon's signer: nonces prepared off the path, then signatures with them.
    const nonces = new PreparedNonces(hexToBytes(consumerKey.slice(2)), {
      size: (ROUNDS + 1) * PER_ROUND,
    });
    parts["daemon: prepare a nonce (off the path)"] = time(() => nonces.prepare(nonces.ready + 1));
    nonces.close();
    const pooled = new VoucherSigner(consumerKey, domain, { preparedNonces: PER_ROUND });
    parts["daemon: sign (prepared nonce)"] = timeWith(
      () => pooled.nonces!.prepare(),
      (i) => pooled.sign({ provider, cumulative: BigInt(i + 1), seq: BigInt(i + 1) }),
    );
    parts["daemon: authorize + cost (RFC 6979 sign, ledger ×2, JSON)"] = time(() => {
      payments.authorize(attempt).paid(usage);
    });
    const pooledPayments = new DaemonPayments({ signer: pooled, ledger });
    parts["daemon: authorize + cost (prepared nonce)"] = timeWith(
      () => pooled.nonces!.prepare(),
      () => pooledPayments.authorize(attempt).paid(usage),
    );
    pooledPayments.close(); // and the pooled signer
    const vouchers = Array.from(
      { length: (ROUNDS + 1) * PER_ROUND + 1 },
      (_, i) =>
        signer.sign({ provider, cumulative: BigInt(i + 1) * 10n ** 12n, seq: BigInt(i + 1) }),
    );
    const headers = vouchers.map((v) => JSON.stringify(voucherToJson(v)));
    const verifier = new VoucherVerifier(domain);
    verifier.verify(vouchers[0]);
    parts["provider: verify (cached key)"] = time((i) => verifier.verify(vouchers[i + 1]));
    parts["provider: read the header"] = time((i) => parseVoucher(headers[i + 1]));
    const till = new ProviderTill({ provider, domain, readAccount, accountTtlMs: 60_000 });
    const first = await till.admit(headers[0], 1n);
    if (!first.ok) throw new Error(`the till refused: ${first.message}`);
    first.charge(1n, usage);
    // The till is async (its account read): time the admissions one after another.
    const admits: number[] = [];
    let i = 1;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = cpuUs();
      for (let k = 0; k < PER_ROUND; k++, i++) {
        const hold = await till.admit(headers[i], 1n);
        if (!hold.ok) throw new Error(`the till refused: ${hold.message}`);
        hold.charge(1n, usage);
      }
      admits.push((cpuUs() - t0) / PER_ROUND);
    }
    parts["provider: admit + charge (header, verify, checks)"] = admits.sort((a, b) =>
      a - b
    )[Math.floor(ROUNDS / 2)];
  } finally {
    payments.close();
    await ledger.close();
    await Deno.remove(dir, { recursive: true });
  }
  return Object.fromEntries(
    Object.entries(parts).map(([name, us]) => [name, `${us.toFixed(0)} µs`]),
  );
}
