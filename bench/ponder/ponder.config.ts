// The baseline app of bench/indexer_ponder_bench.ts: the Escrow's Settled events of the bench's
// chain (from the environment the bench sets), into PGlite in the bench's data directory.
import { createConfig } from "ponder";
import { escrowSettledAbi } from "./abi";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`the bench sets ${name}`);
  return value;
};

export default createConfig({
  database: { kind: "pglite", directory: env("PONDER_PGLITE_DIR") },
  chains: {
    anvil: {
      id: Number(env("PONDER_CHAIN_ID")),
      rpc: env("PONDER_RPC_URL"),
      ethGetLogsBlockRange: Number(env("PONDER_GETLOGS_RANGE")),
      pollingInterval: 1_000,
      disableCache: true,
    },
  },
  contracts: {
    Escrow: {
      chain: "anvil",
      abi: escrowSettledAbi,
      address: env("PONDER_ESCROW") as `0x${string}`,
      startBlock: Number(env("PONDER_START_BLOCK")),
    },
  },
});
