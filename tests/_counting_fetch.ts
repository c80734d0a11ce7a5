/**
 * A `fetch` that counts the HTTP requests and the JSON-RPC calls it sends, and can answer or
 * rewrite calls: the tests' view of how many round trips an operation costs, and a fake
 * endpoint with limits.
 *
 * @module
 */

/** A JSON-RPC call as viem's HTTP transport sends it. */
export interface RpcRequest {
  /** Request id. */
  id: number;
  /** Method name. */
  method: string;
  /** Parameters. */
  params: unknown[];
}

/** A JSON-RPC error object. */
export interface RpcErrorObject {
  /** Error code. */
  code: number;
  /** Error message. */
  message: string;
}

/** Options of {@linkcode countingFetch}. */
export interface CountingFetchOptions {
  /**
   * Answers a call with an error instead of the node, or returns `undefined` to forward it.
   *
   * @default {undefined}
   */
  intercept?: (request: RpcRequest) => RpcErrorObject | undefined;
  /**
   * Inspects the node's result and may replace it with an error.
   *
   * @default {undefined}
   */
  inspect?: (request: RpcRequest, result: unknown) => RpcErrorObject | undefined;
}

/** A counting fetch and its counters. */
export interface CountingFetch {
  /** Pass it as the client's `fetch`. */
  fetch: typeof fetch;
  /** HTTP requests sent. */
  requests: number;
  /** JSON-RPC calls, in order. */
  methods: string[];
  /** Sets the counters back to zero. */
  reset(): void;
}

/** Creates a counting `fetch`. */
export function countingFetch(options: CountingFetchOptions = {}): CountingFetch {
  const forward = async (
    input: RequestInfo | URL,
    init: RequestInit | undefined,
    call: RpcRequest,
  ) => {
    const answer = options.intercept?.(call);
    if (answer) return { jsonrpc: "2.0", id: call.id, error: answer };
    const response = await fetch(input, { ...init, body: JSON.stringify(call) });
    const json = await response.json();
    const replaced = options.inspect && "result" in json
      ? options.inspect(call, json.result)
      : undefined;
    return replaced ? { jsonrpc: "2.0", id: call.id, error: replaced } : json;
  };
  const state: CountingFetch = {
    requests: 0,
    methods: [],
    reset() {
      state.requests = 0;
      state.methods = [];
    },
    fetch: async (input, init) => {
      state.requests++;
      const body = JSON.parse(String(init?.body ?? "null"));
      const calls: RpcRequest[] = Array.isArray(body) ? body : [body];
      state.methods.push(...calls.map((r) => r.method));
      if (!options.intercept && !options.inspect) return await fetch(input, init);
      const answers = await Promise.all(calls.map((call) => forward(input, init, call)));
      return Response.json(Array.isArray(body) ? answers : answers[0]);
    },
  };
  return state;
}
