/**
 * The devnet's money when consumers pay with vouchers (`docs/devnet.md`, `docs/protocol.md` §9):
 * each live provider's till reads consumers' accounts from the Escrow, each provider redeems
 * what it is owed from its own account (funded for gas at start), and consumers are funded by
 * deposits from the devnet's consumer account.
 *
 * @module
 */

import type { Address, LocalAccount } from "viem";
import {
  type ChainClient,
  createChainClient,
  escrowAbi,
  readEscrowAccount,
  type VoucherDomain,
} from "../chain/mod.ts";
import type { ProviderTillOptions, VoucherClaim } from "./provider_payments.ts";
import type { ProviderTill } from "./provider_payments.ts";
import { confirm, createSigner, type DevnetSigner, sendAndConfirm } from "./signer.ts";

/** A live provider that redeems its own vouchers. */
export interface RedeemingProvider {
  /** Its address. */
  address: Address;
  /** Its account (sends the redemptions). */
  account: LocalAccount;
  /** Its till. */
  provider: { readonly till: ProviderTill | undefined };
}

/** What a chain with vouchers needs: where to read and what to sign for. */
export interface VoucherChain {
  /** The chain's URL as the devnet reaches it. */
  chainUrl: string;
  /** Its chain id. */
  chainId: number;
  /** The Escrow. */
  escrow: Address;
}

/** The payment options of a live provider: its till reads the Escrow through `client`. */
export function tillOptions(
  client: ChainClient,
  chain: VoucherChain,
  provider: Address,
): Omit<ProviderTillOptions, "provider"> {
  const domain: VoucherDomain = { chainId: chain.chainId, escrow: chain.escrow };
  const who = provider.toLowerCase() as Address;
  return {
    domain,
    readAccount: async (consumer) => {
      const account = await readEscrowAccount(client, chain.escrow, consumer, {
        providers: [who],
      });
      return { available: account.available, settled: account.settled.get(who) ?? 0n };
    },
  };
}

/** A chain client for the tills' reads (no retries: a failed read refuses the request). */
export async function tillClient(chain: VoucherChain): Promise<ChainClient> {
  return await createChainClient(chain.chainUrl, {
    chainId: chain.chainId,
    retryCount: 1,
    timeoutMs: 5_000,
  });
}

/** Sends each provider `amount` of the native currency for gas. */
export async function fundProviders(
  funder: DevnetSigner,
  providers: readonly { address: Address }[],
  amount: bigint,
): Promise<void> {
  for (const { address } of providers) {
    const hash = await funder.wallet.sendTransaction({
      account: funder.account,
      chain: funder.wallet.chain,
      to: address,
      value: amount,
    });
    await confirm(funder, hash, `fund provider ${address} for gas`);
  }
}

/** Deposits `amount` into the Escrow for `consumer`, from `funder`. */
export async function depositFor(
  funder: DevnetSigner,
  escrow: Address,
  consumer: Address,
  amount: bigint,
): Promise<void> {
  await sendAndConfirm(funder, {
    address: escrow,
    abi: escrowAbi,
    functionName: "depositFor",
    args: [consumer],
    value: amount,
  });
}

/** A claim as `Escrow.redeemVouchers` takes it. */
export function redemptionOf(claim: VoucherClaim): {
  voucher: { consumer: Address; provider: Address; cumulative: bigint; seq: bigint };
  signature: `0x${string}`;
  total: bigint;
  tokens: bigint;
} {
  const { consumer, provider, cumulative, seq, signature } = claim.voucher;
  return {
    voucher: { consumer, provider, cumulative, seq },
    signature,
    total: claim.total,
    tokens: claim.tokens,
  };
}

/**
 * Redeems every provider's claims, one batch per provider from its own account. A batch that
 * reverts (a consumer's deposit ran short) is retried claim by claim, so one consumer cannot
 * hold up the others; what could not be redeemed stays owed for the next round.
 *
 * @returns how many claims were paid.
 */
export async function redeemClaims(
  chain: VoucherChain,
  providers: readonly RedeemingProvider[],
  log: (line: string) => void,
): Promise<number> {
  let paid = 0;
  for (const p of providers) {
    const till = p.provider.till;
    const claims = till?.claims() ?? [];
    if (!till || claims.length === 0) continue;
    const signer = createSigner(chain.chainUrl, p.account, { chainId: chain.chainId });
    const send = (batch: VoucherClaim[]) =>
      sendAndConfirm(signer, {
        address: chain.escrow,
        abi: escrowAbi,
        functionName: "redeemVouchers",
        args: [batch.map(redemptionOf)],
      });
    try {
      await send(claims);
      for (const claim of claims) till.paid(claim);
      paid += claims.length;
    } catch {
      for (const claim of claims) {
        try {
          await send([claim]);
          till.paid(claim);
          paid++;
        } catch (error) {
          log(
            `provider ${p.address} could not redeem consumer ${claim.voucher.consumer}'s voucher ` +
              `for ${claim.total}: ${(error as Error).message.split("\n")[0]}`,
          );
        }
      }
    }
  }
  return paid;
}
