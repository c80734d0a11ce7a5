/**
 * A server for `indexer_bench.ts`, run in a Worker so that the load generator (the main
 * thread) and the server do not share one event loop. It receives an indexer state (structured
 * clone: bigints, Maps and Dates survive) and serves the real indexer handler on the project's
 * server (`http/serve.ts`, as `indexer/main.ts` does), or a fixed answer with the same bytes as
 * `GET /stats` on that server (the baseline) or on a bare `Deno.serve` (what the indexer was
 * served on before it had header and idle timeouts).
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { type HttpServer, serveHttp } from "../http/serve.ts";
import { createIndexerHandler } from "../indexer/handler.ts";
import type { IndexerState } from "../indexer/state.ts";

/** What the main thread sends. */
export interface StatsServerRequest {
  /**
   * `indexer`: the real handler; `bare`: a fixed answer with the same bytes, both on
   * `serveHttp`; `deno`: the fixed answer on `Deno.serve`.
   */
  mode: "indexer" | "bare" | "deno";
  /** The state to serve. */
  state: IndexerState;
}

self.onmessage = async (event: MessageEvent<StatsServerRequest | "stop">) => {
  if (event.data === "stop") {
    await server?.shutdown();
    self.postMessage("stopped");
    return;
  }
  const { mode, state } = event.data;
  const indexer = createIndexerHandler({ state: () => state });
  const bytes = new Uint8Array(
    await (await indexer(new Request("http://127.0.0.1/stats"))).arrayBuffer(),
  );
  const fixed = () =>
    new Response(bytes, { headers: { "content-type": "application/json; charset=utf-8" } });
  if (mode === "deno") {
    const served = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, fixed);
    server = served;
    self.postMessage({ port: served.addr.port, bytes: bytes.length });
    return;
  }
  const handler = mode === "indexer" ? indexer : () => Promise.resolve(fixed());
  const served = await serveHttp(handler, { hostname: "127.0.0.1", port: 0 });
  server = served;
  self.postMessage({ port: served.port, bytes: bytes.length });
};

let server: Deno.HttpServer<Deno.NetAddr> | HttpServer | undefined;
