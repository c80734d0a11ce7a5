/**
 * A refresher with a settlement history on a test chain, and a GET on its handler that returns
 * the status and the JSON body (the history tests' indexer, without a server).
 *
 * @module
 */

import { createIndexerHandler } from "../../indexer/handler.ts";
import { Refresher, type RefresherOptions } from "../../indexer/refresher.ts";
import type { StoreLocation } from "../../indexer/store/mod.ts";
import type { ChainFixture } from "../_chain_fixture.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The refresher (disposed by the caller) and `get(path)` on its handler. */
export function historyIndexer(
  chain: ChainFixture,
  history: StoreLocation,
  extra: Partial<RefresherOptions>,
) {
  const refresher = new Refresher({
    rpcUrl: chain.anvil.rpcUrl,
    contracts: chain.contracts,
    scanFromBlock: chain.deployment.fromBlock,
    client: { retryCount: 0 },
    log: () => {},
    history,
    ...extra,
  });
  const handle = createIndexerHandler({
    state: () => refresher.state,
    readProviderHistory: (address) => refresher.readProviderHistory(address),
  });
  const get = async (path: string) => {
    const response = await handle(new Request(`http://127.0.0.1:8088${path}`));
    return { status: response.status, body: await response.json() as Json };
  };
  return { refresher, get };
}
