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
 * - {@linkcode resolveNetworkProfile}: a network by name (the built-in `devnet`) or profile file
 *   — chain id, RPC URLs, contracts, deployment block, bootstrap gateways.
 * - {@linkcode checkNetworkContracts}: the given addresses have code, answer their contract's
 *   interface and name each other (Registry → Staking, Emission, Escrow; Escrow → Emission).
 * - {@linkcode bucketSettlements}: settled volume per provider per epoch, in the one order
 *   ({@linkcode compareBuckets}: provider, then epoch).
 * - {@linkcode parseAd}, {@linkcode adCommitment}: provider ads (`docs/protocol.md` §1).
 * - {@linkcode VoucherSigner}, {@linkcode VoucherVerifier}, {@linkcode parseVoucher}: the
 *   EIP-712 vouchers consumers pay providers with (`docs/protocol.md` §9).
 * - {@linkcode readEscrowAccount}: a consumer's deposit, reserved and available amounts, and
 *   what its vouchers paid each provider.
 * - {@linkcode usageCost}, {@linkcode worstCaseCost}, {@linkcode formatCost}: what a request
 *   costs at an ad's prices, in exact integers.
 * - The typed ABIs (`registryAbi`, `stakingAbi`, `emissionAbi`, `escrowAbi`, `multicallAbi`).
 *
 * Failures are {@linkcode ChainConfigError}, {@linkcode ChainReadError},
 * {@linkcode ContractCheckError},
 * {@linkcode SettlementScanError}, {@linkcode AdError} and {@linkcode VoucherError}, each with a
 * `reason`.
 *
 * @example Read the network at one block (needs an RPC endpoint)
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
 * @example Check a provider's ad against its on-chain commitment
 * ```ts
 * import { adCommitment, isBonded, parseAd } from "@net/consumer/chain";
 *
 * const text = JSON.stringify({
 *   version: 1,
 *   provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
 *   tier: "verified",
 *   serving_key: "0xab8483f64d9c6d1ecf9b849ae677dd3315835cb2",
 *   endpoint: "http://127.0.0.1:9301",
 *   models: [{
 *     id: "devnet/tiny-chat",
 *     prices: { input: "150", output: "600" },
 *     context_length: 8192,
 *   }],
 * });
 * const ad = parseAd(text); // strict: unknown fields and bad values are an AdError
 * console.assert(/^0x[0-9a-f]{64}$/.test(adCommitment(ad)));
 * console.assert(isBonded(true, 10n ** 18n, 10n ** 18n));
 * ```
 *
 * @module
 */

export { emissionAbi, escrowAbi, multicallAbi, registryAbi, stakingAbi } from "./abi.ts";
export {
  adCommitment,
  AdError,
  type AdFailure,
  type AdModel,
  blendedPrice,
  canonicalAd,
  comparePrices,
  MAX_AD_BYTES,
  MODEL_CAPABILITIES,
  MODEL_CAPABILITY_NAMES,
  MODEL_KINDS,
  type ModelCapability,
  type ModelKind,
  parseAd,
  type PricePair,
  type ProviderAd,
  validateAd,
  type ValidateAdOptions,
} from "./ad.ts";
export {
  formatCost,
  maxTokensOf,
  parseCost,
  type RequestBounds,
  type TokenCounts,
  type TokenPrices,
  usageCost,
  worstCaseCost,
} from "./cost.ts";
export {
  type EscrowAccount,
  readEscrowAccount,
  type ReadEscrowAccountOptions,
} from "./escrow_account.ts";
export { type ChainClient, type ChainClientOptions, createChainClient } from "./client.ts";
export {
  checkNetworkContracts,
  type CheckNetworkContractsOptions,
  type ContractRole,
  type ContractsToCheck,
} from "./contract_check.ts";
export {
  ChainConfigError,
  type ChainConfigFailure,
  ChainReadError,
  type ChainReadFailure,
  ContractCheckError,
  type ContractCheckFailure,
  type ContractCheckProblem,
  SettlementScanError,
  type SettlementScanFailure,
  VoucherError,
  type VoucherFailure,
} from "./errors.ts";
export {
  type MeasurementsReading,
  readApprovedMeasurements,
  type ReadApprovedMeasurementsOptions,
} from "./measurements.ts";
export { readNetworkState, type ReadNetworkStateOptions } from "./network_state.ts";
export {
  BUILTIN_NETWORKS,
  DEFAULT_NETWORK,
  DEVNET_PROFILE,
  type NetworkProfile,
  NetworkProfileError,
  type NetworkProfileFailure,
  type NetworkProfileJson,
  networkProfileJson,
  parseNetworkProfile,
  resolveNetworkProfile,
  type ResolveNetworkProfileOptions,
} from "./network_profile.ts";
export {
  type ProviderBond,
  type ProviderReading,
  readProvider,
  type ReadProviderOptions,
} from "./provider.ts";
export {
  bucketSettlements,
  compareBuckets,
  type SettlementBucket,
  type SettlementItem,
} from "./settlement_buckets.ts";
export {
  type BlockRef,
  type BlockSelector,
  type ChainContracts,
  type EmissionSchedule,
  type EmissionState,
  isBonded,
  type NetworkState,
  type ProviderRecord,
  type ProviderState,
  type ProviderTier,
  type RouterRecord,
  type StakingState,
} from "./types.ts";
export {
  billId,
  MAX_VOUCHER_AMOUNT,
  MAX_VOUCHER_JSON_BYTES,
  MAX_VOUCHER_SEQ,
  parseVoucher,
  type SignedVoucher,
  type Voucher,
  VOUCHER_DOMAIN_NAME,
  VOUCHER_DOMAIN_VERSION,
  VOUCHER_TYPES,
  voucherDigest,
  type VoucherDomain,
  voucherDomainSeparator,
  type VoucherJson,
  VoucherSigner,
  type VoucherSignerOptions,
  voucherToJson,
  VoucherVerifier,
  type VoucherVerifierOptions,
} from "./voucher.ts";
export { PreparedNonces, type PreparedNoncesOptions } from "./voucher_nonces.ts";
