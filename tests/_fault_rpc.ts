/**
 * A fault-injecting JSON-RPC proxy in front of a real node (anvil), on loopback, that answers
 * like the providers people use: it refuses `eth_getLogs` over a provider's limit with that
 * provider's status, code and words (`tests/chain/_provider_errors.ts`), answers a share of
 * requests with 429 (and `Retry-After`), 502 or 503, answers some slowly, and can hold a
 * request budget per second like a free tier. Everything else is forwarded to the node as is,
 * batches included. The plan can be changed while it runs; a seed makes the faults repeatable.
 *
 * Indexer processes started by a test are pointed at it (a subprocess cannot take a test's
 * `fetch`), and so are the benchmarks' runs behind a 2,000-block range limit.
 *
 * @module
 */

import { overRange, type ProviderRefusal } from "./chain/_provider_errors.ts";
import { unitRandom } from "./_random.ts";

/** What the proxy does to the requests it forwards. */
export interface FaultPlan {
  /** Refuse `eth_getLogs` like this provider, with its limit (or `limit`). */
  refusal?: ProviderRefusal;
  /** The limit of `refusal` (default: its `scaled`). */
  limit?: number;
  /** Share of HTTP requests answered `429 Too Many Requests` (0–1). @default {0} */
  rateLimited?: number;
  /** `Retry-After` of those answers, seconds (`undefined`: no header). @default {1} */
  retryAfterSecs?: number;
  /** Share of HTTP requests answered 502 or 503 (0–1). @default {0} */
  badGateway?: number;
  /** Share of HTTP requests answered after `slowMs` (0–1). @default {0} */
  slow?: number;
  /** The delay of a slow answer, ms. @default {1_000} */
  slowMs?: number;
  /** Most JSON-RPC calls per second; more are answered 429 (`Retry-After: 1`). */
  maxCallsPerSecond?: number;
  /** Every request is answered 503 (the endpoint is down). @default {false} */
  down?: boolean;
  /** The next this-many requests are answered 429 (with `retryAfterSecs`). @default {0} */
  rateLimitNext?: number;
  /** Methods the faults apply to (default: all). */
  methods?: readonly string[];
}

/** What the proxy did. */
export interface FaultStats {
  /** HTTP requests received. */
  requests: number;
  /** JSON-RPC calls received (a batch counts each). */
  calls: number;
  /** Calls by method. */
  byMethod: Record<string, number>;
  /** Requests answered 429. */
  rateLimited: number;
  /** Requests answered 502/503. */
  badGateway: number;
  /** Requests answered slowly. */
  slow: number;
  /** `eth_getLogs` calls refused as over the provider's limit. */
  refused: number;
  /** Most calls seen within one second. */
  peakCallsPerSecond: number;
  /** When each request arrived (`performance.now()`) and whether it was answered 429. */
  arrivals: { at: number; status: number }[];
}

/** One `eth_getLogs` call as the proxy saw it. */
export interface LogsCall {
  /** First block asked. */
  from: bigint;
  /** Last block asked. */
  to: bigint;
  /** Whether the proxy refused it (over the provider's limit). */
  refused: boolean;
}

/** The running proxy. */
export interface FaultProxy extends AsyncDisposable {
  /** Its URL. */
  url: string;
  /** The plan, changeable while it runs. */
  plan: FaultPlan;
  /** What it did. */
  stats: FaultStats;
  /** `eth_getLogs` calls, in order. */
  logs: LogsCall[];
  /** Stops it. */
  close(): Promise<void>;
}

interface Call {
  jsonrpc?: string;
  id: number | string | null;
  method: string;
  params?: unknown[];
}

type Answer = { jsonrpc: "2.0"; id: Call["id"]; result?: unknown; error?: unknown };

