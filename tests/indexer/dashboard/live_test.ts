/**
 * The page's live connection (`indexer/dashboard/src/live.ts`) on a scripted change stream:
 * a burst of change events asks for one read, and changes that come while a read is under way
 * ask for one more read after it — never a second read beside it, which would drop the first
 * (the page draws only its newest read): where changes come faster than a read takes, the page
 * would never draw.
 */

import assert from "node:assert/strict";
import type { Browser, DomEventSource } from "../../../indexer/dashboard/src/dom.ts";
import { GATHER_MS, Live } from "../../../indexer/dashboard/src/live.ts";
import { waitFor } from "../../_wait.ts";

/** A change stream the test writes to. */
class ScriptedStream implements DomEventSource {
  readyState = 1;
  readonly #listeners = new Map<string, ((event: { data?: string }) => void)[]>();

  addEventListener(type: string, listener: (event: { data?: string }) => void): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
  }

  close(): void {
    this.readyState = 2;
  }

  send(type: string): void {
    for (const listener of this.#listeners.get(type) ?? []) listener({ data: "{}" });
  }
}

/**
 * Past the gather timer of the events sent before: timers fire in the order of their
 * deadlines, so one set now for longer than `GATHER_MS` fires after it (an order, not a budget).
 */
function pastGathering(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, GATHER_MS + 1));
}

Deno.test("changes during a read are read once after it, never beside it", async () => {
  const stream = new ScriptedStream();
  const b = { events: () => stream } as unknown as Browser;
  const reads: (() => void)[] = [];
  const live = new Live(
    b,
    () => new Promise<void>((resolve) => reads.push(resolve)),
    () => {},
  );
  live.connect();
  stream.send("ready");
  assert.equal(live.open, true);

  stream.send("snapshot");
  stream.send("settlements");
  await waitFor("the burst's read", () => reads.length === 1 || undefined);

  // Two bursts while that read is under way: no read beside it.
  stream.send("snapshot");
  await pastGathering();
  stream.send("provider_joined");
  await pastGathering();
  assert.equal(reads.length, 1, "a read started beside the one under way");

  // It ends: one read for both bursts.
  reads[0]();
  await waitFor("the read after it", () => reads.length === 2 || undefined);
  await pastGathering();
  assert.equal(reads.length, 2);

  // No change during that one: nothing more once it ends.
  reads[1]();
  await pastGathering();
  assert.equal(reads.length, 2, "a read without a change");
  stream.send("epoch_closed");
  await waitFor("the next burst's read", () => reads.length === 3 || undefined);
  reads[2]();
});
