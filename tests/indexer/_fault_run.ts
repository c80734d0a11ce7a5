/**
 * The indexer (its refresher, history and handler, in process) over a real anvil behind the
 * fault-injecting proxy, while the chain moves: settlements keep coming, two reorgs happen, and
 * one endpoint answers like a busy free tier (10 % 429 with `Retry-After`, 10 % 502/503, slow
 * answers, Infura's result limit on `eth_getLogs`), alone or beside a healthy second endpoint.
 * `/stats` is asked all along; the run returns every answer, the share of 200s, the 503s that
 * were not justified by the freshness bound, and the settled totals against an independent
 * count of what stayed on chain.
 *
 * Shared by `serving_faults_test.ts` (which asserts what must always hold) and
 * `bench/indexer_faults_bench.ts` (which prints the share over a longer run).
 *
 * @module
 */

import { createIndexerHandler } from "../../indexer/handler.ts";
import { Refresher } from "../../indexer/refresher.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { type FaultPlan, type FaultStats, startFaultProxy } from "../_fault_rpc.ts";
import { PROVIDER_REFUSALS } from "../chain/_provider_errors.ts";
import { type SentSettlement, settleMany } from "./_settlements.ts";
import { freshDataDir } from "./_stores.ts";

/** Options of {@linkcode runFaultMix}. */
export interface FaultRunOptions {
  /** How long the faults last, ms. */
  durationMs: number;
  /** Whether a second, healthy endpoint is configured beside the faulty one. */
  healthySecond: boolean;
  /** How often `/stats` is asked, ms. @default {100} */
  pollMs?: number;
  /** Seed of the faults. @default {7} */
  seed?: number;
  /** Whether the faults are injected at all (`false`: the same run, as a baseline). @default {true} */
  faults?: boolean;
}

/** One `/stats` answer. */
export interface StatsAnswer {
  /** ms since the faults started. */
  at: number;
  /** Its status. */
  status: number;
  /** The error code of a refusal. */
  code?: string;
  /** The error message of a refusal. */
  message?: string;
}

/** Settled totals: amount, tokens and settlements. */
export interface Totals {
  /** Sum of amounts. */
  amount: bigint;
  /** Sum of tokens. */
  tokens: bigint;
  /** Number of settlements. */
  settlements: number;
}

/** What a run saw. */
export interface FaultRunResult {
  /** Every `/stats` answer from the first 200 on. */
  answers: StatsAnswer[];
  /** Share of 200s among them. */
  share200: number;
  /** 503s while a snapshot within its freshness bound existed (must be none). */
  unjustified: StatsAnswer[];
  /** The indexer's settled totals at the end. */
  indexed: Totals;
  /** The independent count of what stayed on chain. */
  truth: Totals;
  /** What the faulty endpoint's proxy did. */
  faulty: FaultStats;
  /** What the healthy endpoint's proxy did, when there is one. */
  healthy: FaultStats | null;
  /** Refreshes that failed during the faults. */
  failedRefreshes: number;
  /** Reorgs made. */
  reorgs: number;
}

const sum = (list: readonly SentSettlement[]): Totals => ({
  amount: list.reduce((s, x) => s + x.amount, 0n),
  tokens: list.reduce((s, x) => s + x.tokens, 0n),
  settlements: list.length,
});

