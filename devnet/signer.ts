/**
 * Accounts and transaction sending for the devnet and the tests: anvil's well-known dev
 * accounts, a wallet+public client pair, and `sendAndConfirm`, which fails with the revert
 * reason instead of returning a failed receipt.
 *
 * @module
 */

import {
  type Abi,
  type Account,
  type Address,
  type Chain,
  type ContractFunctionArgs,
  type ContractFunctionName,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hash,
  http,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { ANVIL_MNEMONIC } from "./anvil.ts";

/** A wallet client and a public client on the same chain and transport. */
export interface DevnetSigner {
  /** Sends transactions from `account`. */
  wallet: WalletClient<Transport, Chain, Account>;
  /** Reads and waits for receipts. */
  client: PublicClient<Transport, Chain>;
  /** The sending account. */
  account: LocalAccount;
}

/** The roles the seed uses, all anvil dev accounts (public keys: test use only). */
export interface DevnetAccounts {
  /** Deploys the contracts and owns them (dev account 0). */
  owner: LocalAccount;
  /** Authorized Escrow settler (dev account 1). */
  settler: LocalAccount;
  /** Deposits into the Escrow and gets charged (dev account 2). */
  consumer: LocalAccount;
  /** Receives emitted rewards (dev account 3). */
  rewards: LocalAccount;
}

/** Anvil's dev accounts 0–3 in their devnet roles. */
export function devAccounts(): DevnetAccounts {
  const at = (addressIndex: number) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex });
  return { owner: at(0), settler: at(1), consumer: at(2), rewards: at(3) };
}

/** A chain description for a local endpoint. */
export function devnetChain(rpcUrl: string, chainId: number): Chain {
  return defineChain({
    id: chainId,
    name: `devnet ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

/** Creates a signer for `account` on the chain at `rpcUrl`. */
export function createSigner(
  rpcUrl: string,
  account: LocalAccount,
  options: { chainId: number },
): DevnetSigner {
  const chain = devnetChain(rpcUrl, options.chainId);
  const transport = http(rpcUrl, { timeout: 60_000, retryCount: 0 });
  return {
    wallet: createWalletClient({ account, chain, transport }),
    client: createPublicClient({ chain, transport, cacheTime: 0, pollingInterval: 50 }),
    account,
  };
}

/** Waits for a transaction's receipt and throws when it reverted. */
export async function confirm(
  signer: DevnetSigner,
  hash: Hash,
  what: string,
): Promise<TransactionReceipt> {
  const receipt = await signer.client.waitForTransactionReceipt({
    hash,
    pollingInterval: 20,
    timeout: 60_000,
  });
  if (receipt.status !== "success") {
    throw new Error(`Cannot ${what}: transaction ${hash} reverted (block ${receipt.blockNumber})`);
  }
  return receipt;
}

/** A contract write: what `writeContract` takes, minus the account and chain. */
export interface WriteRequest<
  abi extends Abi,
  name extends ContractFunctionName<abi, "nonpayable" | "payable">,
> {
  /** Contract address. */
  address: Address;
  /** The contract's ABI. */
  abi: abi;
  /** Function to call. */
  functionName: name;
  /** Its arguments. */
  args: ContractFunctionArgs<abi, "nonpayable" | "payable", name>;
  /** Native value to send. */
  value?: bigint;
  /** Gas limit; estimated when absent. */
  gas?: bigint;
}

/**
 * Sends a contract write and waits for a successful receipt. A revert fails at gas
 * estimation, with the decoded custom error.
 */
export async function sendAndConfirm<
  const abi extends Abi,
  name extends ContractFunctionName<abi, "nonpayable" | "payable">,
>(signer: DevnetSigner, request: WriteRequest<abi, name>): Promise<TransactionReceipt> {
  const what = `call ${request.functionName} on ${request.address}`;
  // deno-lint-ignore no-explicit-any
  const params = { ...request, account: signer.account, chain: signer.wallet.chain } as any;
  const hash = await signer.wallet.writeContract(params);
  return await confirm(signer, hash, what);
}
