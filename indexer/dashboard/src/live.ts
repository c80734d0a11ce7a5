/**
 * The page's live connection to the indexer's change stream (`GET events`, server-sent
 * events): every change event (a new snapshot, a provider joining, leaving or failing
 * verification, an epoch closing, the history moving, the health turning, a TEE check) asks
 * the page to read again — once for a burst of them. While the stream is open the page does not
 * poll; when the indexer has no stream (an older indexer: 404) or refuses one (503), the page
 * falls back to reading every `refresh_secs`. The browser reconnects a dropped stream by itself,
 * with `Last-Event-ID`, and gets what it missed.
 *
 * @module
 */

import type { Browser, DomEventSource } from "./dom.ts";

/** The events that change what the page shows. */
export const CHANGE_EVENTS: readonly string[] = [
  "snapshot",
  "provider_joined",
  "provider_left",
  "provider_rejected",
  "epoch_closed",
  "settlements",
  "health",
  "tee_evidence",
  "reset",
];

/** How long a burst of events is gathered into one read, ms. */
export const GATHER_MS = 150;

/** The connection. */
export class Live {
  readonly #b: Browser;
  readonly #onChange: () => Promise<void>;
  readonly #onMode: (mode: "events" | "polling") => void;
  #source: DomEventSource | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #open = false;
  /** A read asked for by the stream is under way. */
  #reading = false;
  /** Changes came during that read: read again once it ends. */
  #again = false;

  /**
   * Connects to `events`; `onChange` (the page's read) is called after each burst of change
   * events, never while the read it started is under way (then once more after it); `onMode`
   * whenever the page switches between the stream and polling.
   */
  constructor(
    b: Browser,
    onChange: () => Promise<void>,
    onMode: (mode: "events" | "polling") => void,
  ) {
    this.#b = b;
    this.#onChange = onChange;
    this.#onMode = onMode;
  }

  /** Whether the stream is open now (then the page does not poll). */
  get open(): boolean {
    return this.#open;
  }

  /** Opens the stream (once). */
  connect(): void {
    if (this.#source) return;
    const source = this.#b.events("events");
    if (!source) return this.#onMode("polling");
    this.#source = source;
    source.addEventListener("ready", () => {
      this.#open = true;
      this.#onMode("events");
    });
    for (const type of CHANGE_EVENTS) {
      source.addEventListener(type, () => {
        clearTimeout(this.#timer);
        this.#timer = setTimeout(() => this.#read(), GATHER_MS);
      });
    }
    source.addEventListener("error", () => {
      this.#open = false;
      this.#onMode("polling");
      // A refused stream (404, 503) is not reconnected by the browser: poll from now on.
      if (source.readyState === 2) {
        source.close();
        this.#source = null;
      }
    });
  }

  /**
   * The page reads again, after the read in flight if there is one: a new read drops the one
   * under way (the page draws only its newest), so where changes come faster than a read
   * takes (a slow link, a busy machine) starting one per burst would never draw anything.
   */
  #read(): void {
    if (this.#reading) return void (this.#again = true);
    this.#reading = true;
    this.#onChange().finally(() => {
      this.#reading = false;
      if (!this.#again) return;
      this.#again = false;
      this.#read();
    });
  }
}
