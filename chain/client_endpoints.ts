/**
 * The RPC endpoints of a chain and what we know of each: its request budget, whether it asked
 * us to wait (HTTP 429 and its `Retry-After`), how fast and how reliable it has been, and the
 * chain head it last reported. One {@linkcode RpcEndpoints} is shared by every chain client of
 * a process (the indexer's snapshot and history clients), so a budget and a `Retry-After` are
 * honoured per endpoint, whichever client sends. `createChainClient` spreads the reads over the
 * endpoints and fails over between them (`_client_pool.ts`).
 *
 * @example
 * ```ts
 * import { RpcEndpoints } from "./client_endpoints.ts";
 *
 * const endpoints = new RpcEndpoints(
 *   ["https://eth.example/v2/KEY", "https://rpc.other.example"],
 *   { maxRps: 10 },
 * );
 * console.assert(endpoints.status()[0].url === "https://eth.example/…");
 * ```
 *
 * @module
 */

import { abbreviate } from "../errors.ts";
import { ChainConfigError } from "./errors.ts";

/** What an endpoint is doing now, for `/health`. */
export type RpcEndpointState =
  /** Answering. */
  | "ok"
  /** It asked us to wait (HTTP 429 or a rate-limit answer) and the wait is not over. */
  | "rate_limited"
  /** Its last request failed (unreachable, a gateway error, a timeout). */
  | "failing"
  /** Its head is behind the other endpoints' by more than the allowed lag. */
  | "lagging"
  /** Not asked anything yet. */
  | "unused"
  /** Never used: it serves another chain than the others (its `lastError` says which). */
  | "refused";

/** One endpoint, as `/health` shows it. */
export interface RpcEndpointStatus {
  /** Its URL reduced to the origin (a path, which may hold an API key, becomes `/…`). */
  url: string;
  /** What it is doing now. */
  state: RpcEndpointState;
  /** JSON-RPC calls sent to it. */
  calls: number;
  /** Calls that failed. */
  failures: number;
  /** Times it asked us to wait. */
  rateLimited: number;
  /** Until when we wait before asking it again, or `null`. */
  waitUntil: Date | null;
  /** Its typical answer time (a moving average), ms, or `null` before its first answer. */
  latencyMs: number | null;
  /** The chain head it last reported, or `null`. */
  head: bigint | null;
  /** Its budget, JSON-RPC calls per second, or `null` for none. */
  maxRps: number | null;
  /** Its last failure, or `null`. */
  lastError: { kind: string; message: string; at: Date } | null;
}

/** Options of {@linkcode RpcEndpoints}. */
export interface RpcEndpointsOptions {
  /**
   * Most JSON-RPC calls to each endpoint in any one second (a batch counts each call; a
   * sliding window, so no second of the provider's counts more). `undefined` for no budget.
   *
   * @default {undefined}
   */
  maxRps?: number;
  /**
   * How many blocks an endpoint's head may be behind the highest head seen before it is
   * `lagging` (asked only when no other endpoint can answer).
   *
   * @default {4}
   */
  maxLagBlocks?: number;
  /**
   * The wait after a 429 without `Retry-After` (doubled on each one in a row, up to 30 s), ms.
   *
   * @default {1_000}
   */
  rateLimitWaitMs?: number;
  /**
   * The clock of the status times.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
}

const MAX_WAIT_MS = 30_000;
/** Weight of the newest sample in the moving averages. */
const ALPHA = 0.3;
/**
 * How many times slower than the fastest endpoint another counts at most when reads are spread
 * (`RpcEndpoint.cost`).
 */
const MAX_LATENCY_RATIO = 4;

/** One endpoint's state. */
export class RpcEndpoint {
  /** Its URL. */
  readonly url: string;
  /** Its URL for people (no path: it may hold an API key). */
  readonly label: string;
  /** Its budget, calls per second, or `undefined`. */
  readonly maxRps: number | undefined;
  /** Calls in flight. */
  inflight = 0;
  /** When the calls of the last second were sent (a sliding window of the budget). */
  #sent: number[] = [];
  #waitUntil = 0;
  /** Until when it is asked only if no other endpoint can be (after failures in a row). */
  #avoidUntil = 0;
  #failuresInRow = 0;
  #rateLimitsInRow = 0;
  #latency: number | null = null;
  #failureRate = 0;
  #head: bigint | null = null;
  #calls = 0;
  #failures = 0;
  #rateLimited = 0;
  #lastError: RpcEndpointStatus["lastError"] = null;
  #lastFailed = false;
  /** Its chain id once checked, or why it is refused. */
  #checked: { chainId: number } | { refused: string; chainId: number } | undefined;
  /** The check running now. */
  checking: Promise<void> | undefined;
  readonly #clock: () => Date;
  readonly #rateLimitWaitMs: number;

