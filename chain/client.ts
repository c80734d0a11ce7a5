/**
 * The viem client factory: an HTTP JSON-RPC client with explicit timeout and retry settings,
 * checked against the expected chain id before it is handed out.
 *
 * @example
 * ```ts ignore
 * import { createChainClient } from "@net/consumer/chain";
 *
 * const client = await createChainClient("http://127.0.0.1:8545", {
 *   chainId: 31337,
 *   timeoutMs: 5_000,
 * });
 * console.log(client.chain.id);
 * ```
 *
 * @module
 */

import {
  type Address,
  type Chain,
  createPublicClient,
  defineChain,
  getAddress,
  http,
  isAddress,
  type PublicClient,
  type Transport,
} from "viem";
import { abbreviate } from "../errors.ts";
import { ChainConfigError } from "./errors.ts";

/** A viem public client on a chain whose id has been checked. */
export type ChainClient = PublicClient<Transport, Chain>;

/** Options of {@linkcode createChainClient}. */
export interface ChainClientOptions {
  /**
   * The chain id the endpoint must serve. When absent, any chain is accepted and its id is
   * taken from the endpoint.
   *
   * @default {undefined}
   */
  chainId?: number;
  /**
   * Timeout of one HTTP request, in milliseconds. A request that is retried gets this much
   * time per attempt, so one call fails after at most
   * `(retryCount + 1) × timeoutMs + backoff`.
   *
   * @default {10_000}
   */
  timeoutMs?: number;
  /**
   * How often a failed request (network error, timeout, HTTP 5xx/429, JSON-RPC limit or
   * internal error) is retried.
   *
   * @default {2}
   */
  retryCount?: number;
  /**
   * Base delay before a retry, in milliseconds; viem doubles it on every attempt.
   *
   * @default {200}
   */
  retryDelayMs?: number;
  /**
   * Address of a Multicall3-compatible contract (`aggregate3`) on this chain. When absent,
   * reads use viem's deployless multicall, which works on any chain.
   *
   * @default {undefined}
   */
  multicallAddress?: Address;
  /**
   * Most JSON-RPC calls per HTTP request. Calls issued together (the concurrent `eth_call`s
   * of one read step) go out as one JSON-RPC batch, so a read costs the same number of HTTP
   * round trips whatever its size. `0` sends every call on its own (for endpoints that
   * refuse batches).
   *
   * @default {100}
   */
  batchSize?: number;
  /**
   * The `fetch` used for HTTP requests.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
}

const DEFAULTS = { timeoutMs: 10_000, retryCount: 2, retryDelayMs: 200 } as const;

function checkCount(name: string, value: number | undefined, min: number): void {
  if (value === undefined) return;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: ${name} must be an integer ≥ ${min}, found ${value}`,
    );
  }
}

/**
 * Creates a viem public client for an HTTP(S) JSON-RPC endpoint and checks the chain id.
 *
 * The client does not cache block numbers (`cacheTime: 0`), so consecutive reads see new
 * blocks at once.
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed URL or option, `unreachable`
 * when `eth_chainId` fails (after the retries), `wrong_chain` when the id differs.
 */
export async function createChainClient(
  rpcUrl: string,
  options: ChainClientOptions = {},
): Promise<ChainClient> {
  let url: URL;
  try {
    url = new URL(rpcUrl);
  } catch {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: RPC URL ${JSON.stringify(abbreviate(rpcUrl, 80))} is not a URL`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: RPC URL must be http: or https:, found ${url.protocol}`,
    );
  }
  checkCount("chainId", options.chainId, 1);
  checkCount("timeoutMs", options.timeoutMs, 1);
  checkCount("retryCount", options.retryCount, 0);
  checkCount("retryDelayMs", options.retryDelayMs, 0);
  checkCount("batchSize", options.batchSize, 0);
  if (options.multicallAddress !== undefined && !isAddress(options.multicallAddress)) {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: multicallAddress must be a 20-byte address, found ${
        JSON.stringify(abbreviate(String(options.multicallAddress), 44))
      }`,
    );
  }
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const retryCount = options.retryCount ?? DEFAULTS.retryCount;
  const batchSize = options.batchSize ?? 100;
  const transport = http(rpcUrl, {
    batch: batchSize > 0 ? { batchSize, wait: 0 } : false,
    timeout: timeoutMs,
    retryCount,
    retryDelay: options.retryDelayMs ?? DEFAULTS.retryDelayMs,
    fetchFn: options.fetch,
  });

  const probe = createPublicClient({ transport, cacheTime: 0 });
  let chainId: number;
  try {
    chainId = await probe.getChainId();
  } catch (cause) {
    throw new ChainConfigError(
      "unreachable",
      `Cannot reach the chain: ${url.origin} did not answer eth_chainId`,
      {
        cause,
        details: `${retryCount + 1} attempt(s), ${timeoutMs} ms each; last error: ${
          cause instanceof Error ? cause.message.split("\n")[0] : String(cause)
        }`,
        hints: ["Check the RPC URL and that the node is running."],
      },
    );
  }
  if (options.chainId !== undefined && chainId !== options.chainId) {
    throw new ChainConfigError(
      "wrong_chain",
      `Cannot use the chain at ${url.origin}: chain id is ${chainId}, expected ${options.chainId}`,
    );
  }
  const chain = defineChain({
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    ...(options.multicallAddress
      ? { contracts: { multicall3: { address: getAddress(options.multicallAddress) } } }
      : {}),
  });
  return createPublicClient({ chain, transport, cacheTime: 0 });
}
