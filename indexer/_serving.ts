/**
 * What the data endpoints serve now, and how long anyone may keep it: the refusal rule (no
 * snapshot, or one past its freshness bound → 503, with the failed refresh's code when
 * refreshes fail; a failed refresh alone does not stop a fresh snapshot being served), the history's position against the
 * served snapshot, the bodies serialized once per snapshot, history figures and query, and
 * the **cache-safe answers**:
 *
 * - `ETag`: the SHA-256 of the body (strong; so it changes with the snapshot, the history's
 *   figures and the query, and only with them), and `If-None-Match` → 304 (while `max-age` is
 *   above 0: in the snapshot's last second, the whole body, so a proxy's copy is not renewed);
 * - `Cache-Control: public, max-age=N` with N the whole seconds left until the snapshot
 *   reaches its freshness bound (`taken_at + stale_after_secs`), less one second for the
 *   answer's time in transit, never negative: a shared cache that honours it can never serve
 *   a snapshot older than the bound. 503s (and every other answer) stay `no-store`.
 *
 * @module
 */

import { type HistorySync, syncFor } from "./_history_data.ts";
import { jsonResponse, notModifiedResponse } from "./_response.ts";
import { IndexerRequestError } from "./errors.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";
import { firstEpochNeeded, type ViewOptions } from "./views.ts";

/** Why the data endpoints cannot answer now, or `null` when they can. */
export function refusal(state: IndexerState, now: Date): IndexerRequestError | null {
  const retryAfterSecs = state.nextRefreshAt
    ? Math.max(1, (state.nextRefreshAt.getTime() - now.getTime()) / 1000)
    : state.refreshing
    ? 1
    : state.refreshSecs;
  if (state.snapshot === null) {
    if (state.failing && state.lastError) {
      return new IndexerRequestError("unavailable", state.lastError.message, {
        code: state.lastError.code,
        retryAfterSecs,
      });
    }
    return new IndexerRequestError(
      "no_snapshot",
      "No snapshot yet: the first refresh has not finished",
      { retryAfterSecs },
    );
  }
  const ageMs = now.getTime() - state.snapshot.takenAt.getTime();
  if (ageMs > state.staleAfterSecs * 1000 && state.failing && state.lastError) {
    // Refreshes fail and the last snapshot is past its bound: the failure is the reason.
    return new IndexerRequestError(
      "unavailable",
      `${state.lastError.message} (the last snapshot, block ${state.snapshot.chain.block.number}, is ${
        Math.floor(ageMs / 1000)
      } s old, past the freshness bound of ${state.staleAfterSecs} s)`,
      { code: state.lastError.code, retryAfterSecs },
    );
  }
  if (ageMs > state.staleAfterSecs * 1000) {
    return new IndexerRequestError(
      "stale",
      `The last snapshot (block ${state.snapshot.chain.block.number}, taken at ${state.snapshot.takenAt.toISOString()}) is ${
        Math.floor(ageMs / 1000)
      } s old, older than the freshness bound of ${state.staleAfterSecs} s: the refresh loop is stuck`,
      { retryAfterSecs },
    );
  }
  return null;
}

/** The history's position against `snapshot` (or against nothing, for `/health` without one). */
export function historySync(
  state: IndexerState,
  snapshot: Snapshot | null,
  views: ViewOptions,
): HistorySync {
  const history = state.history;
  if (!snapshot) {
    return {
      synced: false,
      scannedTo: history.confirmed?.number ?? null,
      headBlock: history.headBlock,
      confirmations: history.confirmations,
      figures: null,
    };
  }
  return syncFor(history, snapshot.chain.block, {
    confirmations: history.confirmations,
    scanFromBlock: history.scanFromBlock,
    fromEpoch: firstEpochNeeded(snapshot.chain.emission.currentEpoch, views),
  });
}

