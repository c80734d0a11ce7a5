/**
 * The transport of a chain client over several RPC endpoints (private to `chain/`;
 * `client.ts` builds it): each call goes to the endpoint that costs least now — its typical
 * answer time, times the calls it already has in flight, raised by its recent failures — among
 * those that are not waiting out a `Retry-After`, have budget left and are not lagging behind
 * the others' head. A failed call is asked of the next endpoint (fail-over); when every endpoint
 * is waiting or out of budget, the call waits for the first one free, up to `maxWaitMs`.
 *
 * Why not viem's `fallback` with `rank`: it sends every call to its top-ranked transport (no
 * spreading), its ranking loop pings every endpoint forever (budget spent, a timer no client can
 * stop), and it keeps no per-endpoint `Retry-After` or budget. What it does well is kept: the
 * same rule for errors that must not fail over (`shouldThrow`: a revert is the same everywhere),
 * and a score of latency and stability.
 *
 * @module
 */

import {
  createTransport,
  type EIP1193RequestFn,
  http,
  HttpRequestError,
  shouldThrow,
  type Transport,
} from "viem";
import { readLogsRefusal } from "./_logs_refusal.ts";
import type { RpcEndpoint, RpcEndpoints } from "./client_endpoints.ts";

/** One JSON-RPC call. */
export interface RpcCall {
  /** The method. */
  method: string;
  /** Its parameters. */
  params?: readonly unknown[];
}

/** The pool behind a client: its endpoints, and calls that must share one endpoint. */
export interface RpcPool {
  /** The endpoints and their state. */
  readonly endpoints: RpcEndpoints;
  /**
   * Sends `calls` to one endpoint (in one HTTP request, a JSON-RPC batch, when batching is on)
   * and returns their results in order: answers that must agree on the chain they were read
   * from (a log range and the hash of its last block). Fails over like any call. `alone`: each
   * call in an HTTP request of its own, never batched with others sent in the same turn — for
   * large answers (a log range's MiB), which a batch would make every call of it wait for, and
   * answer all at once.
   */
  onOne(calls: readonly RpcCall[], signal?: AbortSignal, alone?: boolean): Promise<unknown[]>;
  /**
   * Checks the chain id of every endpoint not checked yet (an endpoint is never used before
   * its chain id is checked; one serving another chain is never used at all) and returns what
   * each check threw (`undefined` for a check that answered).
   */
  checkAll(): Promise<unknown[]>;
}

/** Options of {@linkcode poolTransport}. */
export interface PoolTransportOptions {
  /** Timeout of one HTTP request, ms. */
  timeoutMs: number;
  /** Most calls per JSON-RPC batch (0: no batching). */
  batchSize: number;
  /** Retries of a call that failed on every endpoint (viem's, with its backoff). */
  retryCount: number;
  /** Base delay of those retries, ms. */
  retryDelayMs: number;
  /** Longest wait for an endpoint that asked us to wait or spent its budget, ms. */
  maxWaitMs: number;
  /** The `fetch` of the HTTP requests. */
  fetch?: typeof fetch;
}

/** How telling a failure is, to keep the most useful one when every endpoint failed. */
const RANK: Record<string, number> = { range: 4, results: 4, other: 3, rate: 2, unreachable: 1 };

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      if (signal?.aborted) reject(signal.reason);
      else resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** A viem transport over `endpoints`; its `value.pool` is the {@linkcode RpcPool}. */
