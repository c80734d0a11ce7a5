/**
 * The indexer's change stream, `GET /events` (server-sent events): what changed, as it
 * changes — a new snapshot, a provider joining or leaving the live-verified set, a provider's
 * entry failing verification, an epoch closing, the settlement history moving, the health
 * turning, a TEE check's outcome. The dashboard reads it instead of polling.
 *
 * - Every event has an increasing `id`; the last {@linkcode IndexerEventsOptions.capacity}
 *   are kept, so a client that reconnects with `Last-Event-ID` (browsers do it themselves)
 *   gets every event it missed, in order; one that missed more than that gets `reset` (read
 *   everything again).
 * - A stream starts with `retry: 3000` and a `ready` event (no id) naming the last id, then the
 *   events; a comment line every `heartbeatSecs` keeps proxies from closing it.
 * - At most `maxStreams` streams at once (more: 503); {@linkcode IndexerEvents.close} ends them
 *   all (a graceful shutdown waits for open answers).
 *
 * @example
 * ```ts
 * import { IndexerEvents } from "./events.ts";
 *
 * const events = new IndexerEvents();
 * events.publish("epoch_closed", { epoch: "7", next_epoch: "8" });
 * const stream = events.stream(null);
 * console.assert(stream !== null && events.lastId === 1);
 * events.close();
 * ```
 *
 * @module
 */

/** The kinds of change. */
export const EVENT_TYPES = [
  "snapshot",
  "provider_joined",
  "provider_left",
  "provider_rejected",
  "epoch_closed",
  "settlements",
  "health",
  "tee_evidence",
] as const;

/** A kind of change. */
export type IndexerEventType = (typeof EVENT_TYPES)[number];

/** One event. */
export interface IndexerEvent {
  /** Its id, increasing from 1. */
  id: number;
  /** What changed. */
  type: IndexerEventType;
  /** The JSON data (`type` and `at` included). */
  data: Record<string, unknown>;
}

/** Options of {@linkcode IndexerEvents}. */
export interface IndexerEventsOptions {
  /**
   * Events kept for clients that reconnect.
   *
   * @default {1_000}
   */
  capacity?: number;
  /**
   * Streams open at once; more are refused (503).
   *
   * @default {200}
   */
  maxStreams?: number;
  /**
   * Seconds between keep-alive comments on an idle stream.
   *
   * @default {15}
   */
  heartbeatSecs?: number;
  /**
   * The clock of the events' `at`.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
}

const encoder = new TextEncoder();

/** One event in the `text/event-stream` format. */
export function formatEvent(event: IndexerEvent): Uint8Array {
  return encoder.encode(
    `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`,
  );
}

/** The change stream: published events, kept for reconnects, and the open streams. */
export class IndexerEvents {
  readonly #kept: IndexerEvent[] = [];
  readonly #capacity: number;
  readonly #maxStreams: number;
  readonly #heartbeatMs: number;
  readonly #clock: () => Date;
  /** The open streams, each with what ends its heartbeat. */
  readonly #streams = new Map<ReadableStreamDefaultController<Uint8Array>, () => void>();
  #lastId = 0;
  #closed = false;

  /** Creates the stream; nothing is published until {@linkcode IndexerEvents.publish}. */
  constructor(options: IndexerEventsOptions = {}) {
    this.#capacity = options.capacity ?? 1_000;
    this.#maxStreams = options.maxStreams ?? 200;
    this.#heartbeatMs = (options.heartbeatSecs ?? 15) * 1000;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** The id of the last event published (0 before any). */
  get lastId(): number {
    return this.#lastId;
  }

  /** Streams open now. */
  get streams(): number {
    return this.#streams.size;
  }

  /** Publishes an event to every open stream and keeps it for reconnects. */
  publish(type: IndexerEventType, data: Record<string, unknown>): IndexerEvent {
    const event: IndexerEvent = {
      id: ++this.#lastId,
      type,
      data: { type, at: this.#clock().toISOString(), ...data },
    };
    this.#kept.push(event);
    if (this.#kept.length > this.#capacity) this.#kept.shift();
    const bytes = formatEvent(event);
    for (const [controller, stop] of this.#streams) {
      try {
        controller.enqueue(bytes);
      } catch {
        stop();
      }
    }
    return event;
  }

  /**
   * The events after `lastId`, or `null` when some of them are no longer kept (the client
   * must read everything again). `lastId` above the last published id (another process's, or
   * one from before a restart) is also `null`.
   */
  since(lastId: number): IndexerEvent[] | null {
    if (lastId > this.#lastId) return null;
    if (lastId === this.#lastId) return [];
    const first = this.#kept[0];
    if (!first || first.id > lastId + 1) return null;
    return this.#kept.filter((event) => event.id > lastId);
  }

  /**
   * A new stream's body: `retry`, `ready`, the events after `lastId` (or `reset`), then every
   * new event. `null` when {@linkcode IndexerEventsOptions.maxStreams} streams are open or the
   * events are closed.
   */
  stream(lastId: number | null): ReadableStream<Uint8Array> | null {
    if (this.#closed || this.#streams.size >= this.#maxStreams) return null;
    let self: ReadableStreamDefaultController<Uint8Array> | undefined;
    let heartbeat: ReturnType<typeof setInterval> | undefined;
    const streams = this.#streams;
    const stop = () => {
      clearInterval(heartbeat);
      if (self) streams.delete(self);
    };
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        self = controller;
        const missed = lastId === null ? [] : this.since(lastId);
        controller.enqueue(encoder.encode(
          `retry: 3000\nevent: ready\ndata: ${
            JSON.stringify({ type: "ready", last_id: this.#lastId })
          }\n\n`,
        ));
        if (missed === null) {
          controller.enqueue(encoder.encode(
            `id: ${this.#lastId}\nevent: reset\ndata: ${
              JSON.stringify({
                type: "reset",
                reason: `events after ${lastId} are no longer kept: read everything again`,
              })
            }\n\n`,
          ));
        } else for (const event of missed) controller.enqueue(formatEvent(event));
        streams.set(controller, stop);
        heartbeat = setInterval(() => {
          try {
            controller.enqueue(encoder.encode(": keep-alive\n\n"));
          } catch {
            stop();
          }
        }, this.#heartbeatMs);
      },
      cancel: stop,
    });
  }

  /** Ends every open stream and refuses new ones. */
  close(): void {
    this.#closed = true;
    for (const [controller, stop] of [...this.#streams]) {
      stop();
      try {
        controller.close();
      } catch {
        // already closed
      }
    }
  }
}
