import assert from "node:assert/strict";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { RequestQueue } from "../../../daemon/network/queue.ts";

/** A pool of slots the queue's `take` functions draw from. */
function pool(size: number) {
  let free = size;
  return {
    take: () => (free > 0 ? free-- : undefined),
    give: () => free++,
    get free() {
      return free;
    },
  };
}

const later = (ms = 60_000) => performance.now() + ms;

function overloaded(error: unknown, message: RegExp): boolean {
  assert.ok(error instanceof DaemonError, `expected DaemonError, got ${error}`);
  assert.equal(error.code, "overloaded");
  assert.equal(error.status, 503);
  assert.ok(
    error.retryAfterSeconds !== undefined && error.retryAfterSeconds >= 1 &&
      error.retryAfterSeconds <= 60,
    `Retry-After ${error.retryAfterSeconds}`,
  );
  assert.match(error.shortMessage, message);
  return true;
}

Deno.test("queue: with a free slot a request does not wait; without one it waits its turn, first in first out", async () => {
  const queue = new RequestQueue({ maxQueue: 8 });
  const slots = pool(1);
  assert.equal(await queue.wait("m", slots.take, { deadline: later() }), 1);
  const served: string[] = [];
  const waiting = ["a", "b", "c"].map((name) =>
    queue.wait("m", slots.take, { deadline: later() }).then(() => served.push(name))
  );
  assert.equal(queue.size, 3);
  for (let i = 0; i < 3; i++) {
    slots.give();
    queue.wake();
    await Promise.resolve();
  }
  await Promise.all(waiting);
  assert.deepEqual(served, ["a", "b", "c"]);
  assert.equal(queue.size, 0);
});

Deno.test("queue: a newcomer never overtakes a waiting request of its line; other lines are independent", async () => {
  const queue = new RequestQueue({ maxQueue: 8 });
  const slots = pool(0);
  const order: string[] = [];
  const first = queue.wait("m", slots.take, { deadline: later() }).then(() => order.push("first"));
  slots.give(); // a slot frees, but before the queue is woken a newcomer arrives
  const second = queue.wait("m", slots.take, { deadline: later() }).then(() =>
    order.push("second")
  );
  const other = pool(1);
  assert.equal(await queue.wait("other", other.take, { deadline: later() }), 1, "own line");
  slots.give();
  queue.wake();
  await Promise.all([first, second]);
  assert.deepEqual(order, ["first", "second"]);
});

Deno.test("queue: a full queue refuses at once with 503 overloaded and Retry-After", async () => {
  const queue = new RequestQueue({ maxQueue: 2 });
  const slots = pool(0);
  const controller = new AbortController();
  const waiting = [1, 2].map(() =>
    queue.wait("m", slots.take, { deadline: later(), signal: controller.signal })
  );
  await assert.rejects(
    queue.wait("m", slots.take, { deadline: later(), label: "devnet/echo in the verified tier" }),
    (error) =>
      overloaded(
        error,
        /^Cannot queue the request for devnet\/echo in the verified tier: 2 requests are waiting already.*--max-queue 2/,
      ),
  );
  controller.abort(new Error("done"));
  await Promise.allSettled(waiting);
  assert.equal(queue.size, 0);
  const none = new RequestQueue({ maxQueue: 0 });
  await assert.rejects(
    none.wait("m", slots.take, { deadline: later() }),
    (e) => overloaded(e, /0 requests are waiting already/),
  );
});

Deno.test("queue: a wait past its deadline is 503 overloaded and leaves the queue", async () => {
  const queue = new RequestQueue({ maxQueue: 4 });
  const slots = pool(0);
  await assert.rejects(
    queue.wait("m", slots.take, { deadline: performance.now() + 30 }),
    (error) => overloaded(error, /in time: every provider stayed at capacity.*queue-timeout-secs/),
  );
  assert.equal(queue.size, 0);
});

Deno.test("queue: a client that goes away leaves at once, and the next in line moves up", async () => {
  const queue = new RequestQueue({ maxQueue: 4 });
  const slots = pool(0);
  const gone = new AbortController();
  const reason = new Error("the client went away");
  const leaving = queue.wait("m", slots.take, { deadline: later(), signal: gone.signal });
  const staying = queue.wait("m", slots.take, { deadline: later() });
  assert.equal(queue.size, 2);
  gone.abort(reason);
  await assert.rejects(leaving, (error) => error === reason);
  assert.equal(queue.size, 1);
  slots.give();
  queue.wake();
  assert.equal(await staying, 1);
  await assert.rejects(
    queue.wait("m", slots.take, { deadline: later(), signal: gone.signal }),
    (error) => error === reason,
    "an aborted signal never joins",
  );
});

Deno.test("queue: a take that throws rejects its request (nothing left to try) and the line moves on", async () => {
  const queue = new RequestQueue({ maxQueue: 4 });
  const slots = pool(0);
  let exhausted = false;
  const failing = queue.wait("m", () => {
    if (exhausted) throw new Error("every provider failed");
    return slots.take();
  }, { deadline: later() });
  const next = queue.wait("m", slots.take, { deadline: later() });
  exhausted = true;
  slots.give();
  queue.wake();
  await assert.rejects(failing, /every provider failed/);
  assert.equal(await next, 1);
  await assert.rejects(
    queue.wait("m", () => {
      throw new Error("at once");
    }, { deadline: later() }),
    /at once/,
  );
});

Deno.test("queue: it wakes by itself when something frees by itself (nextWake), and joins at the front when asked", async () => {
  let freeAt = performance.now() + 40;
  const queue = new RequestQueue({ maxQueue: 4, nextWake: () => freeAt });
  const take = () => (performance.now() >= freeAt ? "slot" : undefined);
  const back = queue.wait("m", take, { deadline: later() });
  const front = queue.wait("m", take, { deadline: later(), front: true });
  const order: string[] = [];
  await Promise.all([back.then(() => order.push("back")), front.then(() => order.push("front"))]);
  assert.deepEqual(order, ["front", "back"]);
  freeAt = Infinity;
});
