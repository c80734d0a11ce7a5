/**
 * The voucher tests' Escrow domain and provider (fixed addresses: no chain needed), and the same
 * domain as EIP-712 typed data for viem, the tests' oracle (`signTypedData`,
 * `recoverTypedDataAddress`).
 *
 * @module
 */

import { VOUCHER_DOMAIN_NAME, VOUCHER_DOMAIN_VERSION } from "../../chain/voucher.ts";

/** An Escrow's domain: the devnet's chain id and a fixed address. */
export const domain = {
  chainId: 31337,
  escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
} as const;

/** A provider's address. */
export const provider = "0x5b38da6a701c568545dcfcb03fcb875f56beddc4" as const;

/** {@linkcode domain} as viem's typed-data domain. */
export const typedDomain = {
  name: VOUCHER_DOMAIN_NAME,
  version: VOUCHER_DOMAIN_VERSION,
  chainId: domain.chainId,
  verifyingContract: domain.escrow,
} as const;
