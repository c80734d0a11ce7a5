/**
 * What paying by voucher costs on chain and in the CPU, measured in one run:
 *
 * 1. **Gas per settled voucher in a batch**: `Escrow.redeemVouchers` with 1, 10, 50 and 200
 *    vouchers (each from its own consumer, to one provider) on a real anvil, the first
 *    redemption of each pair (a new `settledOf` slot) and a later one (the slot updated), against
 *    the trusted `settleBatch` of the same amounts to the same provider (no signature, no
 *    per-pair total): per-item gas, the marginal gas of one more item, and the ratio.
 * 2. **CPU per voucher**: signing one (`VoucherSigner.sign`), and checking one the way a
 *    provider does (`VoucherVerifier.verify`: key recovery for a consumer seen the first time,
 *    the cached key with precomputed tables after), with `Deno.bench` ratios.
 *
 * Run: `deno task bench` (or `deno bench -A bench/escrow_gas_bench.ts`).
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { generatePrivateKey, mnemonicToAccount } from "viem/accounts";
import { escrowAbi } from "../chain/abi.ts";
import { VoucherSigner, VoucherVerifier } from "../chain/voucher.ts";
import { ANVIL_MNEMONIC, startAnvil } from "../devnet/anvil.ts";
import { DEFAULT_DEPLOYMENT, deployContracts } from "../devnet/deploy.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../devnet/signer.ts";

const BATCHES = [1, 10, 50, 200];

const anvil = await startAnvil();
try {
  const chainId = { chainId: anvil.chainId };
  const accounts = devAccounts();
  const owner = createSigner(anvil.rpcUrl, accounts.owner, chainId);
  const { contracts } = await deployContracts(owner, DEFAULT_DEPLOYMENT);
  const { escrow } = contracts;
  const providerAccount = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 5 });
  const provider = createSigner(anvil.rpcUrl, providerAccount, chainId);
  const providerAddress = providerAccount.address.toLowerCase() as Address;
  await sendAndConfirm(owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "addSettler",
    args: [accounts.settler.address],
  });
  const settler = createSigner(anvil.rpcUrl, accounts.settler, chainId);
  const domain = { chainId: anvil.chainId, escrow };

  const rows: string[] = [];
  for (const size of BATCHES) {
    const consumers = Array.from(
      { length: size },
      () => new VoucherSigner(generatePrivateKey(), domain),
    );
    for (let i = 0; i < consumers.length; i += 100) {
      const batch = consumers.slice(i, i + 100);
      for (const c of batch) {
        await sendAndConfirm(owner, {
          address: escrow,
          abi: escrowAbi,
          functionName: "depositFor",
          args: [c.address],
          value: 10n ** 18n,
        });
      }
    }
    const redeem = async (total: bigint, seq: bigint) => {
      const items = consumers.map((c) => {
        const v = c.sign({ provider: providerAddress, cumulative: total, seq });
        return {
          voucher: { consumer: v.consumer, provider: providerAddress, cumulative: total, seq },
          signature: v.signature as Hex,
          total,
          tokens: 1_000n,
        };
      });
      const receipt = await sendAndConfirm(provider, {
        address: escrow,
        abi: escrowAbi,
        functionName: "redeemVouchers",
        args: [items],
        gas: 30_000_000n,
      });
      return receipt.gasUsed;
    };
    const settle = async () => {
      const receipt = await sendAndConfirm(settler, {
        address: escrow,
        abi: escrowAbi,
        functionName: "settleBatch",
        args: [consumers.map((c) => ({
          consumer: c.address,
          provider: providerAddress,
          amount: 1_000_000n,
          tokens: 1_000n,
        }))],
        gas: 30_000_000n,
      });
      return receipt.gasUsed;
    };
    // The trusted settlement first: the consumers' deposit slots are warm in both cases.
    const trusted = await settle();
    const first = await redeem(1_000_000n, 1n);
    const later = await redeem(2_000_000n, 2n);
    rows.push(
      `| ${String(size).padStart(5)} | ${per(first, size)} | ${per(later, size)} | ${
        per(trusted, size)
      } | ${(Number(later) / Number(trusted)).toFixed(2)}× |`,
    );
  }
  console.log("\nEscrow gas per settled item in one batch (transaction gas ÷ items, same run):\n");
  console.log(
    "| batch | voucher, first for the pair | voucher, later | trusted settleBatch | later ÷ trusted |",
  );
  console.log(
    "| ----: | --------------------------: | -------------: | ------------------: | --------------: |",
  );
  for (const row of rows) console.log(row);
} finally {
  await anvil.stop();
}

function per(gas: bigint, size: number): string {
  return String(Math.round(Number(gas) / size)).padStart(7);
}

// --- CPU: signing and checking one voucher. ------------------------------------------------

const domain = { chainId: 31337, escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9" } as const;
const provider = "0x5b38da6a701c568545dcfcb03fcb875f56beddc4" as const;
const signer = new VoucherSigner(generatePrivateKey(), domain);
const known = new VoucherVerifier(domain);
known.verify(signer.sign({ provider, cumulative: 1n, seq: 1n }));
known.verify(signer.sign({ provider, cumulative: 2n, seq: 2n })); // builds the tables
let seq = 10n;
const sample = signer.sign({ provider, cumulative: 5n, seq: 5n });

Deno.bench({
  name: "verify a voucher, first sight of the consumer (key recovery)",
  group: "voucher",
  baseline: true,
  fn: () => {
    new VoucherVerifier(domain, { cacheSize: 0 }).verify(sample);
  },
});
Deno.bench({
  name: "verify a voucher, consumer seen before (cached key, tables)",
  group: "voucher",
  fn: () => {
    known.verify(sample);
  },
});
Deno.bench({
  name: "sign a voucher (RFC 6979, low s)",
  group: "voucher",
  fn: () => {
    signer.sign({ provider, cumulative: seq, seq: seq++ });
  },
});
