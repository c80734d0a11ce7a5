/**
 * Many settlements on a test chain, fast: the Escrow's `settleBatch` (thousands of `Settled`
 * events per transaction, one transaction per block with anvil's automine), and an
 * independent recount of what was sent — per epoch and per provider — that uses nothing of
 * the indexer: the epoch of each block is asked of the Emission contract at that block.
 *
 * The chain's block gas limit must be raised for large batches (`anvil: { gasLimit }`): one
 * settlement costs about 10,000 gas.
 *
 * @module
 */

import { type Address, decodeEventLog } from "viem";
import { emissionAbi, escrowAbi } from "../../chain/abi.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import type { Settlement } from "../../indexer/store/mod.ts";
import type { ChainFixture } from "../_chain_fixture.ts";
import { xorshift32 } from "../_random.ts";

/** One settlement sent, with the block it landed in. */
export interface SentSettlement {
  /** The block of its transaction. */
  block: bigint;
  /** The provider paid. */
  provider: Address;
  /** The amount. */
  amount: bigint;
  /** The tokens. */
  tokens: bigint;
}

/** Options of {@linkcode settleMany}. */
export interface SettleManyOptions {
  /** Settlements to send. */
  count: number;
  /** Settlements per transaction (and so per block). @default {5_000} */
  perTx?: number;
  /** Providers to pay, in turn (pseudo-randomly). */
  providers: readonly Address[];
  /** Seconds to move the clock forward after each transaction. @default {0} */
  secondsBetween?: number;
  /** Seeds amounts, tokens and providers. @default {1} */
  seed?: number;
}

/** Sends `count` settlements in batches of `perTx`, one block each; returns what was sent. */
export async function settleMany(
  chain: ChainFixture,
  options: SettleManyOptions,
): Promise<SentSettlement[]> {
  const perTx = options.perTx ?? 5_000;
  const next = xorshift32(options.seed ?? 1);
  const items = Array.from({ length: options.count }, () => ({
    provider: options.providers[next() % options.providers.length],
    amount: BigInt(next()) * 1_000n + 1n,
    tokens: BigInt(next() % 100_000),
  }));
  const signerOptions = { chainId: chain.anvil.chainId };
  const consumer = createSigner(chain.anvil.rpcUrl, chain.accounts.consumer, signerOptions);
  const settler = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, signerOptions);
  await sendAndConfirm(consumer, {
    address: chain.contracts.escrow,
    abi: escrowAbi,
    functionName: "deposit",
    args: [],
    value: items.reduce((sum, s) => sum + s.amount, 0n) + 1n,
  });
  const sent: SentSettlement[] = [];
  for (let i = 0; i < items.length; i += perTx) {
    const batch = items.slice(i, i + perTx);
    const receipt = await sendAndConfirm(settler, {
      address: chain.contracts.escrow,
      abi: escrowAbi,
      functionName: "settleBatch",
      args: [batch.map((s) => ({ consumer: chain.accounts.consumer.address, ...s }))],
    });
    for (const s of batch) sent.push({ block: receipt.blockNumber, ...s });
    if (options.secondsBetween) await chain.rpc("evm_increaseTime", [options.secondsBetween]);
  }
  return sent;
}

/** The epoch of the Emission clock at each of `blocks`, asked of the contract itself. */
export async function epochsAt(
  chain: ChainFixture,
  blocks: Iterable<bigint>,
): Promise<Map<bigint, bigint>> {
  const out = new Map<bigint, bigint>();
  for (const block of new Set(blocks)) {
    out.set(
      block,
      await chain.client.readContract({
        address: chain.contracts.emission,
        abi: emissionAbi,
        functionName: "currentEpoch",
        blockNumber: block,
      }),
    );
  }
  return out;
}

/** Per-epoch figures of an independent recount, as `/epochs` serves them. */
export interface EpochRecount {
  amount: bigint;
  tokens: bigint;
  settlements: number;
  providers: number;
}

/** Sums settlements per epoch (`epochOf` maps a block to its epoch). */
export function recountEpochs(
  settlements: readonly SentSettlement[],
  epochOf: ReadonlyMap<bigint, bigint>,
): Map<bigint, EpochRecount> {
  const out = new Map<bigint, EpochRecount & { paid: Set<string> }>();
  for (const s of settlements) {
    const epoch = epochOf.get(s.block);
    if (epoch === undefined) throw new Error(`no epoch for block ${s.block}`);
    const e = out.get(epoch) ??
      { amount: 0n, tokens: 0n, settlements: 0, providers: 0, paid: new Set<string>() };
    e.amount += s.amount;
    e.tokens += s.tokens;
    e.settlements++;
    e.paid.add(s.provider.toLowerCase());
    e.providers = e.paid.size;
    out.set(epoch, e);
  }
  return new Map(
    [...out].map(([epoch, { paid: _, ...rest }]) => [epoch, rest]),
  );
}

/** Every Settled event of the chain, decoded by viem (the test's truth). */
export async function settledEvents(chain: ChainFixture): Promise<Settlement[]> {
  const head = await chain.client.getBlockNumber();
  const logs = [];
  for (let from = 0n; from <= head; from += 100n) {
    const to = from + 99n < head ? from + 99n : head;
    logs.push(
      ...await chain.client.getLogs({
        address: chain.contracts.escrow,
        fromBlock: from,
        toBlock: to,
      }),
    );
  }
  return logs.flatMap((log) => {
    const event = decodeEventLog({ abi: escrowAbi, data: log.data, topics: log.topics });
    if (event.eventName !== "Settled") return [];
    const { provider, epoch, amount, tokens } = event.args;
    return [{
      block: log.blockNumber!,
      provider: provider.toLowerCase() as `0x${string}`,
      epoch,
      amount,
      tokens,
    }];
  });
}
