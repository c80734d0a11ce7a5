/**
 * A server for `indexer_bench.ts`, run in a Worker so that the load generator (the main
 * thread) and the server do not share one event loop. It receives an indexer state (structured
 * clone: bigints, Maps and Dates survive) and serves either the real indexer handler or a bare
 * `Deno.serve` that answers every request with the same bytes as `GET /stats`.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { createIndexerHandler } from "../indexer/handler.ts";
import type { IndexerState } from "../indexer/state.ts";

/** What the main thread sends. */
export interface StatsServerRequest {
  /** `indexer`: the real handler; `bare`: a fixed answer with the same bytes. */
  mode: "indexer" | "bare";
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
  const handler = mode === "indexer"
    ? indexer
    : () => new Response(bytes, { headers: { "content-type": "application/json; charset=utf-8" } });
  server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  self.postMessage({ port: server.addr.port, bytes: bytes.length });
};

let server: Deno.HttpServer<Deno.NetAddr> | undefined;
