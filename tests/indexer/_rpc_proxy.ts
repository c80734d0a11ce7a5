/**
 * A JSON-RPC proxy in front of anvil, on loopback, that can behave like a real provider's
 * endpoint: refuse `eth_getLogs` answers with more than a number of results, refuse certain
 * blocks altogether, answer `eth_getLogs` slowly, and hold its answers past a budget (so a
 * scan moves exactly as far as a test allows, whatever the machine's speed). Indexer processes
 * started by a test are pointed at it (a subprocess cannot take a test's `fetch`).
 *
 * @module
 */

/** A JSON-RPC call. */
interface Call {
  id: number | string;
  method: string;
  params?: unknown[];
}

/** Options of {@linkcode startRpcProxy}. */
export interface RpcProxyOptions {
  /** Refuse `eth_getLogs` answers with more results than this ("query returned more than …"). */
  maxLogs?: number;
  /** Delay of every `eth_getLogs` answer, ms. @default {0} */
  getLogsDelayMs?: number;
}

/** The budget of {@linkcode RpcProxy.allowLogs}: no limit. */
export const UNLIMITED = Number.POSITIVE_INFINITY;

/** The running proxy. */
export interface RpcProxy extends AsyncDisposable {
  /** Its URL. */
  url: string;
  /** Options, changeable while it runs. */
  options: RpcProxyOptions;
  /** `eth_getLogs` ranges asked, in order. */
  getLogs: { from: bigint; to: bigint }[];
  /**
   * Lets `count` more `eth_getLogs` results through (answers refused for their size do not
   * count); later ones are held until the budget is raised again. @default {UNLIMITED}
   */
  allowLogs(count: number): void;
  /** Stops it. */
  close(): Promise<void>;
}

/** Starts a proxy to `target`. */
export function startRpcProxy(target: string, options: RpcProxyOptions = {}): RpcProxy {
  let budget = UNLIMITED;
  const held: (() => void)[] = [];
  const proxy: RpcProxy = {
    url: "",
    options,
    getLogs: [],
    allowLogs(count) {
      budget = count;
      while (budget > 0 && held.length > 0) {
        budget--;
        held.shift()!();
      }
    },
    close: async () => {
      proxy.allowLogs(UNLIMITED);
      await server.shutdown();
    },
    [Symbol.asyncDispose]: () => proxy.close(),
  };
  /** Waits for the budget; a client that went away (killed) stops waiting and uses none. */
  const pass = (signal: AbortSignal): Promise<void> => {
    if (budget > 0) {
      budget--;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const release = () => {
        signal.removeEventListener("abort", gone);
        resolve();
      };
      const gone = () => {
        const at = held.indexOf(release);
        if (at >= 0) held.splice(at, 1);
        resolve();
      };
      held.push(release);
      signal.addEventListener("abort", gone, { once: true });
    });
  };
  const forward = async (call: Call, signal: AbortSignal): Promise<unknown> => {
    const response = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(call),
    });
    const answer = await response.json();
    if (call.method !== "eth_getLogs") return answer;
    const [filter] = (call.params ?? []) as [{ fromBlock: string; toBlock: string }];
    proxy.getLogs.push({ from: BigInt(filter.fromBlock), to: BigInt(filter.toBlock) });
    if (proxy.options.getLogsDelayMs) {
      await new Promise((resolve) => setTimeout(resolve, proxy.options.getLogsDelayMs));
    }
    const max = proxy.options.maxLogs;
    if (max !== undefined && Array.isArray(answer.result) && answer.result.length > max) {
      return {
        jsonrpc: "2.0",
        id: call.id,
        error: { code: -32005, message: `query returned more than ${max} results` },
      };
    }
    if (Array.isArray(answer.result)) await pass(signal);
    return answer;
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    const answers = Array.isArray(body)
      ? await Promise.all(body.map((call) => forward(call, req.signal)))
      : await forward(body as Call, req.signal);
    return Response.json(answers);
  });
  proxy.url = `http://127.0.0.1:${server.addr.port}`;
  return proxy;
}