  /** Creates the state of `url`. */
  constructor(url: string, label: string, options: RpcEndpointsOptions) {
    this.url = url;
    this.label = label;
    this.maxRps = options.maxRps;
    this.#clock = options.clock ?? (() => new Date());
    this.#rateLimitWaitMs = options.rateLimitWaitMs ?? 1_000;
  }

  /** Milliseconds until it may be asked a call (0: now): its wait, then its budget. */
  availableIn(now: number = performance.now()): number {
    const waiting = Math.max(0, this.#waitUntil - now);
    if (this.maxRps === undefined) return waiting;
    while (this.#sent.length > 0 && this.#sent[0] <= now - 1000) this.#sent.shift();
    const budget = this.#sent.length < this.maxRps ? 0 : this.#sent[0] + 1000 - now;
    return Math.max(waiting, budget);
  }

  /** Counts one call sent now (against the budget). */
  take(now: number = performance.now()): void {
    this.#calls++;
    if (this.maxRps !== undefined) this.#sent.push(now);
  }

  /** Whether it failed lately and should be asked only when no other endpoint can be. */
  avoided(now: number = performance.now()): boolean {
    return this.#avoidUntil > now;
  }

  /** Records an answer that took `ms`. */
  succeeded(ms: number): void {
    this.#latency = this.#latency === null ? ms : this.#latency * (1 - ALPHA) + ms * ALPHA;
    this.#failureRate *= 1 - ALPHA;
    this.#rateLimitsInRow = 0;
    this.#failuresInRow = 0;
    this.#avoidUntil = 0;
    this.#lastFailed = false;
  }

  /** Records a failure; a rate limit makes us wait `retryAfterMs` (or a doubling default). */
  failed(kind: string, message: string, retryAfterMs?: number): void {
    this.#failures++;
    this.#failureRate = this.#failureRate * (1 - ALPHA) + ALPHA;
    this.#lastError = { kind, message: abbreviate(message, 300), at: this.#clock() };
    this.#lastFailed = true;
    this.#failuresInRow++;
    // Asked again by a real call after a doubling pause (0.5 s … 30 s) while others answer.
    this.#avoidUntil = performance.now() +
      Math.min(MAX_WAIT_MS, 500 * 2 ** Math.min(16, this.#failuresInRow - 1));
    if (kind === "rate") {
      this.#rateLimited++;
      const wait = retryAfterMs ??
        Math.min(MAX_WAIT_MS, this.#rateLimitWaitMs * 2 ** this.#rateLimitsInRow);
      this.#rateLimitsInRow++;
      this.#waitUntil = Math.max(this.#waitUntil, performance.now() + Math.min(wait, 600_000));
    }
  }

  /** Whether its chain id was checked and is the expected one. */
  get checked(): boolean {
    return this.#checked !== undefined && "chainId" in this.#checked;
  }

  /** Why it is never used (it serves another chain), or `undefined`. */
  get refused(): string | undefined {
    return this.#checked && "refused" in this.#checked ? this.#checked.refused : undefined;
  }

  /** The chain id it answered, once checked (also when refused), or `undefined`. */
  get chainId(): number | undefined {
    return this.#checked?.chainId;
  }

  /** Records the outcome of its chain id check. */
  checkedAs(outcome: { chainId: number } | { refused: string; chainId: number }): void {
    this.#checked = outcome;
    if ("refused" in outcome) {
      this.#lastError = { kind: "wrong_chain", message: outcome.refused, at: this.#clock() };
    }
  }

  /** Records the chain head it reported. */
  sawHead(head: bigint): void {
    if (this.#head === null || head > this.#head) this.#head = head;
  }

  /** The chain head it last reported, or `null`. */
  get head(): bigint | null {
    return this.#head;
  }

  /**
   * The cost of asking it now, lower is better: its typical answer time, times the calls it
   * already has in flight plus one (so concurrent reads spread), raised by its recent failures.
   * `bestLatency` (the lowest typical time among the endpoints) stands for an endpoint not
   * measured yet, and bounds how slow one counts: at most 4 times the best, so that under concurrent reads every healthy endpoint is still asked now and then
   * and one slow answer cannot keep it unasked (its time would never be measured again).
   */
  cost(bestLatency: number): number {
    const best = Math.max(1, bestLatency);
    const latency = Math.min(Math.max(1, this.#latency ?? best), best * MAX_LATENCY_RATIO);
    return latency * (this.inflight + 1) * (1 + 4 * this.#failureRate);
  }

  /** Its typical answer time, or `null`. */
  get latency(): number | null {
    return this.#latency;
  }

  /** Its status, for `/health`. */
  status(bestHead: bigint | null, maxLag: number): RpcEndpointStatus {
    const now = performance.now();
    const waiting = this.#waitUntil > now;
    const lagging = bestHead !== null && this.#head !== null &&
      this.#head + BigInt(maxLag) < bestHead;
    return {
      url: this.label,
      state: this.refused !== undefined
        ? "refused"
        : waiting
        ? "rate_limited"
        : this.#lastFailed
        ? "failing"
        : lagging
        ? "lagging"
        : this.#calls === 0
        ? "unused"
        : "ok",
      calls: this.#calls,
      failures: this.#failures,
      rateLimited: this.#rateLimited,
      waitUntil: waiting
        ? new Date(this.#clock().getTime() + Math.ceil(this.#waitUntil - now))
        : null,
      latencyMs: this.#latency === null ? null : Math.round(this.#latency * 10) / 10,
      head: this.#head,
      maxRps: this.maxRps ?? null,
      lastError: this.#lastError,
    };
  }
}

/** A URL for people: its origin, and `/…` when it has a path (which may hold an API key). */
export function redactRpcUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.pathname === "/" && !parsed.search ? parsed.origin : `${parsed.origin}/…`;
  } catch {
    return abbreviate(url, 40);
  }
}

/** The endpoints of one chain, shared by the clients of a process. */
export class RpcEndpoints {
  /** The endpoints, in the order given. */
  readonly list: readonly RpcEndpoint[];
  /** How far behind the highest head an endpoint may be before it is `lagging`. */
  readonly maxLagBlocks: number;
  /** The chain id every endpoint must serve, once known. */
  chainId: number | undefined;

  /**
   * Creates the state of `urls` (at least one, http: or https:, no duplicates).
   *
   * @throws {ChainConfigError} `invalid_option` naming the bad URL or option.
   */
  constructor(urls: readonly string[], options: RpcEndpointsOptions = {}) {
    if (urls.length === 0) {
      throw new ChainConfigError(
        "invalid_option",
        "Cannot create chain client: no RPC URL given, expected at least one",
      );
    }
    if (
      options.maxRps !== undefined && (!Number.isFinite(options.maxRps) || options.maxRps <= 0)
    ) {
      throw new ChainConfigError(
        "invalid_option",
        `Cannot create chain client: maxRps must be a number > 0, found ${options.maxRps}`,
      );
    }
    const seen = new Set<string>();
    const labels = urls.map(redactRpcUrl);
    this.list = urls.map((url, i) => {
      checkUrl(url);
      if (seen.has(url)) {
        throw new ChainConfigError(
          "invalid_option",
          `Cannot create chain client: RPC URL ${labels[i]} is given twice, expected each once`,
        );
      }
      seen.add(url);
      const label = labels.filter((l) => l === labels[i]).length > 1
        ? `${labels[i]} (#${i + 1})`
        : labels[i];
      return new RpcEndpoint(url, label, options);
    });
    this.maxLagBlocks = options.maxLagBlocks ?? 4;
  }

  /** The highest head any endpoint reported, or `null`. */
  get bestHead(): bigint | null {
    let best: bigint | null = null;
    for (const endpoint of this.list) {
      if (endpoint.head !== null && (best === null || endpoint.head > best)) best = endpoint.head;
    }
    return best;
  }

  /** Whether `endpoint`'s head is too far behind the best. */
  lagging(endpoint: RpcEndpoint): boolean {
    const best = this.bestHead;
    return best !== null && endpoint.head !== null &&
      endpoint.head + BigInt(this.maxLagBlocks) < best;
  }

  /** `text` with every endpoint's URL reduced to its label (a path may hold an API key). */
  redact(text: string): string {
    let out = text;
    for (const endpoint of this.list) {
      const bare = endpoint.url.replace(/\/$/, "");
      out = out.replaceAll(endpoint.url, endpoint.label).replaceAll(bare, endpoint.label);
    }
    return out;
  }

  /** Every endpoint's status, in the order given. */
  status(): RpcEndpointStatus[] {
    const best = this.bestHead;
    return this.list.map((endpoint) => endpoint.status(best, this.maxLagBlocks));
  }
}

function checkUrl(rpcUrl: string): void {
  let url: URL;
  try {
    url = new URL(rpcUrl);
  } catch {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: RPC URL ${JSON.stringify(abbreviate(rpcUrl, 80))} is not a URL`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot create chain client: RPC URL must be http: or https:, found ${url.protocol}`,
    );
  }
}
