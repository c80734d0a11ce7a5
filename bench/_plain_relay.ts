/**
 * The load benchmark's baseline, in a process of its own: the daemon itself — its HTTP server
 * (`daemon/service/serve.ts`), its API layer (routing, validation, hygiene, metrics), its scheduler,
 * queue and candidate cache, its reading and checking of the provider's reply and its rendering
 * of the answer — with a backend that sends the chat in plaintext: no trust check, no sealing,
 * no opening. The same gateway code relays it to a provider with the same engine, slots and
 * batching, and the same HTTP layer, that answers in plaintext (`_load_network.ts`). What the
 * sealed daemon spends over it is what sealing costs.
 *
 * Run: `deno run -A bench/_plain_relay.ts <gateway URL>`; it prints `{"url": …}` and serves the
 * daemon's API until stdin closes.
 *
 * @module
 */

import type { OpenedHttpResponse } from "../crypto/mod.ts";
import type {
  ChatBackend,
  ChatReply,
  ChatRequest,
  EmbeddingsReply,
  NetworkModel,
} from "../daemon/core/backend.ts";
import { CandidateCache } from "../daemon/network/candidate_cache.ts";
import { GatewayClient, ProviderBusyError } from "../daemon/gateway/gateway_client.ts";
import { createDaemonHandler } from "../daemon/service/handler.ts";
import { DaemonMetrics } from "../daemon/service/metrics.ts";
import { RequestQueue } from "../daemon/network/queue.ts";
import { type Lease, ProviderScheduler } from "../daemon/network/scheduler.ts";
import { serveDaemon } from "../daemon/service/serve.ts";
import { VerdictLog } from "../daemon/trust/verdict_log.ts";
import { chatExchange } from "../daemon/network/exchanges.ts";
import { RELAY_READ_AHEAD_BYTES } from "../daemon/network/network_backend.ts";
import { VERSION } from "../version.ts";

const encoder = new TextEncoder();

/** The plaintext reply as the opened sealed reply it stands for: status 200, the body as it is. */
function plainOpened(whole: boolean) {
  return {
    bytes: new Uint8Array(0),
    content: new Uint8Array(0),
    openResponse: (body: ReadableStream<Uint8Array>): Promise<OpenedHttpResponse> =>
      Promise.resolve({
        status: 200,
        headers: new Headers({
          "content-type": whole ? "application/json" : "text/event-stream",
        }),
        informational: [],
        body,
        trailers: Promise.resolve(new Headers()),
      }),
  };
}

/** The network backend's work without the sealing: choose, wait, relay, read the reply. */
class PlainBackend implements ChatBackend {
  readonly #gateway: GatewayClient;
  readonly #scheduler = new ProviderScheduler();
  readonly #queue = new RequestQueue({ nextWake: () => this.#scheduler.nextExpiry() });
  readonly #cache = new CandidateCache({ onRefresh: () => this.#queue.wake() });

  constructor(gateway: string) {
    this.#gateway = new GatewayClient(gateway);
    this.#scheduler.onFree(() => this.#queue.wake());
  }

  listModels(signal: AbortSignal): Promise<readonly NetworkModel[]> {
    return this.#gateway.models(signal);
  }

  async chat(request: ChatRequest, signal: AbortSignal): Promise<ChatReply> {
    const { model, tier } = request;
    const candidates = await this.#cache.get(this.#gateway, { model, tier }, signal);
    const exchange = chatExchange(request, signal);
    const bytes = encoder.encode(JSON.stringify(exchange.body));
    const deadline = performance.now() + 120_000;
    const take = () => {
      const list = this.#cache.peek(this.#gateway.url, model, tier) ?? candidates;
      const pick = this.#scheduler.pick(list, { model });
      return pick && this.#scheduler.acquire(pick);
    };
    while (true) {
      const lease: Lease = await this.#queue.wait(model, take, { signal, deadline });
      const { candidate } = lease;
      try {
        const relayed = Promise.withResolvers<void>();
        const stream = await this.#gateway.relay(candidate.provider, bytes, {
          signal,
          readAheadBytes: RELAY_READ_AHEAD_BYTES,
          onEnd: relayed.resolve,
        });
        const finish = await exchange.open(
          plainOpened(request.whole === true),
          stream,
          lease,
          signal,
          candidate,
        );
        void relayed.promise.then(() => lease.release());
        return finish({
          provider: candidate.provider,
          tier,
          verdict: "plaintext",
          gateway: this.#gateway.url,
        });
      } catch (error) {
        if (!(error instanceof ProviderBusyError)) {
          lease.release();
          throw error;
        }
        lease.release({ busyForMs: error.retryAfterMs });
      }
    }
  }

  embed(): Promise<EmbeddingsReply> {
    return Promise.reject(new Error("The plaintext baseline serves chats only"));
  }
}

let handler: Parameters<typeof serveDaemon>[0] = () => Promise.resolve(new Response());
const server = await serveDaemon((request, info) => handler(request, info), {
  hostname: "127.0.0.1",
  port: 0,
  onError: () => {},
});
const serve = createDaemonHandler({
  backend: new PlainBackend(Deno.args[0]),
  gateways: () => [],
  verdicts: new VerdictLog(),
  version: VERSION,
  port: server.port,
  log: () => {},
  metrics: new DaemonMetrics(),
});
handler = (request, info) => serve(request, info);
// Exit on SIGTERM rather than die of it, so that a `--cpu-prof` run writes its profile.
if (Deno.build.os !== "windows") Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
await server.close();
