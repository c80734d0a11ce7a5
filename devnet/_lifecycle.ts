/**
 * The running devnet's lifecycle: {@linkcode Teardown}, the steps that stop what was started
 * (run once, in reverse), and {@linkcode Loops}, the background work a live network does, each
 * loop single-flight.
 *
 * @module
 */

/** The steps that undo a start, run once, last added first. */
export class Teardown {
  readonly #steps: (() => Promise<void> | void)[] = [];
  readonly #log: (line: string) => void;
  #done: Promise<void> | undefined;

  /** Creates an empty teardown; a failing step is logged and the others still run. */
  constructor(log: (line: string) => void) {
    this.#log = log;
  }

  /** Adds a step, run before every step added earlier. */
  add(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }

  /** Adds a step, run after every other. */
  addLast(step: () => Promise<void> | void): void {
    this.#steps.unshift(step);
  }

  /** Runs every step once; later calls wait for the first. */
  run(): Promise<void> {
    return this.#done ??= (async () => {
      for (const step of [...this.#steps].reverse()) {
        try {
          await step();
        } catch (error) {
          this.#log(`devnet: while stopping: ${(error as Error).message}`);
        }
      }
    })();
  }
}

/** Background loops: each runs its work every interval, never twice at once. */
export class Loops {
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #running = new Set<Promise<void>>();
  readonly #log: (line: string) => void;
  #stopped = false;

  /** Creates the loops; a failing round is logged (unless stopped) and the loop goes on. */
  constructor(log: (line: string) => void) {
    this.#log = log;
  }

  /** Runs `work` every `ms`, skipping a round while the previous one still runs. */
  every(ms: number, name: string, work: () => Promise<unknown>): void {
    let running = false;
    this.#timers.push(setInterval(() => {
      if (running || this.#stopped) return;
      running = true;
      const round = (async () => {
        try {
          await work();
        } catch (error) {
          if (!this.#stopped) this.#log(`devnet: ${name} failed: ${(error as Error).message}`);
        } finally {
          running = false;
        }
      })();
      this.#running.add(round);
      round.finally(() => this.#running.delete(round));
    }, ms));
  }

  /**
   * Stops every loop and waits for the rounds under way (they finish unreported): after it,
   * nothing of the background work touches the chain or the servers any more.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.all(this.#running);
  }
}
