/**
 * The load benchmark's baseline, in a process of its own: a plaintext relay through the same
 * hops as the daemon — the daemon's HTTP server (`daemon/serve.ts`), its scheduler, queue and
 * candidate cache, a devnet gateway, a provider with the same engine and slots — doing
 * everything the daemon does except the end-to-end sealing, the trust checks and the
 * re-rendering of the reply (the provider's event stream is passed through as it is).
 *
 * Run: `deno run -A bench/_plain_relay.ts <gateway URL>`; it prints `{"url": …}` and serves
 * `POST /v1/chat/completions` until stdin closes.
 *
 * @module
 */

import { CandidateCache } from "../daemon/candidate_cache.ts";
import { GatewayClient, ProviderBusyError } from "../daemon/gateway_client.ts";
import { RequestQueue } from "../daemon/queue.ts";
import { type Lease, ProviderScheduler } from "../daemon/scheduler.ts";
import { serveDaemon } from "../daemon/serve.ts";

const gateway = new GatewayClient(Deno.args[0]);
const scheduler = new ProviderScheduler();
const queue = new RequestQueue({ nextWake: () => scheduler.nextExpiry() });
const cache = new CandidateCache({ onRefresh: () => queue.wake() });
scheduler.onFree(() => queue.wake());
const encoder = new TextEncoder();

/** The provider's stream, passed on; the slot is given back when it ends or is cancelled. */
function releasing(body: ReadableStream<Uint8Array>, lease: Lease): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const step = await reader.read();
        if (step.done) {
          lease.release();
          controller.close();
        } else controller.enqueue(step.value);
      } catch (error) {
        lease.release();
        controller.error(error);
      }
    },
    cancel(reason) {
      lease.release();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

async function relay(request: Request): Promise<Response> {
  const body = await request.json();
  const model = String(body.model).replace(/^net\/verified\//, "").replace(/:latest$/, "");
  const bytes = encoder.encode(JSON.stringify({ ...body, model }));
  const { signal } = request;
  const tier = "verified" as const;
  const candidates = await cache.get(gateway, { model, tier }, signal);
  const deadline = performance.now() + 120_000;
  const take = () => {
    const pick = scheduler.pick(cache.peek(gateway.url, model, tier) ?? candidates, { model });
    return pick && scheduler.acquire(pick);
  };
  while (true) {
    const lease = await queue.wait(model, take, { signal, deadline });
    try {
      const stream = await gateway.relay(lease.candidate.provider, bytes, signal);
      return new Response(releasing(stream, lease), {
        headers: { "content-type": body.stream ? "text/event-stream" : "application/json" },
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

const server = await serveDaemon(
  (request) =>
    relay(request).catch((error) =>
      Response.json({ error: { message: String(error) } }, { status: 502 })
    ),
  { hostname: "127.0.0.1", port: 0, onError: () => {} },
);
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
await server.close();
