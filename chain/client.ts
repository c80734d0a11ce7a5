/**
 * The viem client factory: a JSON-RPC client over one or several HTTP endpoints, with explicit
 * timeout, retry and budget settings, checked against the expected chain id before it is
 * handed out.
 *
 * With several endpoints, calls are spread over them and fail over between them
 * (`_client_pool.ts`): the cheapest now (answer time × calls in flight, raised by recent
 * failures) among those that are not waiting out a `Retry-After`, have budget left
 * (`maxRps`) and are not lagging behind the others' head. Every endpoint's chain id is checked
 * before its first call; one that serves another chain is never used. A single URL works as
 * before, with the same `Retry-After` and budget rules.
 *
 * @example
 * ```ts ignore
 * import { createChainClient } from "@net/consumer/chain";
 *
 * const client = await createChainClient(
 *   ["https://eth.example/v2/KEY", "http://127.0.0.1:8545"],
 *   { chainId: 31337, timeoutMs: 5_000, maxRps: 10 },
 * );
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
  isAddress,
  type PublicClient,
  type Transport,
} from "viem";
import { abbreviate, findCause } from "../errors.ts";
import { ChainConfigError } from "./errors.ts";
import { poolTransport, type RpcPool } from "./_client_pool.ts";
import { RpcEndpoints } from "./client_endpoints.ts";
import { type LogsRefusalKind, readLogsRefusal } from "./_logs_refusal.ts";

export type { RpcCall, RpcPool } from "./_client_pool.ts";
export type { LogsRefusalKind } from "./_logs_refusal.ts";
export {
  RpcEndpoints,
  type RpcEndpointsOptions,
  type RpcEndpointState,
  type RpcEndpointStatus,
} from "./client_endpoints.ts";

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
  /**
   * Most JSON-RPC calls per second to each endpoint (a batch counts each call). Only when the
   * endpoints are given as URLs; an {@linkcode RpcEndpoints} carries its own.
   *
   * @default {undefined} (no budget)
   */
  maxRps?: number;
  /**
   * Longest time a call waits for an endpoint that asked us to wait (`Retry-After`) or spent its
   * budget, when no other endpoint can take it, ms.
   *
   * @default {timeoutMs}
   */
  maxWaitMs?: number;
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
 * Creates a viem public client over one or several HTTP(S) JSON-RPC endpoints and checks their
 * chain id. `endpoints` is a URL, a list of URLs, or an {@linkcode RpcEndpoints} shared with
 * other clients (so their budgets and waits are shared).
 *
 * The client does not cache block numbers (`cacheTime: 0`), so consecutive reads see new
 * blocks at once.
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed URL or option, `unreachable`
 * when no endpoint answers `eth_chainId` (after the retries), `wrong_chain` when an endpoint
 * that answers serves another chain than `chainId` (or than the first endpoint that answered).
 */
