/**
 * The settlement log reader gives each `Settled` event the consumer whose voucher paid it (the
 * `VoucherRedeemed` right after it), and `null` to a trusted settler's settlement; a
 * `VoucherRedeemed` that does not follow its `Settled` is refused.
 */

import assert from "node:assert/strict";
import { type Address, decodeEventLog } from "viem";
import type { ChainClient } from "../../chain/client.ts";
import { generatePrivateKey, mnemonicToAccount } from "viem/accounts";
import { escrowAbi } from "../../chain/abi.ts";
import { SettlementScanError } from "../../chain/errors.ts";
import {
  decodeSettlementLogs,
  SETTLED_TOPIC,
  SettlementLogReader,
  VOUCHER_REDEEMED_TOPIC,
} from "../../chain/_settlement_logs.ts";
import { VoucherSigner } from "../../chain/voucher.ts";
import { ANVIL_MNEMONIC } from "../../devnet/anvil.ts";
import { redemptionOf } from "../../devnet/_payments.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";

Deno.test("settlement logs: voucher settlements carry their consumer, trusted ones none", async () => {
  await using chain = await startChainFixture({ empty: true });
  const { escrow } = chain.contracts;
  const chainId = { chainId: chain.anvil.chainId };
  const providerAccount = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 5 });
  const provider = providerAccount.address.toLowerCase() as Address;
  const providerSigner = createSigner(chain.anvil.rpcUrl, providerAccount, chainId);
  const domain = { chainId: chain.anvil.chainId, escrow };
  const [alice, bob] = [0, 1].map(() => new VoucherSigner(generatePrivateKey(), domain));
  for (const c of [alice, bob, { address: chain.accounts.consumer.address }]) {
    await sendAndConfirm(chain.owner, {
      address: escrow,
      abi: escrowAbi,
      functionName: "depositFor",
      args: [c.address],
      value: 10_000n,
    });
  }
  await sendAndConfirm(chain.owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "addSettler",
    args: [chain.accounts.settler.address],
  });
  await sendAndConfirm(createSigner(chain.anvil.rpcUrl, chain.accounts.settler, chainId), {
    address: escrow,
    abi: escrowAbi,
    functionName: "settle",
    args: [chain.accounts.consumer.address, provider, 7n, 1n],
  });
  const claim = (c: VoucherSigner, total: bigint, seq: bigint) =>
    redemptionOf({ voucher: c.sign({ provider, cumulative: total, seq }), total, tokens: seq });
  await sendAndConfirm(providerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "redeemVouchers",
    args: [[claim(alice, 100n, 1n), claim(bob, 200n, 1n)]],
  });
  await sendAndConfirm(providerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "redeemVouchers",
    args: [[claim(alice, 150n, 2n)]],
  });
  const reader = new SettlementLogReader(chain.client, escrow);
  const events = [];
  for await (
    const range of reader.ranges(chain.deployment.fromBlock, await chain.client.getBlockNumber())
  ) {
    events.push(...range.events);
  }
  assert.deepEqual(
    events.map((e) => [e.provider, e.amount, e.tokens, e.consumer]),
    [
      [provider, 7n, 1n, null],
      [provider, 100n, 1n, alice.address],
      [provider, 200n, 1n, bob.address],
      [provider, 50n, 2n, alice.address],
    ],
  );

  // A VoucherRedeemed log moved away from its Settled is refused.
  const logs = await chain.client.request({
    method: "eth_getLogs",
    params: [{
      address: escrow,
      fromBlock: "0x0",
      toBlock: "latest",
      topics: [[VOUCHER_REDEEMED_TOPIC]],
    }],
  }) as never[];
  assert.throws(
    () => decodeSettlementLogs(logs, escrow.toLowerCase() as Address, 0n, 10_000n),
    (e) =>
      e instanceof SettlementScanError && e.reason === "invalid_log" &&
      /does not follow/.test(e.message),
  );
  await checkDecoding(chain.client, escrow);
});

/** A log as `eth_getLogs` returns it (the fields the decoder reads). */
type Log = Record<string, unknown> & { topics: string[]; data: string };

