/**
 * A fake JSON-RPC node that serves only `eth_chainId`, `eth_getBlockByNumber` (a number and
 * a hash) and `eth_getLogs` of `Settled` events made up from the block number, as many per
 * block as the test says: big answers (over viem's 10 MiB response body limit) and slow ones,
 * without a chain that holds them.
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { SETTLED_TOPIC, type SettledEvent } from "../../chain/_settlement_logs.ts";

/** Settlements per block by default: about 5.9 MB of `eth_getLogs` JSON per block. */
export const LOGS_PER_BLOCK = 9_000;
/** viem's default limit on a response body. */
export const VIEM_BODY_LIMIT = 10_485_760;

/** Options of {@linkcode fakeLogNode}. */
export interface FakeLogNodeOptions {
  /** Settlements in a block. @default {() => LOGS_PER_BLOCK} */
  logsPerBlock?: (block: bigint) => number;
  /** Ranges of more blocks than this answer only after `slowMs`. @default {no limit} */
  slowAbove?: bigint;
  /** The delay of a slow answer, ms. @default {0} */
  slowMs?: number;
}

/** The node: its handler, the Escrow it pretends to be, and what it served. */
export interface FakeLogNode {
  /** The HTTP handler (serve it on loopback). */
  handler: (req: Request) => Promise<Response>;
  /** The Escrow whose logs it serves. */
  escrow: Address;
  /** Settlements in a block (may be replaced by the test). */
  logsPerBlock: (block: bigint) => number;
  /** Answers it sent that were over viem's body limit. */
  tooLarge: number;
  /** The event `index` of `block`, as a reader must decode it. */
  event(block: bigint, index: number): SettledEvent;
}

const hex64 = (n: bigint) => `0x${n.toString(16).padStart(64, "0")}` as Hex;

/** Creates the node. */
export function fakeLogNode(options: FakeLogNodeOptions = {}): FakeLogNode {
  const escrow = "0x00000000000000000000000000000000000e5c30" as Address;
  const blockHash = (block: bigint) => hex64(0xb10c00000000n + block);
  const event = (block: bigint, index: number): SettledEvent => ({
    block,
    blockHash: blockHash(block),
    provider: `0x${(0xa000 + (index % 50)).toString(16).padStart(40, "0")}` as Address,
    epoch: block / 10n,
    amount: BigInt(index + 1) * 10n ** 18n + block,
    tokens: BigInt(index),
    consumer: null,
  });
  const log = (block: bigint, index: number) => {
    const e = event(block, index);
    return {
      address: escrow,
      topics: [SETTLED_TOPIC, `0x${e.provider.slice(2).padStart(64, "0")}`, hex64(e.epoch)],
      data: `${hex64(e.amount)}${hex64(e.tokens).slice(2)}`,
      blockNumber: `0x${block.toString(16)}`,
      blockHash: e.blockHash,
      transactionHash: hex64(block * 1_000_000n + BigInt(index)),
      transactionIndex: "0x0",
      logIndex: `0x${(2 * index + 1).toString(16)}`,
      removed: false,
    };
  };
  const node: FakeLogNode = {
    escrow,
    logsPerBlock: options.logsPerBlock ?? (() => LOGS_PER_BLOCK),
    tooLarge: 0,
    event,
    async handler(req) {
      const body = await req.json();
      const calls: { id: number; method: string; params: unknown[] }[] = Array.isArray(body)
        ? body
        : [body];
      const answers = await Promise.all(calls.map(answer));
      const text = JSON.stringify(Array.isArray(body) ? answers : answers[0]);
      if (text.length > VIEM_BODY_LIMIT) node.tooLarge++;
      return new Response(text, { headers: { "content-type": "application/json" } });
    },
  };
  async function answer(call: { id: number; method: string; params: unknown[] }) {
    const ok = (result: unknown) => ({ jsonrpc: "2.0", id: call.id, result });
    if (call.method === "eth_chainId") return ok("0x7a69");
    if (call.method === "eth_getBlockByNumber") {
      const number = BigInt(call.params[0] as string);
      return ok({ number: `0x${number.toString(16)}`, hash: blockHash(number) });
    }
    if (call.method !== "eth_getLogs") {
      return {
        jsonrpc: "2.0",
        id: call.id,
        error: { code: -32601, message: `${call.method} is not served` },
      };
    }
    const [filter] = call.params as [{ fromBlock: string; toBlock: string }];
    const from = BigInt(filter.fromBlock);
    const to = BigInt(filter.toBlock);
    if (options.slowAbove !== undefined && to - from + 1n > options.slowAbove) {
      await new Promise((resolve) => setTimeout(resolve, options.slowMs ?? 0));
    }
    const logs = [];
    for (let block = from; block <= to; block++) {
      for (let i = 0; i < node.logsPerBlock(block); i++) logs.push(log(block, i));
    }
    return ok(logs);
  }
  return node;
}