/** A serialized body and its strong ETag. */
export interface Body {
  /** The JSON bytes. */
  readonly bytes: Uint8Array<ArrayBuffer>;
  /** The quoted base64url SHA-256 of the bytes. */
  readonly etag: Promise<string>;
  /** The same, once computed (the hot path answers without waiting). */
  tag?: string;
}

const encoder = new TextEncoder();

/** The strong ETag of `bytes`: its quoted base64url SHA-256. */
export async function etagOf(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const base64 = btoa(String.fromCharCode(...digest));
  return `"${base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}"`;
}

/** `value` as JSON bytes with their ETag. */
export function bodyOf(value: unknown): Body {
  const bytes = encoder.encode(JSON.stringify(value));
  const body: Body = { bytes, etag: etagOf(bytes) };
  body.etag.then((tag) => body.tag = tag);
  return body;
}

/** A bounded cache of serialized bodies per snapshot and history figures. */
export class BodyCache {
  readonly #bySnapshot = new WeakMap<Snapshot, WeakMap<object, Map<string, Body>>>();
  static readonly #NONE = {};
  static readonly #LIMIT = 256;

  /** The body of `key` for this snapshot and history position, rendered once. */
  get(snapshot: Snapshot, sync: HistorySync, key: string, render: () => unknown): Body {
    let byFigures = this.#bySnapshot.get(snapshot);
    if (!byFigures) this.#bySnapshot.set(snapshot, byFigures = new WeakMap());
    const figures = sync.figures ?? BodyCache.#NONE;
    let bodies = byFigures.get(figures);
    if (!bodies) byFigures.set(figures, bodies = new Map());
    const full = `${key}|${sync.synced}|${sync.scannedTo}|${sync.headBlock}`;
    let body = bodies.get(full);
    if (!body) {
      body = bodyOf(render());
      if (bodies.size >= BodyCache.#LIMIT) bodies.delete(bodies.keys().next().value!);
      bodies.set(full, body);
    }
    return body;
  }
}

/**
 * Seconds a cache may keep an answer of `snapshot`: the whole seconds left until it is older
 * than `staleAfterSecs`, less one (transit), at least 0.
 */
export function maxAgeSecs(snapshot: Snapshot, staleAfterSecs: number, now: Date): number {
  const leftMs = snapshot.takenAt.getTime() + staleAfterSecs * 1000 - now.getTime();
  return Math.max(0, Math.floor(leftMs / 1000) - 1);
}

/** Whether an `If-None-Match` value names `etag` (weak comparison, RFC 9110 §13.1.2; `*`). */
export function matchesEtag(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  if (ifNoneMatch.trim() === "*") return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return ifNoneMatch.split(",").some((tag) => opaque(tag) === etag);
}

/**
 * The cache-safe answer of a data endpoint: 200 with `body`, or 304 when the request's
 * `If-None-Match` names its ETag; both with `ETag` and `Cache-Control: public, max-age=N`.
 */
export function cacheableAnswer(
  request: Request,
  body: Body,
  maxAge: number,
): Response | Promise<Response> {
  if (body.tag === undefined) {
    return body.etag.then((etag) => answerWith(request, body, etag, maxAge));
  }
  return answerWith(request, body, body.tag, maxAge);
}

function answerWith(request: Request, body: Body, etag: string, maxAge: number): Response {
  const headers = { etag, "cache-control": `public, max-age=${maxAge}` };
  // With nothing left to keep (max-age 0), the whole body, never a 304: a caching proxy that
  // revalidates its expired copy would otherwise keep it again for the copy's own max-age
  // (nginx re-applies the stored answer's headers when a 304 brings none it can use).
  if (maxAge > 0 && matchesEtag(request.headers.get("if-none-match"), etag)) {
    return notModifiedResponse(headers);
  }
  return jsonResponse(body.bytes, 200, headers);
}

/** Throws the 503 when nothing fresh is served. */
export function assertServing(state: IndexerState, now: Date): Snapshot {
  const refused = refusal(state, now);
  if (refused) throw refused;
  return state.snapshot!;
}
