/**
 * A chain with a settlement history to scan, for the scan's tests (`history_steps_test.ts`,
 * `history_pipeline_test.ts`): 600 settlements, 20 per block, spread over the fixture's
 * providers; viem's decoding of them (the truth), the head, a client without retries, and the
 * identity a store for that chain is opened with.
 *
 * @module
 */

import { type ChainClient, createChainClient } from "../../chain/client.ts";
import type { OpenStoreOptions } from "../../indexer/store/mod.ts";
import type { ChainFixture } from "../_chain_fixture.ts";
import { settledEvents, settleMany } from "./_settlements.ts";

/** What {@linkcode settledHistory} made. */
export interface SettledHistory {
  /** Every `Settled` log, as viem decodes them. */
  readonly truth: Awaited<ReturnType<typeof settledEvents>>;
  /** The chain's head after the settlements. */
  readonly head: bigint;
  /** A client of the chain that does not retry. */
  readonly client: ChainClient;
  /** A store's identity for this chain (no confirmations, no log). */
  readonly identity: OpenStoreOptions;
}

/** Settles 600 times on `chain` (30 blocks of 20), and returns the scan's inputs. */
export async function settledHistory(chain: ChainFixture): Promise<SettledHistory> {
  const providers = chain.expected.state.providers.map((p) => p.address);
  await settleMany(chain, { count: 600, perTx: 20, providers, secondsBetween: 600 });
  return {
    truth: await settledEvents(chain),
    head: await chain.client.getBlockNumber(),
    client: await createChainClient(chain.anvil.rpcUrl, { retryCount: 0 }),
    identity: {
      chainId: chain.anvil.chainId,
      escrow: chain.contracts.escrow,
      scanFromBlock: chain.deployment.fromBlock,
      confirmations: 0,
      log: () => {},
    },
  };
}