/** Waits until `ready()` is true, checking every `everyMs`, at most `maxMs`. */
async function until(what: string, ready: () => boolean | Promise<boolean>, maxMs = 120_000) {
  const deadline = performance.now() + maxMs;
  while (!(await ready())) {
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs the fault mix; see the module doc. */
export async function runFaultMix(options: FaultRunOptions): Promise<FaultRunResult> {
  await using router = (() => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => Response.json({ ads: [] }),
    );
    return {
      url: `http://127.0.0.1:${server.addr.port}`,
      [Symbol.asyncDispose]: () => server.shutdown(),
    };
  })();
  await using chain = await startChainFixture({
    providers: 8,
    routerUrls: [router.url],
    settlementsPerEpoch: 2,
  });
  const infura = PROVIDER_REFUSALS.find((r) => r.id === "infura-results")!;
  const plan: FaultPlan = {
    refusal: infura,
    limit: 20,
    rateLimited: 0.1,
    retryAfterSecs: 1,
    badGateway: 0.1,
    slow: 0.1,
    slowMs: 1_500,
  };
  await using faulty = startFaultProxy(chain.anvil.rpcUrl, {}, { seed: options.seed ?? 7 });
  await using healthy = startFaultProxy(chain.anvil.rpcUrl);
  const confirmations = 3;
  const refresher = new Refresher({
    rpcUrl: options.healthySecond ? [faulty.url, healthy.url] : [faulty.url],
    contracts: chain.contracts,
    refreshSecs: 1,
    staleAfterSecs: 4,
    routerTimeoutMs: 1_000,
    confirmations,
    scanFromBlock: chain.deployment.fromBlock,
    historyPollMs: 300,
    client: { timeoutMs: 1_000, retryCount: 2, retryDelayMs: 50 },
    history: { dataDir: await freshDataDir() },
    log: () => {},
  });
  await using _refresher = refresher;
  const handle = createIndexerHandler({
    state: () => refresher.state,
    rpc: () => refresher.rpcStatus(),
    log: () => {},
  });
  const ask = async (path: string) => {
    const response = await handle(new Request(`http://127.0.0.1:8088${path}`));
    const body = await response.json();
    return { status: response.status, body };
  };
  refresher.start();
  await until("the first snapshot", async () => (await ask("/stats")).status === 200);

  // ---- The faults, the moving chain, and /stats asked all along. ----
  if (options.faults !== false) faulty.plan = plan;
  const providers = chain.expected.state.providers.map((p) => p.address);
  const kept: SentSettlement[] = [];
  let seed = 100;
  let reorgs = 0;
  const started = performance.now();
  const answers: StatsAnswer[] = [];
  const unjustified: StatsAnswer[] = [];
  const failedAt = new Set<number>();
  const asking = (async () => {
    while (performance.now() - started < options.durationMs) {
      const state = refresher.state;
      const answer = await ask("/stats");
      const at = Math.round(performance.now() - started);
      const record: StatsAnswer = { at, status: answer.status };
      if (answer.status !== 200) {
        record.code = answer.body.error?.code;
        record.message = answer.body.error?.message;
        const snapshot = state.snapshot;
        const fresh = snapshot !== null &&
          Date.now() - snapshot.takenAt.getTime() < state.staleAfterSecs * 1000 - 250;
        if (fresh) unjustified.push(record);
      }
      answers.push(record);
      if (state.failing && state.lastError) failedAt.add(state.lastError.at.getTime());
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 100));
    }
  })();
  const moving = (async () => {
    const reorgAt = [options.durationMs / 3, (2 * options.durationMs) / 3];
    while (performance.now() - started < options.durationMs) {
      const elapsed = performance.now() - started;
      if (reorgAt.length > 0 && elapsed >= reorgAt[0]) {
        reorgAt.shift();
        // A settlement one block deep, reorganized away; another one replaces it.
        const id = await chain.rpc("evm_snapshot");
        await settleMany(chain, { count: 3, perTx: 3, providers, seed: seed++ });
        await chain.rpc("anvil_mine", ["0x1"]);
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        await chain.rpc("evm_revert", [id]);
        reorgs++;
      }
      kept.push(...await settleMany(chain, { count: 5, perTx: 5, providers, seed: seed++ }));
      await chain.rpc("anvil_mine", ["0x1"]);
      await new Promise((resolve) => setTimeout(resolve, 700));
    }
  })();
  await Promise.all([asking, moving]);
  const faultyStats = structuredClone(faulty.stats);

  // ---- Faults off: everything confirmed, the history caught up; the totals compared. ----
  faulty.plan = {};
  await chain.rpc("anvil_mine", [`0x${(confirmations + 1).toString(16)}`]);
  const head = await chain.client.getBlockNumber();
  await until("the history at the head", () => {
    const history = refresher.state.history;
    const figures = history.figures;
    return figures !== null && figures.at !== null &&
      figures.at.number >= head - BigInt(confirmations);
  });
  const total = refresher.state.history.figures!.total;
  const seeded = chain.expected.settlements;
  const truth = sum(kept);
  truth.amount += seeded.reduce((s, b) => s + b.amount, 0n);
  truth.tokens += seeded.reduce((s, b) => s + b.tokens, 0n);
  truth.settlements += seeded.reduce((s, b) => s + b.settlements, 0);
  const ok = answers.filter((a) => a.status === 200).length;
  return {
    answers,
    share200: answers.length === 0 ? 0 : ok / answers.length,
    unjustified,
    indexed: { amount: total.amount, tokens: total.tokens, settlements: total.settlements },
    truth,
    faulty: faultyStats,
    healthy: options.healthySecond ? structuredClone(healthy.stats) : null,
    failedRefreshes: failedAt.size,
    reorgs,
  };
}
