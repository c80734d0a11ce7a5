/**
 * The Escrow's voucher path on a real anvil: a provider is paid only what a consumer signed,
 * each part once; forged, replayed, stale, over-the-signature, other-key and other-provider
 * vouchers revert; the off-chain verifier (`chain/voucher.ts`) accepts exactly what the chain
 * accepts; vouchers signed with prepared nonces (`chain/voucher_nonces.ts`) settle.
 */

import assert from "node:assert/strict";
import { type Address, hashTypedData, type Hex, parseEventLogs } from "viem";
import { getEip712Domain } from "viem/actions";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { escrowAbi } from "../../chain/abi.ts";
import { VoucherError } from "../../chain/errors.ts";
import {
  type SignedVoucher,
  VOUCHER_DOMAIN_NAME,
  VOUCHER_DOMAIN_VERSION,
  VOUCHER_TYPES,
  voucherDigest,
  VoucherSigner,
  VoucherVerifier,
} from "../../chain/voucher.ts";
import { ANVIL_MNEMONIC } from "../../devnet/anvil.ts";
import { createSigner, type DevnetSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { reverts } from "../_reverts.ts";

const CONSUMER_KEY = `0x${"c0".repeat(32)}` as Hex;
const OTHER_KEY = `0x${"0e".repeat(32)}` as Hex;
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** The redemption tuple `redeemVouchers` takes. */
function redemption(voucher: SignedVoucher, total: bigint, tokens = 1n) {
  return {
    voucher: {
      consumer: voucher.consumer,
      provider: voucher.provider,
      cumulative: voucher.cumulative,
      seq: voucher.seq,
    },
    signature: voucher.signature,
    total,
    tokens,
  };
}

/** The same signature with `s` replaced by `n − s` and `v` flipped: valid for ecrecover, malleable. */
function malleate(signature: Hex): Hex {
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  const v = parseInt(signature.slice(130), 16);
  return `${signature.slice(0, 66)}${(N - s).toString(16).padStart(64, "0")}${
    (v === 27 ? 28 : 27).toString(16)
  }` as Hex;
}

Deno.test("Escrow vouchers: paid what was signed, once; every forgery refused on chain", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const { escrow } = chain.contracts;
  const chainId = { chainId: chain.anvil.chainId };
  const domain = { chainId: chain.anvil.chainId, escrow };
  const consumer = new VoucherSigner(CONSUMER_KEY, domain);
  const other = new VoucherSigner(OTHER_KEY, domain);
  const account = (i: number) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i });
  const providerA = createSigner(chain.anvil.rpcUrl, account(5), chainId);
  const providerB = createSigner(chain.anvil.rpcUrl, account(6), chainId);
  const a = account(5).address.toLowerCase() as Address;
  const b = account(6).address.toLowerCase() as Address;
  const read = <T>(functionName: string, args: unknown[] = []) => {
    // deno-lint-ignore no-explicit-any
    const params: any = { address: escrow, abi: escrowAbi, functionName, args };
    return chain.client.readContract(params) as Promise<T>;
  };
  const redeem = (signer: DevnetSigner, items: ReturnType<typeof redemption>[]) =>
    sendAndConfirm(signer, {
      address: escrow,
      abi: escrowAbi,
      functionName: "redeemVouchers",
      args: [items],
    });
  const verifier = new VoucherVerifier(domain);
  await sendAndConfirm(chain.owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "depositFor",
    args: [consumer.address],
    value: 10_000n,
  });

  await t.step(
    "the digest is EIP-712's (viem) and the Escrow's; the domain is EIP-5267's",
    async () => {
      const voucher = { consumer: consumer.address, provider: a, cumulative: 77n, seq: 3n };
      const viemDigest = hashTypedData({
        domain: {
          name: VOUCHER_DOMAIN_NAME,
          version: VOUCHER_DOMAIN_VERSION,
          chainId: chain.anvil.chainId,
          verifyingContract: escrow,
        },
        types: VOUCHER_TYPES,
        primaryType: "Voucher",
        message: voucher,
      });
      assert.equal(voucherDigest(domain, voucher), viemDigest);
      assert.equal(await read("hashVoucher", [voucher]), viemDigest);
      const onChain = await getEip712Domain(chain.client, { address: escrow });
      assert.deepEqual({
        ...onChain.domain,
        verifyingContract: onChain.domain.verifyingContract?.toLowerCase(),
      }, {
        name: VOUCHER_DOMAIN_NAME,
        version: VOUCHER_DOMAIN_VERSION,
        chainId: chain.anvil.chainId,
        verifyingContract: escrow,
        salt: `0x${"00".repeat(32)}`,
      });
      // A wallet signing the typed data (viem's account) gives the same signature.
      const wallet = await privateKeyToAccount(CONSUMER_KEY).signTypedData({
        domain: {
          name: VOUCHER_DOMAIN_NAME,
          version: VOUCHER_DOMAIN_VERSION,
          chainId: chain.anvil.chainId,
          verifyingContract: escrow,
        },
        types: VOUCHER_TYPES,
        primaryType: "Voucher",
        message: voucher,
      });
      assert.equal(consumer.sign(voucher).signature, wallet);
    },
  );

  await t.step("a provider is paid up to what was signed, in parts, each part once", async () => {
    const first = consumer.sign({ provider: a, cumulative: 300n, seq: 1n });
    const receipt = await redeem(providerA, [redemption(first, 120n, 40n)]);
    const settled = parseEventLogs({ abi: escrowAbi, eventName: "Settled", logs: receipt.logs });
    assert.deepEqual(
      settled.map((l) => [l.args.provider.toLowerCase(), l.args.amount, l.args.tokens]),
      [
        [a, 120n, 40n],
      ],
    );
    const redeemed = parseEventLogs({
      abi: escrowAbi,
      eventName: "VoucherRedeemed",
      logs: receipt.logs,
    });
    assert.deepEqual(
      redeemed.map((
        l,
      ) => [
        l.args.consumer.toLowerCase(),
        l.args.provider.toLowerCase(),
        l.args.amount,
        l.args.total,
        l.args.seq,
      ]),
      [[consumer.address, a, 120n, 120n, 1n]],
    );
    assert.equal(redeemed[0].args.epoch, settled[0].args.epoch);
    // The rest of the same voucher, later.
    await redeem(providerA, [redemption(first, 300n, 5n)]);
    assert.equal(await read("settledOf", [consumer.address, a]), 300n);
    assert.equal(await read("earningsOf", [a]), 300n);
    assert.equal(await read("depositOf", [consumer.address]), 9_700n);
    assert.deepEqual(await read("accountOf", [consumer.address]), [9_700n, 0n, 9_700n, 0n]);
  });

  await t.step("replayed and stale vouchers, and claims over the signature, revert", async () => {
    const first = consumer.sign({ provider: a, cumulative: 300n, seq: 1n });
    await reverts(redeem(providerA, [redemption(first, 300n)]), "StaleVoucher"); // replay
    const older = consumer.sign({ provider: a, cumulative: 200n, seq: 1n });
    await reverts(redeem(providerA, [redemption(older, 200n)]), "StaleVoucher");
    const next = consumer.sign({ provider: a, cumulative: 500n, seq: 2n });
    await reverts(redeem(providerA, [redemption(next, 501n)]), "ClaimExceedsVoucher");
    await redeem(providerA, [redemption(next, 500n)]);
    await reverts(redeem(providerA, [redemption(next, 500n)]), "StaleVoucher");
    assert.equal(await read("settledOf", [consumer.address, a]), 500n);
  });

  await t.step("forged, other-key and other-provider vouchers revert", async () => {
    const good = consumer.sign({ provider: a, cumulative: 900n, seq: 3n });
    const forged: SignedVoucher = { ...good, cumulative: 1_000n }; // the amount changed after signing
    await reverts(redeem(providerA, [redemption(forged, 1_000n)]), "InvalidVoucherSignature");
    const garbage: SignedVoucher = { ...good, signature: `0x${"ab".repeat(64)}1b` };
    await reverts(redeem(providerA, [redemption(garbage, 600n)]), "InvalidVoucherSignature");
    const byOther: SignedVoucher = {
      ...other.sign({ provider: a, cumulative: 900n, seq: 3n }),
      consumer: consumer.address,
    };
    await reverts(redeem(providerA, [redemption(byOther, 600n)]), "InvalidVoucherSignature");
    // Provider B cannot cash A's voucher, nor rewrite it to itself.
    await reverts(redeem(providerB, [redemption(good, 600n)]), "NotVoucherProvider");
    await reverts(
      redeem(providerB, [redemption({ ...good, provider: b }, 600n)]),
      "InvalidVoucherSignature",
    );
    // Malleated (high s) and odd-v signatures are refused even though ecrecover would take the first.
    await reverts(
      redeem(providerA, [redemption({ ...good, signature: malleate(good.signature) }, 600n)]),
      "InvalidVoucherSignature",
    );
    const v0 = `${good.signature.slice(0, 130)}${
      good.signature.endsWith("1b") ? "00" : "01"
    }` as Hex;
    await reverts(
      redeem(providerA, [redemption({ ...good, signature: v0 }, 600n)]),
      "InvalidVoucherSignature",
    );
    await reverts(
      redeem(providerA, [
        redemption({ ...good, signature: good.signature.slice(0, 128) as Hex }, 600n),
      ]),
      "InvalidVoucherSignature",
    );
    assert.equal(await read("settledOf", [consumer.address, a]), 500n);
  });

  await t.step("the off-chain verifier accepts exactly what the chain accepts", async () => {
    const good = consumer.sign({ provider: a, cumulative: 700n, seq: 4n });
    const cases: [string, SignedVoucher][] = [
      ["valid", good],
      ["amount changed", { ...good, cumulative: 701n }],
      ["other key", {
        ...other.sign({ provider: a, cumulative: 700n, seq: 4n }),
        consumer: consumer.address,
      }],
      ["flipped v", {
        ...good,
        signature: `${good.signature.slice(0, 130)}${
          good.signature.endsWith("1b") ? "1c" : "1b"
        }` as Hex,
      }],
      ["high s", { ...good, signature: malleate(good.signature) }],
      ["other provider", { ...good, provider: b }],
    ];
    for (const fresh of [true, false]) {
      // A fresh verifier recovers; one that has seen the consumer verifies against its key.
      const v = fresh ? new VoucherVerifier(domain) : verifier;
      if (!fresh) v.verify(consumer.sign({ provider: a, cumulative: 1n, seq: 1n }));
      for (const [name, voucher] of cases) {
        let offChain = true;
        try {
          v.verify(voucher);
        } catch (error) {
          assert.ok(error instanceof VoucherError, name);
          offChain = false;
        }
        const onChain = await chain.client.simulateContract({
          account: voucher.provider === a ? providerA.account : providerB.account,
          address: escrow,
          abi: escrowAbi,
          functionName: "redeemVouchers",
          args: [[redemption(voucher, 600n)]],
        }).then(() => true, () => false);
        assert.equal(offChain, onChain, `${name} (${fresh ? "recovered" : "cached key"})`);
        assert.equal(onChain, name === "valid", name);
      }
    }
  });

  await t.step("a batch is all or nothing; a deposit that cannot pay reverts", async () => {
    const okA = consumer.sign({ provider: a, cumulative: 800n, seq: 5n });
    const stale = consumer.sign({ provider: a, cumulative: 100n, seq: 6n });
    await reverts(
      redeem(providerA, [redemption(okA, 800n), redemption(stale, 100n)]),
      "StaleVoucher",
    );
    assert.equal(await read("settledOf", [consumer.address, a]), 500n);
    const huge = consumer.sign({ provider: b, cumulative: 1_000_000n, seq: 1n });
    await reverts(redeem(providerB, [redemption(huge, 1_000_000n)]), "InsufficientDeposit");
  });

  await t.step(
    "a requested withdrawal is still payable until withdrawn, and not available",
    async () => {
      const deposit = await read<bigint>("depositOf", [consumer.address]);
      const owner = createSigner(chain.anvil.rpcUrl, privateKeyToAccount(CONSUMER_KEY), chainId);
      // The consumer key needs gas for its own transaction.
      await chain.owner.wallet.sendTransaction({
        account: chain.owner.account,
        chain: chain.owner.wallet.chain,
        to: consumer.address,
        value: 10n ** 18n,
      }).then((hash) => chain.client.waitForTransactionReceipt({ hash }));
      await sendAndConfirm(owner, {
        address: escrow,
        abi: escrowAbi,
        functionName: "requestWithdrawal",
        args: [deposit - 100n],
      });
      const [held, reserved, available] = await read<bigint[]>("accountOf", [consumer.address]);
      assert.deepEqual([held, reserved, available], [deposit, deposit - 100n, 100n]);
      const late = consumer.sign({ provider: b, cumulative: 2_000n, seq: 2n });
      await redeem(providerB, [redemption(late, 2_000n)]);
      const after = await read<bigint[]>("accountOf", [consumer.address]);
      assert.deepEqual(after.slice(0, 3), [deposit - 2_000n, deposit - 2_000n, 0n]);
    },
  );

  await t.step("vouchers signed with prepared nonces settle as RFC 6979 ones do", async () => {
    const pooled = new VoucherSigner(CONSUMER_KEY, domain, { preparedNonces: 4 });
    try {
      pooled.nonces!.prepare();
      let settled = await read<bigint>("settledOf", [consumer.address, a]);
      for (const seq of [10n, 11n, 12n]) {
        const voucher = pooled.sign({ provider: a, cumulative: settled + 10n, seq });
        // A fresh random nonce: not the deterministic signature of the same voucher.
        assert.notEqual(voucher.signature, consumer.sign(voucher).signature);
        verifier.verify(voucher);
        await redeem(providerA, [redemption(voucher, settled + 10n)]);
        settled += 10n;
        assert.equal(await read("settledOf", [consumer.address, a]), settled);
      }
      assert.equal(pooled.nonces!.counts.used, 3);
    } finally {
      pooled.close();
    }
  });
});
