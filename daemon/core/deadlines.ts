/**
 * A request's abort controller and its deadlines: the controller is aborted when the client goes
 * away and when a deadline passes; `withTimeout` bounds one wait (the first chunk, a model
 * list), `idleWatchdog` the waits between the chunks of a stream.
 *
 * @module
 */

import { DaemonError } from "./daemon_error.ts";

/**
 * The reason a request's controller is aborted with when its client went away (closed the
 * connection, or cancelled the reply's body): a cancel, not a failure.
 */
export class ClientGone extends Error {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ClientGone" as const;

  /** Creates the reason. */
  constructor() {
    super("The client went away");
  }
}

/** Whether `controller` was aborted because its client went away. */
export function clientGone(controller: AbortController): boolean {
  return controller.signal.aborted && controller.signal.reason instanceof ClientGone;
}

/**
 * An abort controller for one request: aborted (with {@linkcode ClientGone}) when the client
 * goes away (`request.signal`), and by the surface on timeouts and cancellation. Call
 * `release()` when the request is done.
 */
export function requestController(
  request: Request,
): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(new ClientGone());
  if (request.signal.aborted) onAbort();
  else request.signal.addEventListener("abort", onAbort, { once: true });
  return {
    controller,
    release: () => request.signal.removeEventListener("abort", onAbort),
  };
}

/**
 * An abort controller aborted (with the same reason) as soon as any of `sources` aborts;
 * `dispose()` stops listening. Unlike `AbortSignal.any`, whose combined signal the sources hold
 * only weakly (so it can be collected, and a later abort lost, while a fetch still streams), the
 * sources here hold the controller for as long as they listen.
 */
export function linkedController(
  ...sources: AbortSignal[]
): { controller: AbortController; dispose: () => void } {
  const controller = new AbortController();
  const listeners: [AbortSignal, () => void][] = [];
  const dispose = () => {
    for (const [source, listener] of listeners) source.removeEventListener("abort", listener);
    listeners.length = 0;
  };
  for (const source of sources) {
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const listener = () => {
      controller.abort(source.reason);
      dispose();
    };
    source.addEventListener("abort", listener, { once: true });
    listeners.push([source, listener]);
  }
  if (controller.signal.aborted) dispose();
  return { controller, dispose };
}

/**
 * Runs `promise` against a timer: when `ms` passes first, aborts `controller` and throws a
 * `timeout` error saying what was awaited.
 */
export async function withTimeout<T>(
  promise: Promise<T>,
  options: { ms: number; controller: AbortController; what: string },
): Promise<T> {
  const { ms, controller, what } = options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new DaemonError(
        "timeout",
        `Cannot finish the request: ${what} for ${formatSeconds(ms)}`,
      );
      controller.abort(error);
      reject(error);
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An idle watchdog for a stream: `next(promise)` waits for one step, and fails with a
 * `timeout` (after aborting `controller`) when a step takes longer than `ms`. One timer per
 * stream, re-armed lazily, instead of one per step: a step costs a promise, not a timer.
 */
export function idleWatchdog(
  options: { ms: number; controller: AbortController; what: string },
): { next<T>(step: Promise<T>): Promise<T>; stop(): void } {
  const { ms, controller, what } = options;
  let deadline = 0;
  let waiting: ((error: unknown) => void) | undefined;
  let expired: DaemonError | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    timer = undefined;
    const left = deadline - performance.now();
    if (waiting === undefined || left > 0) {
      timer = setTimeout(check, waiting === undefined ? ms : left);
      return;
    }
    expired = new DaemonError(
      "timeout",
      `Cannot finish the request: ${what} for ${formatSeconds(ms)}`,
    );
    controller.abort(expired);
    waiting(expired);
  };
  return {
    next<T>(step: Promise<T>): Promise<T> {
      if (expired) return Promise.reject(expired);
      deadline = performance.now() + ms;
      timer ??= setTimeout(check, ms);
      return new Promise<T>((resolve, reject) => {
        waiting = reject;
        step.then(resolve, reject).finally(() => {
          // Only this step's waiter: the next step may already be waiting.
          if (waiting === reject) waiting = undefined;
        });
      });
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
      waiting = undefined;
    },
  };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
