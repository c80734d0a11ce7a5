/**
 * The refresher's lines about serving (private to `indexer/`): one per change — a failed
 * refresh while the last snapshot is still served (`refresh failed`), nothing fresh left
 * (`not serving`, also when the bound passes between two failed refreshes), and serving or
 * refreshing again.
 *
 * @module
 */

import type { LogSink } from "../io/log.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";

/** The lines, and whether the last one said nothing fresh is served. */
export class RefreshLog {
  readonly #log: LogSink;
  readonly #clock: () => Date;
  readonly #state: () => IndexerState;
  #notServing = false;
  /** Logs `not serving` when the last snapshot passes its bound while refreshes fail. */
  #outageTimer: ReturnType<typeof setTimeout> | undefined;

  /** Lines to `log`, about the state `state()` returns. */
  constructor(log: LogSink, clock: () => Date, state: () => IndexerState) {
    this.#log = log;
    this.#clock = clock;
    this.#state = state;
  }

  /** After a failed refresh (the state already says so); `running`: the loop runs. */
  failure(code: string, message: string, before: IndexerState, running: boolean): void {
    const state = this.#state();
    const snapshot = state.snapshot;
    const until = snapshot
      ? new Date(snapshot.takenAt.getTime() + state.staleAfterSecs * 1000)
      : null;
    const left = until === null ? 0 : until.getTime() - this.#clock().getTime();
    const changed = !before.failing || before.lastError?.message !== message;
    if (left > 0 && changed) {
      this.#log(
        `indexer: refresh failed (still serving the snapshot of block ${
          snapshot!.chain.block.number
        } until ${until!.toISOString()}): ${message}`,
        { level: "warn", fields: { code } },
      );
    } else if (left <= 0 && (changed || !this.#notServing)) {
      if (changed) this.#notServing = false; // a new reason is worth its own line
      this.#notServingNow();
    }
    // When the bound passes before a refresh succeeds, say so then.
    clearTimeout(this.#outageTimer);
    if (left > 0 && running) {
      this.#outageTimer = setTimeout(() => {
        const now = this.#state();
        if (now.failing && now.snapshot === snapshot) this.#notServingNow();
      }, left + 1);
    }
  }

  #notServingNow(): void {
    const error = this.#state().lastError;
    if (!error || this.#notServing) return;
    this.#notServing = true;
    this.#log(`indexer: not serving: ${error.message}`, {
      level: "warn",
      fields: { code: error.code },
    });
  }

  /** After a successful refresh that follows a failure (or is the first). */
  serving(snapshot: Snapshot, before: IndexerState): void {
    const bonded = snapshot.chain.providers.filter((p) => p.bonded).length;
    const reachable = snapshot.routers.filter((r) => r.reachable).length;
    const again = this.#notServing;
    this.#notServing = false;
    this.#log(
      `indexer: ${
        before.failing && !again ? "refreshing again" : `serving${again ? " again" : ""}`
      }: snapshot at block ${snapshot.chain.block.number}, ${snapshot.live.length} live-verified of ${bonded} bonded providers, ` +
        `${reachable}/${snapshot.routers.length} routers reachable`,
      { level: "info" },
    );
  }

  /** Cancels a pending `not serving` line (a refresh succeeded, or the loop stops). */
  stop(): void {
    clearTimeout(this.#outageTimer);
  }
}