/** Starts a proxy to `target` (a node's HTTP URL). */
export function startFaultProxy(
  target: string,
  plan: FaultPlan = {},
  options: { seed?: number } = {},
): FaultProxy {
  const next = unitRandom(options.seed ?? 7);
  const stats: FaultStats = {
    requests: 0,
    calls: 0,
    byMethod: {},
    rateLimited: 0,
    badGateway: 0,
    slow: 0,
    refused: 0,
    peakCallsPerSecond: 0,
    arrivals: [],
  };
  let second = 0;
  let inSecond = 0;
  const proxy: FaultProxy = {
    url: "",
    plan,
    stats,
    logs: [],
    close: async () => {
      await server.shutdown();
    },
    [Symbol.asyncDispose]: () => proxy.close(),
  };

  const post = async (body: unknown): Promise<unknown> => {
    const response = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return await response.json();
  };

  /** The answer of one `eth_getLogs` call under the provider's refusal, or `undefined`. */
  const refuse = async (call: Call): Promise<{ error: unknown } | undefined> => {
    const refusal = proxy.plan.refusal;
    const [filter] = (call.params ?? []) as [{ fromBlock?: string; toBlock?: string }];
    // A filter by block hash (Ponder asks those) names one block: no range to refuse.
    if (filter?.fromBlock === undefined || filter.toBlock === undefined) return undefined;
    const from = BigInt(filter.fromBlock);
    const to = BigInt(filter.toBlock);
    const record: LogsCall = { from, to, refused: false };
    proxy.logs.push(record);
    if (!refusal) return undefined;
    const limit = proxy.plan.limit ?? refusal.scaled;
    const scaled = { ...refusal, scaled: limit };
    if (refusal.limits === "range") {
      if (!overRange(scaled, from, to)) return undefined;
      record.refused = true;
      stats.refused++;
      const fits = { from, to: from + BigInt(limit) - 1n };
      return { error: refusal.answer({ from, to, limit, fits, results: 0 }) };
    }
    const answer = await post({ ...call, jsonrpc: "2.0" }) as Answer;
    const logs = answer.result as { blockNumber: string }[] | undefined;
    if (!Array.isArray(logs) || logs.length <= limit) return undefined;
    record.refused = true;
    stats.refused++;
    // The longest range from `from` whose logs fit: up to the block before the one that
    // crosses the limit (at least `from` itself, as the providers suggest).
    const crossing = BigInt(logs[limit].blockNumber);
    const fits = { from, to: crossing - 1n >= from ? crossing - 1n : from };
    return { error: refusal.answer({ from, to, limit, fits, results: logs.length }) };
  };

  const answerOne = async (call: Call): Promise<Answer> => {
    if (call.method === "eth_getLogs") {
      const refused = await refuse(call);
      if (refused) return { jsonrpc: "2.0", id: call.id, error: refused.error };
    }
    const answer = await post({ ...call, jsonrpc: call.jsonrpc ?? "2.0" }) as Answer;
    return { ...answer, id: call.id };
  };

  const faulted = (calls: Call[]): boolean =>
    proxy.plan.methods === undefined || calls.some((c) => proxy.plan.methods!.includes(c.method));

  const handler = async (request: Request): Promise<Response> => {
    const at = performance.now();
    const response = await handle(request);
    stats.arrivals.push({ at, status: response.status });
    return response;
  };
  const handle = async (request: Request): Promise<Response> => {
    stats.requests++;
    const body = await request.json() as Call | Call[];
    const calls = Array.isArray(body) ? body : [body];
    stats.calls += calls.length;
    for (const call of calls) stats.byMethod[call.method] = (stats.byMethod[call.method] ?? 0) + 1;
    const now = Math.floor(performance.now() / 1000);
    if (now !== second) {
      second = now;
      inSecond = 0;
    }
    inSecond += calls.length;
    stats.peakCallsPerSecond = Math.max(stats.peakCallsPerSecond, inSecond);
    const plan = proxy.plan;
    if (plan.down) {
      stats.badGateway++;
      return new Response("Service Unavailable", { status: 503 });
    }
    if (plan.maxCallsPerSecond !== undefined && inSecond > plan.maxCallsPerSecond) {
      stats.rateLimited++;
      return Response.json(
        { jsonrpc: "2.0", id: null, error: { code: -32005, message: "rate limit exceeded" } },
        { status: 429, headers: { "retry-after": "1" } },
      );
    }
    if ((plan.rateLimitNext ?? 0) > 0) {
      plan.rateLimitNext!--;
      stats.rateLimited++;
      const after = "retryAfterSecs" in plan ? plan.retryAfterSecs : 1;
      return new Response("Too Many Requests", {
        status: 429,
        headers: after === undefined ? {} : { "retry-after": String(after) },
      });
    }
    if (faulted(calls)) {
      const dice = next();
      const rate = plan.rateLimited ?? 0;
      const bad = plan.badGateway ?? 0;
      if (dice < rate) {
        stats.rateLimited++;
        const headers: Record<string, string> = {};
        const after = "retryAfterSecs" in plan ? plan.retryAfterSecs : 1;
        if (after !== undefined) headers["retry-after"] = String(after);
        return new Response("Too Many Requests", { status: 429, headers });
      }
      if (dice < rate + bad) {
        stats.badGateway++;
        const status = next() < 0.5 ? 502 : 503;
        return new Response(status === 502 ? "Bad Gateway" : "Service Unavailable", { status });
      }
      if (next() < (plan.slow ?? 0)) {
        stats.slow++;
        await new Promise((resolve) => setTimeout(resolve, plan.slowMs ?? 1_000));
      }
    }
    const answers = await Promise.all(calls.map(answerOne));
    if (!Array.isArray(body)) {
      const answer = answers[0];
      const refusal = proxy.plan.refusal;
      const refused = body.method === "eth_getLogs" && answer.error !== undefined &&
        proxy.logs.at(-1)?.refused;
      return Response.json(answer, { status: refused && refusal ? refusal.status : 200 });
    }
    return Response.json(answers);
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  proxy.url = `http://127.0.0.1:${server.addr.port}`;
  return proxy;
}