export function poolTransport(
  endpoints: RpcEndpoints,
  options: PoolTransportOptions,
): Transport<"rpc-pool", { pool: RpcPool }> {
  return () => {
    const sender = (url: string, batch: boolean) =>
      http(url, {
        batch: batch && options.batchSize > 0 ? { batchSize: options.batchSize, wait: 0 } : false,
        timeout: options.timeoutMs,
        retryCount: 0,
        fetchFn: options.fetch,
      })({ retryCount: 0 });
    const senders = new Map(endpoints.list.map((e) => [e, sender(e.url, true)]));
    const unbatched = new Map(endpoints.list.map((e) => [e, sender(e.url, false)]));

    const pick = (excluded: ReadonlySet<RpcEndpoint>): RpcEndpoint | undefined => {
      const now = performance.now();
      const free = endpoints.list.filter((e) =>
        !excluded.has(e) && e.refused === undefined && e.availableIn(now) === 0
      );
      if (free.length === 0) return undefined;
      // Lagging or lately failed endpoints only when no other endpoint is free; a lagging one
      // last of all (its answers are old: a head or a state behind the chain's), after one
      // that failed lately (it may answer now, and a failure is failed over).
      const current = free.filter((e) => !endpoints.lagging(e));
      const fresh = current.length > 0 ? current : free;
      const healthy = fresh.filter((e) => !e.avoided(now));
      const choice = healthy.length > 0 ? healthy : fresh;
      const measured = endpoints.list.map((e) => e.latency).filter((l) => l !== null);
      const fallback = measured.length > 0 ? Math.min(...(measured as number[])) : 1;
      return choice.reduce((a, b) => (b.cost(fallback) < a.cost(fallback) ? b : a));
    };

    /** Asks `endpoint` its chain id (once at a time) and records whether it is the one. */
    const check = (endpoint: RpcEndpoint): Promise<void> =>
      endpoint.checking ??= (async () => {
        const started = performance.now();
        try {
          const answer = await senders.get(endpoint)!.request({ method: "eth_chainId" } as never);
          endpoint.succeeded(performance.now() - started);
          const chainId = Number(answer);
          const expected = endpoints.chainId;
          if (expected === undefined) endpoints.chainId = chainId;
          if (expected !== undefined && chainId !== expected) {
            endpoint.checkedAs({
              refused: `${endpoint.label} serves chain ${chainId}, expected ${expected}: it is ` +
                "never used",
              chainId,
            });
          } else endpoint.checkedAs({ chainId });
        } catch (error) {
          const refusal = readLogsRefusal(error, 0n, 0n);
          endpoint.failed(refusal.kind, refusal.words, refusal.retryAfterMs);
          throw error;
        } finally {
          endpoint.checking = undefined;
        }
      })();

    const send = async (
      endpoint: RpcEndpoint,
      calls: readonly RpcCall[],
      signal?: AbortSignal,
      alone = false,
    ): Promise<unknown[]> => {
      const sender = (alone ? unbatched : senders).get(endpoint)!;
      if (!endpoint.checked) {
        await check(endpoint);
        if (endpoint.refused !== undefined) throw new WrongChainError(endpoint.refused);
      }
      endpoint.inflight++;
      const started = performance.now();
      try {
        const results = await Promise.all(calls.map((call) =>
          sender.request(
            { method: call.method, params: call.params } as never,
            signal ? { signal } : undefined,
          )
        ));
        endpoint.succeeded(performance.now() - started);
        calls.forEach((call, i) => noteHead(endpoint, call, results[i]));
        return results;
      } finally {
        endpoint.inflight--;
      }
    };

    const run = async (
      calls: readonly RpcCall[],
      signal?: AbortSignal,
      alone = false,
    ): Promise<unknown[]> => {
      const started = performance.now();
      const excluded = new Set<RpcEndpoint>();
      const rateTries = new Map<RpcEndpoint, number>();
      let best: { error: unknown; rank: number } | undefined;
      for (;;) {
        signal?.throwIfAborted();
        const endpoint = pick(excluded);
        if (!endpoint) {
          const waits = endpoints.list.filter((e) => !excluded.has(e)).map((e) => e.availableIn());
          const wait = waits.length > 0 ? Math.min(...waits) : Infinity;
          if (wait !== Infinity && performance.now() - started + wait <= options.maxWaitMs) {
            await sleep(Math.ceil(wait) + 1, signal);
            continue;
          }
          if (best) throw best.error;
          throw new HttpRequestError({
            url: endpoints.list[0].label,
            status: 429,
            details: `every RPC endpoint asked us to wait or spent its budget for ${
              Math.ceil(wait)
            } ms more, longer than the ${options.maxWaitMs} ms allowed`,
          });
        }
        const now = performance.now();
        for (let i = 0; i < calls.length; i++) endpoint.take(now);
        try {
          return await send(endpoint, calls, signal, alone);
        } catch (error) {
          if (signal?.aborted) throw error;
          if (error instanceof WrongChainError) {
            excluded.add(endpoint);
            best ??= { error, rank: 0 };
            continue;
          }
          if (error instanceof Error && shouldThrow(error)) throw error;
          const refusal = readLogsRefusal(error, 0n, 0n);
          // A refused log range is an answer, not a failure of the endpoint: another endpoint
          // may allow more, and the reader learns the limit from the words when none does.
          if (refusal.kind !== "range" && refusal.kind !== "results") {
            endpoint.failed(refusal.kind, refusal.words, refusal.retryAfterMs);
          }
          const rank = RANK[refusal.kind];
          if (!best || rank >= best.rank) best = { error, rank };
          const tries = (rateTries.get(endpoint) ?? 0) + 1;
          rateTries.set(endpoint, tries);
          if (refusal.kind !== "rate" || tries >= 3) excluded.add(endpoint);
        }
      }
    };

    // While no chain id is known, the endpoints are asked in their order until one answers: the
    // first listed that answers names the chain (the order given decides, never which answered
    // first); the others are then asked side by side.
    const checkAll = async (): Promise<unknown[]> => {
      const checkOne = (endpoint: RpcEndpoint) =>
        check(endpoint).then(() => undefined, (error: unknown) => error);
      const pending = endpoints.list.filter((e) => !e.checked && e.refused === undefined);
      const errors: unknown[] = [];
      while (endpoints.chainId === undefined && pending.length > 0) {
        errors.push(await checkOne(pending.shift()!));
      }
      return [...errors, ...await Promise.all(pending.map(checkOne))];
    };

    const pool: RpcPool = { endpoints, onOne: run, checkAll };
    return createTransport({
      key: "rpc-pool",
      name: "RPC pool",
      type: "rpc-pool",
      retryCount: options.retryCount,
      retryDelay: options.retryDelayMs,
      timeout: options.timeoutMs,
      request: (async (
        { method, params }: { method: string; params?: unknown },
        requestOptions?: { signal?: AbortSignal },
      ) => {
        const [result] = await run(
          [{ method, params: params as readonly unknown[] | undefined }],
          requestOptions?.signal,
        );
        return result;
      }) as EIP1193RequestFn,
    }, { pool });
  };
}

/** An endpoint refused because it serves another chain (never sent a call). */
class WrongChainError extends Error {
  override readonly name = "WrongChainError";
}

/** Records the head an answer shows: a block number, or a block (it exists, so the head is at least it). */
function noteHead(endpoint: RpcEndpoint, call: RpcCall, result: unknown): void {
  try {
    if (call.method === "eth_blockNumber" && typeof result === "string") {
      endpoint.sawHead(BigInt(result));
    } else if (
      (call.method === "eth_getBlockByNumber" || call.method === "eth_getBlockByHash") &&
      result && typeof (result as { number?: unknown }).number === "string"
    ) {
      endpoint.sawHead(BigInt((result as { number: string }).number));
    }
  } catch {
    // not a number: nothing to note
  }
}
