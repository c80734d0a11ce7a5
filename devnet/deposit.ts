/**
 * Tops up a consumer's Escrow deposit on the devnet, from the devnet's consumer account (anvil
 * dev account 2): what the demo prints to fund the daemon's consumer address again.
 *
 * ```sh
 * deno run -A devnet/deposit.ts --network .devnet/network.json --to 0x… --amount 1
 * ```
 *
 * The amount is in the chain's whole unit (ether; up to 18 decimals). It prints the deposit
 * after the top-up.
 *
 * @module
 */

import type { Address } from "viem";
import { parseCost } from "../chain/cost.ts";
import { createChainClient, readEscrowAccount } from "../chain/mod.ts";
import { formatCost } from "../chain/cost.ts";
import { resolveNetworkProfile } from "../chain/network_profile.ts";
import { address, defineKind, defineSettings, SettingError, text } from "../settings/mod.ts";
import { depositFor } from "./_payments.ts";
import { createSigner, devAccounts } from "./signer.ts";

const amount = defineKind(
  "<amount>",
  "an amount in the chain's whole unit with at most 18 decimals, such as 1 or 0.5",
  (value) => {
    const wei = parseCost(value);
    if (wei === 0n) throw new Error("the amount is 0");
    return wei;
  },
);

/** The settings of `devnet/deposit.ts`. */
export const DEPOSIT_SETTINGS = defineSettings({
  usage: "Usage: deno run -A devnet/deposit.ts --network <file> --to <address> --amount <n>",
  summary: "Deposits into a consumer's Escrow account on the devnet, from its consumer account.",
}, {
  network: {
    flag: "network",
    kind: text("<file>"),
    default: ".devnet/network.json",
    help: "The devnet's network profile (written by deno task devnet / demo).",
  },
  to: { flag: "to", kind: address(), help: "The consumer's address (GET /v1/account shows it)." },
  amount: { flag: "amount", kind: amount, default: "1", help: "How much, in ether." },
});

async function main(args: readonly string[], env: Record<string, string>): Promise<number> {
  let values;
  try {
    const parsed = DEPOSIT_SETTINGS.parse(args, env);
    if (parsed.help) {
      console.log(parsed.text);
      return 0;
    }
    values = parsed.values;
    if (!values.to) throw new SettingError("--to", "Cannot deposit: --to <address> is required");
  } catch (error) {
    if (!(error instanceof SettingError)) throw error;
    console.error(`deposit: ${error.message}`);
    return 2;
  }
  const profile = resolveNetworkProfile(values.network);
  const rpcUrl = profile.rpcUrls[0];
  const signer = createSigner(rpcUrl, devAccounts().consumer, { chainId: profile.chainId });
  const consumer = values.to.toLowerCase() as Address;
  await depositFor(signer, profile.contracts.escrow, consumer, values.amount);
  const client = await createChainClient(rpcUrl, { chainId: profile.chainId });
  const account = await readEscrowAccount(client, profile.contracts.escrow, consumer);
  console.log(
    `deposit: ${formatCost(values.amount)} deposited for ${consumer}; available now ` +
      `${formatCost(account.available)} (deposit ${formatCost(account.deposit)})`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args, Deno.env.toObject()));