/**
 * The decoder against viem's `decodeEventLog` on the chain's own logs, the same logs in upper
 * case, and each field of the last `Settled` log broken in turn: the logs before it share its
 * block, hash, provider and epoch, which the decoder checks once per answer and must not take
 * on trust for a log whose field differs; the first has nothing before it.
 */
async function checkDecoding(client: ChainClient, escrow: Address): Promise<void> {
  const logs = await client.request({
    method: "eth_getLogs",
    params: [{
      address: escrow,
      fromBlock: "0x0",
      toBlock: "latest",
      topics: [[SETTLED_TOPIC, VOUCHER_REDEEMED_TOPIC]],
    }],
  }) as unknown as Log[];
  assert.ok(logs.length >= 7, `${logs.length} logs`);
  const decode = (given: Log[]) =>
    decodeSettlementLogs(given as never, escrow.toLowerCase() as Address, 0n, 10_000n);
  const events = decode(logs);
  const oracle = logs.flatMap((log) => {
    const event = decodeEventLog({ abi: escrowAbi, ...log } as never) as {
      eventName: string;
      args: { provider: Address; epoch: bigint; amount: bigint; tokens: bigint };
    };
    if (event.eventName !== "Settled") return [];
    const { provider, epoch, amount, tokens } = event.args;
    return [[
      BigInt(log.blockNumber as string),
      log.blockHash,
      provider.toLowerCase(),
      epoch,
      amount,
      tokens,
    ]];
  });
  assert.deepEqual(
    events.map((e) => [e.block, e.blockHash, e.provider, e.epoch, e.amount, e.tokens]),
    oracle,
  );
  const upper = (log: Log): Log => ({
    ...log,
    address: String(log.address).toUpperCase().replace("0X", "0x"),
    blockHash: String(log.blockHash).toUpperCase().replace("0X", "0x"),
    topics: log.topics.map((t) => t.toUpperCase().replace("0X", "0x")),
  });
  assert.deepEqual(decode(logs.map(upper)), events);
  const settled = (l: Log) => l.topics[0] !== VOUCHER_REDEEMED_TOPIC;
  // The first Settled log (nothing checked before it) and the last (its fields seen before).
  const places = [logs.findIndex(settled), logs.findLastIndex(settled)];
  const broken: [string, (log: Log) => Log][] = [
    ["another address", (l) => ({ ...l, address: `0x${"12".repeat(20)}` })],
    ["an empty address", (l) => ({ ...l, address: "" })],
    ["an empty block number", (l) => ({ ...l, blockNumber: "" })],
    ["a block number that is not hex", (l) => ({ ...l, blockNumber: "0xzz" })],
    ["a block past the range", (l) => ({ ...l, blockNumber: "0x2711" })],
    ["an empty block hash", (l) => ({ ...l, blockHash: "" })],
    ["a short block hash", (l) => ({ ...l, blockHash: String(l.blockHash).slice(0, 65) })],
    ["an empty provider topic", (l) => ({ ...l, topics: [l.topics[0], "", l.topics[2]] })],
    ["a provider topic that is not an address", (l) => ({
      ...l,
      topics: [l.topics[0], `0x${"ff".repeat(32)}`, l.topics[2]],
    })],
    ["an empty epoch topic", (l) => ({ ...l, topics: [l.topics[0], l.topics[1], ""] })],
    ["a short epoch topic", (l) => ({ ...l, topics: [l.topics[0], l.topics[1], "0x1"] })],
    ["a fourth topic", (l) => ({ ...l, topics: [...l.topics, l.topics[2]] })],
    ["short data", (l) => ({ ...l, data: l.data.slice(0, 129) })],
    ["removed", (l) => ({ ...l, removed: true })],
  ];
  for (const [what, breakIt] of broken) {
    for (const place of places) {
      const given = logs.map((log, i) => (i === place ? breakIt(log) : log));
      assert.throws(
        () => decode(given),
        (e) => e instanceof SettlementScanError && e.reason === "invalid_log",
        `a Settled log (${place}) with ${what} is refused`,
      );
    }
  }
}