export async function createChainClient(
  endpoints: string | readonly string[] | RpcEndpoints,
  options: ChainClientOptions = {},
): Promise<ChainClient> {
  checkCount("chainId", options.chainId, 1);
  checkCount("timeoutMs", options.timeoutMs, 1);
  checkCount("retryCount", options.retryCount, 0);
  checkCount("retryDelayMs", options.retryDelayMs, 0);
  checkCount("batchSize", options.batchSize, 0);
  checkCount("maxWaitMs", options.maxWaitMs, 0);
  if (options.multicallAddress !== undefined && !isAddress(options.multicallAddress)) {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: multicallAddress must be a 20-byte address, found ${
        JSON.stringify(abbreviate(String(options.multicallAddress), 44))
      }`,
    );
  }
  const set = endpoints instanceof RpcEndpoints
    ? endpoints
    : new RpcEndpoints(typeof endpoints === "string" ? [endpoints] : endpoints, {
      maxRps: options.maxRps,
    });
  if (options.chainId !== undefined) {
    if (set.chainId !== undefined && set.chainId !== options.chainId) {
      throw new ChainConfigError(
        "wrong_chain",
        `Cannot use the chain at ${
          set.list[0].label
        }: chain id is ${set.chainId}, expected ${options.chainId}`,
      );
    }
    set.chainId = options.chainId;
  }
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const retryCount = options.retryCount ?? DEFAULTS.retryCount;
  const transport = poolTransport(set, {
    timeoutMs,
    batchSize: options.batchSize ?? 100,
    retryCount,
    retryDelayMs: options.retryDelayMs ?? DEFAULTS.retryDelayMs,
    maxWaitMs: options.maxWaitMs ?? timeoutMs,
    fetch: options.fetch,
  });
  const probe = createPublicClient({ transport, cacheTime: 0 });
  await checkEndpoints(probe.transport.pool, retryCount, timeoutMs);
  const chainId = set.chainId!;
  const chain = defineChain({
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: set.list.map((endpoint) => endpoint.url) } },
    ...(options.multicallAddress
      ? { contracts: { multicall3: { address: getAddress(options.multicallAddress) } } }
      : {}),
  });
  return createPublicClient({ chain, transport, cacheTime: 0 });
}

/**
 * Checks every endpoint's chain id, each tried `retryCount + 1` times: at least one must
 * answer, and none that answers may serve another chain.
 */
async function checkEndpoints(pool: RpcPool, retryCount: number, timeoutMs: number) {
  let errors: unknown[] = [];
  for (let attempt = 0; attempt <= retryCount; attempt++) {
    errors = await pool.checkAll();
    if (pool.endpoints.list.every((e) => e.checked || e.refused !== undefined)) break;
    if (attempt < retryCount) {
      await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
    }
  }
  const refused = pool.endpoints.list.find((e) => e.refused !== undefined);
  if (refused) {
    throw new ChainConfigError(
      "wrong_chain",
      `Cannot use the chain at ${refused.label}: chain id is ${refused.chainId}, expected ${pool.endpoints.chainId}`,
      pool.endpoints.list.length > 1 ? { hints: ["Every RPC URL must serve the same chain."] } : {},
    );
  }
  if (!pool.endpoints.list.some((e) => e.checked)) {
    const list = pool.endpoints.list;
    throw new ChainConfigError(
      "unreachable",
      `Cannot reach the chain: ${
        list.length === 1
          ? `${list[0].label} did not answer eth_chainId`
          : `none of ${list.map((e) => e.label).join(", ")} answered eth_chainId`
      }`,
      {
        cause: errors.find((e) => e !== undefined),
        details: `${retryCount + 1} attempt(s), ${timeoutMs} ms each; last error: ${
          list.map((e, i) =>
            `${list.length > 1 ? `${e.label}: ` : ""}${
              firstLineOf(errors[i] ?? e.status(null, 0).lastError?.message)
            }`
          ).join("; ")
        }`,
        hints: ["Check the RPC URL and that the node is running."],
      },
    );
  }
}

function firstLineOf(error: unknown): string {
  if (error instanceof Error) {
    const { shortMessage, details } = error as { shortMessage?: string; details?: string };
    const head = (shortMessage ?? error.message).split("\n")[0];
    const extra = details?.split("\n")[0];
    return extra && !head.includes(extra) ? `${head} (${extra})` : head;
  }
  return String(error).split("\n")[0];
}

/**
 * What kind of failure an RPC error is, read from its whole cause chain (HTTP status, JSON-RPC
 * code, `Retry-After`, the provider's words): `rate` (rate-limited), `unreachable` (no
 * connection, a gateway error, 5xx), `range` or `results` (a log range refused as too much),
 * `other` (an error answer).
 */
export function rpcFailureKind(error: unknown): LogsRefusalKind {
  const kind = readLogsRefusal(error, 0n, 0n).kind;
  // Outside a log range, a timeout is an endpoint that does not answer.
  if (kind === "results" && findCause(error, (e) => (e as Error)?.name === "TimeoutError")) {
    return "unreachable";
  }
  return kind;
}

/** The pool behind a client made by {@linkcode createChainClient}, or `undefined`. */
export function rpcPoolOf(client: ChainClient): RpcPool | undefined {
  return (client.transport as { pool?: RpcPool }).pool;
}
