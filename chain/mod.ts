/**
 * Typed reads of the network's EVM contracts (Registry, Staking, Emission, Escrow), each
 * pinned to one block, plus provider ads and their on-chain commitment.
 *
 * - {@linkcode createChainClient}: a viem client with explicit timeout and retries, checked
 *   against the expected chain id.
 * - {@linkcode readNetworkState}: providers (with stake from Staking and the bonded flag),
 *   validators, routers, approved TEE measurements, emission and staking totals, at one
 *   block, in a constant number of round trips (multicall: a configured Multicall3, else
 *   viem's deployless mode).
 * - {@linkcode readProvider}, {@linkcode readApprovedMeasurements}: the small reads the
 *   daemon needs.
 * - {@linkcode scanSettlements}: settled volume per provider per epoch from `Settled` logs,
 *   adaptive chunks, resumable cursor, confirmation depth.
 * - {@linkcode parseAd}, {@linkcode adCommitment}: provider ads (`docs/protocol.md` §1).
 * - The typed ABIs (`registryAbi`, `stakingAbi`, `emissionAbi`, `escrowAbi`, `multicallAbi`).
 *
 * Failures are {@linkcode ChainConfigError}, {@linkcode ChainReadError},
 * {@linkcode SettlementScanError} and {@linkcode AdError}, each with a `reason`.
 *
 * @example Read the network at one block
 * ```ts ignore
 * import { createChainClient, readNetworkState } from "@net/consumer/chain";
 *
 * const client = await createChainClient("http://127.0.0.1:8545", { chainId: 31337 });
 * const state = await readNetworkState(client, {
 *   registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
 *   staking: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
 *   emission: "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
 * });
 * const bonded = state.providers.filter((p) => p.bonded);
 * console.log(`${bonded.length} bonded providers at block ${state.block.number}`);
 * ```
 *
 * @module
 */

export * from "./abi.ts";
export * from "./ad.ts";
export * from "./client.ts";
export * from "./errors.ts";
export * from "./measurements.ts";
export * from "./network_state.ts";
export * from "./provider.ts";
export * from "./settlements.ts";
export * from "./types.ts";
