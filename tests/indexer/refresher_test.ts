// The indexer end to end: a real anvil chain seeded by `devnet/seed.ts`, three real router
// servers on loopback, the real refresher and handler. Every expected figure comes from the
// seed's plan and its expected truth (`expectedNetwork`), computed here without the code under
// test.
import assert from "node:assert/strict";
import type { Address } from "viem";
import { escrowAbi } from "../../chain/abi.ts";
import { startAnvil } from "../../devnet/anvil.ts";
import { createRouterHandler } from "../../devnet/router.ts";
import type { PlannedProvider } from "../../devnet/seed.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { Refresher, type RefresherOptions } from "../../indexer/refresher.ts";
import { settleOnChain, startChainFixture } from "../_chain_fixture.ts";
import { countingFetch, type RpcRequest } from "../_counting_fetch.ts";
import { closedPort, okJson, serve } from "../_http.ts";
import { capacityOf, routerEntry, tokensPerSecOf } from "./_network.ts";
import { freshDataDir } from "./_stores.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A router server on a fixed loopback port that can go down and come back. */
class TestRouter {
  /** Rewrites the entries before they are served. */
  transform: (entries: Json[]) => Json[] = (entries) => entries;
  /** Replaces the whole answer. */
  answer: ((req: Request) => Promise<Response>) | null = null;
  #server: Deno.HttpServer<Deno.NetAddr>;
  readonly port: number;
  readonly url: string;

  constructor(
    readonly carries: (p: PlannedProvider) => boolean,
    readonly all: () => PlannedProvider[],
  ) {
    this.#server = this.#listen(0);
    this.port = this.#server.addr.port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  #listen(port: number): Deno.HttpServer<Deno.NetAddr> {
    const normal = createRouterHandler({
      source: () => this.transform(this.all().filter(this.carries).map(routerEntry)),
    });
    return Deno.serve(
      { hostname: "127.0.0.1", port, onListen: () => {} },
      (req) => (this.answer ?? normal)(req),
    );
  }

  async down(): Promise<void> {
    await this.#server.shutdown();
  }

  up(): void {
    this.#server = this.#listen(this.port);
  }

  reset(): void {
    this.transform = (entries) => entries;
    this.answer = null;
  }
}

/**
 * How long the refresher waits for a router. Only the silent router is meant to reach it; the
 * others answer a few hundred KiB from loopback, which a busy machine (load 40 on 2 cores) has
 * been seen to take more than 400 ms to do.
 */
const ROUTER_TIMEOUT_MS = 5_000;

/** Waits for the client to give up (a router that never answers). */
function hang(req: Request): Promise<Response> {
  return new Promise((resolve) =>
    req.signal.addEventListener("abort", () => resolve(new Response(null)))
  );
}

const ZERO_REASONS = {
  malformed: 0,
  oversized: 0,
  unknown_provider: 0,
  not_bonded: 0,
  mismatched_fields: 0,
  commitment_mismatch: 0,
  duplicate: 0,
};

function round(value: number, decimals: number): number {
  return Math.round(value * 10 ** decimals) / 10 ** decimals;
}

Deno.test("the indexer serves the seeded truth, verified, and never stale", async (t) => {
  let plan: PlannedProvider[] = [];
  const routers = [
    new TestRouter((p) => p.index % 2 === 0, () => plan),
    new TestRouter((p) => p.index % 2 === 1, () => plan),
    new TestRouter((p) => p.index % 3 === 0, () => plan),
  ];
  await using _routers = {
    [Symbol.asyncDispose]: async () => {
      await Promise.all(routers.map((r) => r.down().catch(() => {})));
    },
  };
  await using chain = await startChainFixture({
    providers: 60,
    routerUrls: routers.map((r) => r.url),
  });
  plan = chain.plan.providers;
  const truth = chain.expected;
  const getLogs: RpcRequest[] = [];
  const counter = countingFetch({
    intercept: (request) => {
      if (request.method === "eth_getLogs") getLogs.push(request);
      return undefined;
    },
  });
  const logs: string[] = [];
  let now = new Date("2031-01-01T00:00:00.000Z");
  const options: RefresherOptions = {
    rpcUrl: chain.anvil.rpcUrl,
    contracts: chain.contracts,
    refreshSecs: 30,
    client: { retryCount: 0, timeoutMs: 5_000, fetch: counter.fetch },
    routerTimeoutMs: ROUTER_TIMEOUT_MS,
    scanFromBlock: chain.deployment.fromBlock,
    confirmations: 0,
    clock: () => now,
    log: (line) => logs.push(line),
    history: { dataDir: await freshDataDir() },
  };
  await using refresher = new Refresher(options);
  const handle = createIndexerHandler({ state: () => refresher.state, clock: () => now });
  const get = async (path: string) => {
    const response = await handle(new Request(`http://127.0.0.1:8088${path}`));
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    return { status: response.status, headers: response.headers, body: await response.json() };
  };

  // ---- The expected truth, from the plan and expectedNetwork alone. ----
  const registered = new Map(truth.state.providers.map((p) => [p.address, p]));
  const planned = new Map(plan.map((p) => [p.address, p]));
  const bonded = truth.state.providers.filter((p) => p.bonded);
  const routerIds = truth.state.routers.map((r) => r.id);
  const currentEpoch = truth.state.emission.currentEpoch;
  const settledEpochs = (address: string) =>
    truth.settlements.filter((b) => b.provider === address).map((b) => b.epoch);
  const reputationOf = (address: string) => {
    // Finished epochs in the window of 8: max(0, current − 8) … current − 1.
    const first = currentEpoch > 8n ? currentEpoch - 8n : 0n;
    const window = Number(currentEpoch - first);
    const hit = new Set(settledEpochs(address).filter((e) => e >= first && e < currentEpoch));
    return window === 0 ? null : round(hit.size / window, 4);
  };

  /** What the indexer must list when `serving(routerIndex, provider)` says who is served. */
  function expectedListing(serving: (router: number, p: PlannedProvider) => boolean) {
    const live = bonded
      .map((state) => ({ state, plan: planned.get(state.address)! }))
      .filter(({ plan }) => routers.some((_, i) => serving(i, plan)))
      .sort((a, b) => (a.state.address < b.state.address ? -1 : 1));
    const providers = live.map(({ state, plan: p }) => {
      const buckets = truth.settlements.filter((b) => b.provider === state.address);
      const epochs = [];
      for (let e = currentEpoch > 7n ? currentEpoch - 7n : 0n; e <= currentEpoch; e++) {
        const b = buckets.find((b) => b.epoch === e);
        epochs.push({
          epoch: String(e),
          amount: String(b?.amount ?? 0n),
          tokens: String(b?.tokens ?? 0n),
          settlements: b?.settlements ?? 0,
        });
      }
      return {
        provider: state.address,
        tier: state.tier,
        stake: String(state.stake),
        serving_key: p.servingAddress,
        ad_commitment: state.adCommitment,
        endpoint: p.ad.endpoint,
        models: p.ad.models.map((m) => ({
          model: m.id,
          prices: m.prices,
          context_length: m.context_length,
        })),
        capacity: capacityOf(p.index),
        metrics: { tokens_per_sec: tokensPerSecOf(p.index) },
        routers: routerIds.filter((_, i) => serving(i, p)),
        settled: {
          epochs,
          total: {
            amount: String(buckets.reduce((s, b) => s + b.amount, 0n)),
            tokens: String(buckets.reduce((s, b) => s + b.tokens, 0n)),
            settlements: buckets.reduce((s, b) => s + b.settlements, 0),
          },
        },
        reputation: reputationOf(state.address),
      };
    });
    const modelIds = [...new Set(live.flatMap(({ plan }) => plan.ad.models.map((m) => m.id)))]
      .sort();
    const models = modelIds.map((id) => {
      const offers = live.filter(({ plan }) => plan.ad.models.some((m) => m.id === id)).map((
        { state, plan },
      ) => {
        const m = plan.ad.models.find((m) => m.id === id)!;
        return { state, plan, m, input: BigInt(m.prices.input), output: BigInt(m.prices.output) };
      });
      const cheapest = [...offers].sort((a, b) => {
        const blended = (a.input + a.output) - (b.input + b.output);
        if (blended !== 0n) return blended < 0n ? -1 : 1;
        if (a.output !== b.output) return a.output < b.output ? -1 : 1;
        return a.state.address < b.state.address ? -1 : 1;
      })[0];
      const reputations = offers.map((o) => reputationOf(o.state.address)).filter((r) =>
        r !== null
      ) as number[];
      return {
        model: id,
        cheapest_price: {
          input: cheapest.m.prices.input,
          output: cheapest.m.prices.output,
          provider: cheapest.state.address,
          tier: cheapest.state.tier,
        },
        providers: offers.length,
        tiers: {
          verified: offers.filter((o) => o.state.tier === "verified").length,
          tee: offers.filter((o) => o.state.tier === "tee").length,
        },
        reputation: reputations.length === 0
          ? null
          : round(reputations.reduce((s, r) => s + r, 0) / reputations.length, 4),
        tokens_per_sec: round(
          offers.reduce((s, o) => s + tokensPerSecOf(o.plan.index), 0) / offers.length,
          2,
        ),
        context_length: Math.max(...offers.map((o) => o.m.context_length)),
        kind: "chat", // the seeded ads say no kind
        capabilities: [],
      };
    });
    const capacity = live.reduce(
      (sum, { plan }) => ({
        max_concurrency: sum.max_concurrency + capacityOf(plan.index).max_concurrency,
        available_concurrency: sum.available_concurrency +
          capacityOf(plan.index).available_concurrency,
      }),
      { max_concurrency: 0, available_concurrency: 0 },
    );
    return { providers, models, capacity };
  }

  /** The rejections of one router that serves `entries` of planned providers unchanged. */
  function baseRejections(router: number) {
    const served = plan.filter(routers[router].carries);
    return {
      ...ZERO_REASONS,
      unknown_provider: served.filter((p) => !registered.has(p.address)).length,
      not_bonded:
        served.filter((p) => registered.has(p.address) && !registered.get(p.address)!.bonded)
          .length,
    };
  }
  const normal = (router: number, p: PlannedProvider) => routers[router].carries(p);

  let head: bigint;
  let firstStats: Json;

  await t.step("before the first refresh: 503 no_snapshot", async () => {
    const stats = await get("/stats");
    assert.equal(stats.status, 503);
    assert.equal(stats.body.error.code, "no_snapshot");
    assert.equal((await get("/health")).body.status, "starting");
  });

  await t.step("every figure of every endpoint equals the seeded truth", async () => {
    head = await chain.client.getBlockNumber();
    const state = await refresher.refresh();
    assert.equal(state.failing, false, state.lastError?.message);
    // The settlement history runs beside the snapshots: its first pass (the whole scan).
    const pass = await refresher.syncHistory();
    assert.equal(pass.failing, false, pass.lastError?.message);
    assert.equal(pass.role, "writer");
    const expected = expectedListing(normal);
    // Sanity of the fixture: a realistic mix, all of it served by some router.
    assert.ok(bonded.length >= 20 && bonded.length < truth.state.providers.length);
    assert.equal(expected.providers.length, bonded.length);

    const stats = await get("/stats");
    assert.equal(stats.status, 200);
    const s = stats.body;
    firstStats = s;
    assert.deepEqual(s.providers, {
      registered: truth.state.providers.length,
      bonded: bonded.length,
      live_verified: bonded.length,
    });
    assert.equal(s.validators, truth.state.validators.length);
    assert.equal(s.staked_security, String(truth.state.staking.totalStaked));
    assert.equal(s.min_provider_bond, String(truth.state.staking.minProviderBond));
    assert.deepEqual(s.tee_measurements, truth.state.approvedMeasurements);
    const e = truth.state.emission;
    assert.deepEqual(s.emission, {
      total_emitted: String(e.totalEmitted),
      cap: String(e.cap),
      current_epoch: String(e.currentEpoch),
      current_epoch_reward: String(e.currentEpochReward),
      emitted_epochs: String(e.emittedEpochs),
      schedule: {
        rule: "halving",
        genesis_time: String(e.schedule.genesisTime),
        epoch_length: String(e.schedule.epochLength),
        initial_reward: String(e.schedule.initialReward),
        halving_interval: String(e.schedule.halvingInterval),
      },
    });
    assert.deepEqual(s.capacity, expected.capacity);
    assert.equal(s.models, expected.models.length);
    const perRouter = routers.map((_, i) => baseRejections(i));
    assert.deepEqual(
      s.routers.list.map((r: Json) => ({
        id: r.id,
        url: r.url,
        reachable: r.reachable,
        error: r.error,
        entries: r.entries,
        accepted: r.accepted,
        rejected: r.rejected,
      })),
      routers.map((router, i) => {
        const served = plan.filter(router.carries);
        return {
          id: routerIds[i],
          url: router.url,
          reachable: true,
          error: null,
          entries: served.length,
          accepted: served.filter((p) => registered.get(p.address)?.bonded).length,
          rejected: perRouter[i],
        };
      }),
    );
    assert.deepEqual([s.routers.total, s.routers.reachable], [3, 3]);
    const total = {
      ...ZERO_REASONS,
      unknown_provider: perRouter.reduce((sum, r) => sum + r.unknown_provider, 0),
      not_bonded: perRouter.reduce((sum, r) => sum + r.not_bonded, 0),
    };
    assert.ok(total.unknown_provider > 0 && total.not_bonded > 0, "the seed exercises both");
    assert.deepEqual(s.rejected_ads, {
      total: total.unknown_provider + total.not_bonded,
      by_reason: total,
    });
    assert.deepEqual(s.settlements, {
      synced: true,
      scanned_to_block: String(head),
      head_block: String(head),
      confirmations: 0,
      amount: String(truth.settlements.reduce((sum, b) => sum + b.amount, 0n)),
      tokens: String(truth.settlements.reduce((sum, b) => sum + b.tokens, 0n)),
      count: truth.settlements.reduce((sum, b) => sum + b.settlements, 0),
      // The seeded settlements are the trusted settler's: no consumer signed any of them.
      signed_amount: "0",
      signed_count: 0,
      paying_consumers: 0,
    });
    const block = await chain.client.getBlock({ blockNumber: head });
    assert.deepEqual(s.snapshot, {
      block_number: String(head),
      block_hash: block.hash,
      block_timestamp: String(truth.blockTimestamp),
      taken_at: now.toISOString(),
    });

    const synced = { synced: true, scanned_to_block: String(head), head_block: String(head) };
    const history = { ...synced, confirmations: 0 };
    const models = await get("/models");
    assert.equal(models.status, 200);
    assert.deepEqual(models.body, { models: expected.models, next_cursor: null, history });
    assert.ok(models.body.models.some((m: Json) => m.tiers.tee > 0 && m.tiers.verified > 0));

    const providers = await get("/providers");
    assert.equal(providers.status, 200);
    assert.deepEqual(providers.body, { providers: expected.providers, next_cursor: null, history });
    assert.ok(
      providers.body.providers.some((p: Json) => p.reputation > 0 && p.reputation < 1),
      "reputations differ between providers",
    );

    const health = await get("/health");
    assert.equal(health.status, 200);
    assert.equal(health.body.status, "ok");
    assert.equal(health.body.last_snapshot_at, now.toISOString());
  });

  await t.step("tampered, malformed and oversized ads and a silent router", async () => {
    const victims = plan.filter((p) =>
      registered.get(p.address)?.bonded && p.index % 2 === 1 && p.index % 3 !== 0
    );
    const [tampered, malformed, mismatched, oversized] = victims;
    assert.ok(oversized, "enough bonded providers served by router 1 only");
    const other = bonded.find((p) => p.trustRoot !== mismatched.servingAddress)!;
    routers[1].transform = (entries) =>
      entries.map((entry) => {
        const ad = entry.ad;
        if (ad.provider === tampered.address) ad.models[0].prices.input = "1";
        if (ad.provider === malformed.address) ad.models[0].context_length = 0;
        if (ad.provider === mismatched.address) ad.serving_key = other.trustRoot;
        if (ad.provider === oversized.address) ad.padding = "x".repeat(70_000);
        return entry;
      });
    // Router 2 never answers: its providers stay listed only through router 0.
    routers[2].answer = hang;
    now = new Date(now.getTime() + 30_000);
    const state = await refresher.refresh();
    assert.equal(state.failing, false, state.lastError?.message);
    const broken = new Set([tampered, malformed, mismatched, oversized].map((p) => p.address));
    const expected = expectedListing((i, p) => i !== 2 && normal(i, p) && !broken.has(p.address));
    const { body: s } = await get("/stats");
    assert.equal(s.providers.live_verified, bonded.length - 4);
    assert.deepEqual([s.routers.total, s.routers.reachable], [3, 2]);
    assert.equal(s.routers.list[2].reachable, false);
    assert.equal(s.routers.list[2].error.code, "timeout");
    assert.match(s.routers.list[2].error.message, new RegExp(`within ${ROUTER_TIMEOUT_MS} ms`));
    assert.deepEqual(s.routers.list[1].rejected, {
      ...baseRejections(1),
      commitment_mismatch: 1,
      malformed: 1,
      mismatched_fields: 1,
      oversized: 1,
    });
    assert.deepEqual(s.rejected_ads.by_reason, {
      ...ZERO_REASONS,
      unknown_provider: baseRejections(0).unknown_provider + baseRejections(1).unknown_provider,
      not_bonded: baseRejections(0).not_bonded + baseRejections(1).not_bonded,
      commitment_mismatch: 1,
      malformed: 1,
      mismatched_fields: 1,
      oversized: 1,
    });
    const examples = s.routers.list[1].rejected_examples.filter((x: Json) =>
      broken.has(x.provider)
    );
    assert.deepEqual(
      examples.map((x: Json) => [x.provider, x.reason]).sort(),
      [
        [tampered.address, "commitment_mismatch"],
        [malformed.address, "malformed"],
        [mismatched.address, "mismatched_fields"],
        [oversized.address, "oversized"],
      ].sort(),
    );
    assert.deepEqual(s.capacity, expected.capacity);
    assert.deepEqual((await get("/providers")).body.providers, expected.providers);
    assert.deepEqual((await get("/models")).body.models, expected.models);
  });

  await t.step("a router whose whole body is too large is not used", async () => {
    routers[1].reset();
    routers[2].reset();
    const big = JSON.stringify({ ads: ["x".repeat(9 * 1024 * 1024)] });
    routers[0].answer = () => Promise.resolve(new Response(big));
    now = new Date(now.getTime() + 30_000);
    await refresher.refresh();
    const { body: s } = await get("/stats");
    assert.equal(s.routers.list[0].error.code, "too_large");
    assert.match(s.routers.list[0].error.message, /limit is 8388608 bytes/);
    const expected = expectedListing((i, p) => i !== 0 && normal(i, p));
    assert.ok(expected.providers.length < bonded.length);
    assert.equal(s.providers.live_verified, expected.providers.length);
    assert.deepEqual((await get("/providers")).body.providers, expected.providers);
    routers[0].reset();
  });

  await t.step("settlements are indexed incrementally: only new blocks are scanned", async () => {
    now = new Date(now.getTime() + 30_000);
    await refresher.refresh();
    const scanned = refresher.history.lastBlock!.number;
    const provider = bonded[0].address as Address;
    const settledAt = await settleOnChain(chain, provider, 777n, 55n);
    getLogs.length = 0;
    now = new Date(now.getTime() + 30_000);
    await refresher.refresh();
    assert.ok(getLogs.length >= 1);
    for (const request of getLogs) {
      const [filter] = request.params as [{ fromBlock: string }];
      assert.ok(BigInt(filter.fromBlock) > scanned, `scanned ${filter.fromBlock} again`);
    }
    const { body: p } = await get("/providers");
    const entry = p.providers.find((x: Json) => x.provider === provider);
    const before = truth.settlements.filter((b) => b.provider === provider);
    const epoch = truth.state.emission.currentEpoch;
    assert.deepEqual(entry.settled.total, {
      amount: String(before.reduce((s, b) => s + b.amount, 0n) + 777n),
      tokens: String(before.reduce((s, b) => s + b.tokens, 0n) + 55n),
      settlements: before.reduce((s, b) => s + b.settlements, 0) + 1,
    });
    const current = entry.settled.epochs.find((x: Json) => x.epoch === String(epoch));
    const old = before.find((b) => b.epoch === epoch);
    assert.equal(current.amount, String((old?.amount ?? 0n) + 777n));
    assert.equal(
      (await get("/stats")).body.settlements.scanned_to_block,
      String(settledAt),
    );
  });

  await t.step(
    "a reorg deeper than the depth: rescan from the start, said in /health",
    async () => {
      const provider = bonded[1].address as Address;
      const settler = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, {
        chainId: chain.anvil.chainId,
      });
      const settle = (amount: bigint) =>
        sendAndConfirm(settler, {
          address: chain.contracts.escrow,
          abi: escrowAbi,
          functionName: "settle",
          args: [chain.accounts.consumer.address, provider, amount, 1n],
        });
      const id = await chain.rpc("evm_snapshot");
      await settle(1_000n);
      now = new Date(now.getTime() + 30_000);
      await refresher.refresh();
      const totalOf = async () =>
        (await get("/providers")).body.providers.find((x: Json) => x.provider === provider).settled
          .total.amount;
      const withFirst = BigInt(await totalOf());
      // The settlement is reorganized away, another one replaces it at the same height.
      await chain.rpc("evm_revert", [id]);
      await settle(2_000n);
      await chain.rpc("anvil_mine", ["0x2"]);
      now = new Date(now.getTime() + 30_000);
      const state = await refresher.refresh();
      assert.equal(state.failing, false, state.lastError?.message);
      assert.equal(BigInt(await totalOf()), withFirst - 1_000n + 2_000n);
      const { body: health } = await get("/health");
      assert.equal(health.settlements.rescans, 1);
      assert.match(health.settlements.last_rescan.reason, /reorg/);
      assert.equal(health.settlements.last_rescan.at, now.toISOString());
      assert.ok(logs.some((line) => line.includes("rescanning settlements")));
    },
  );

  await t.step(
    "all routers down → served while fresh, then 503; back up → fresh data",
    async () => {
      await Promise.all(routers.map((r) => r.down()));
      now = new Date(now.getTime() + 30_000);
      const failed = await refresher.refresh();
      assert.equal(failed.failing, true);
      // The last snapshot is 30 s old, within its 60 s bound: still served, /health degraded.
      assert.ok(failed.snapshot !== null);
      assert.equal((await get("/stats")).status, 200);
      const degraded = await get("/health");
      assert.equal(degraded.status, 200);
      assert.equal(degraded.body.status, "degraded");
      assert.equal(degraded.body.problems[0].code, "routers_unreachable");
      assert.ok(logs.some((line) => line.startsWith("indexer: refresh failed (still serving")));
      now = new Date(now.getTime() + 31_000);
      const state = await refresher.refresh();
      assert.equal(state.failing, true);
      for (const path of ["/stats", "/models", "/providers"]) {
        const answer = await get(path);
        assert.equal(answer.status, 503);
        assert.equal(answer.body.error.code, "routers_unreachable");
        assert.match(answer.body.error.message, /all 3 registered routers failed/);
        for (const router of routers) assert.ok(answer.body.error.message.includes(router.url));
        assert.ok(answer.headers.get("retry-after"));
      }
      const health = await get("/health");
      assert.equal(health.status, 503);
      assert.equal(health.body.last_error.code, "routers_unreachable");
      routers.forEach((r) => r.up());
      now = new Date(now.getTime() + 30_000);
      assert.equal((await refresher.refresh()).failing, false);
      const stats = await get("/stats");
      assert.equal(stats.status, 200);
      assert.equal(stats.body.providers.live_verified, bonded.length);
      assert.equal(stats.body.snapshot.taken_at, now.toISOString());
      assert.ok(logs.some((line) => line.startsWith("indexer: serving again")));
    },
  );

  await t.step(
    "anvil stopped → served while fresh, then 503; restarted with its state → fresh data",
    async () => {
      const dump = await chain.rpc("anvil_dumpState");
      const headBefore = await chain.client.getBlockNumber();
      const before = (await get("/stats")).body;
      await chain.anvil.stop();
      now = new Date(now.getTime() + 30_000);
      assert.equal((await refresher.refresh()).failing, true);
      assert.equal((await get("/stats")).status, 200, "fresh for 30 s more");
      now = new Date(now.getTime() + 31_000);
      const state = await refresher.refresh();
      assert.equal(state.failing, true);
      const answer = await get("/stats");
      assert.equal(answer.status, 503);
      assert.equal(answer.body.error.code, "chain_unreachable");
      assert.ok(
        answer.body.error.message.includes(`the chain at ${new URL(chain.anvil.rpcUrl).origin}`),
      );
      assert.equal((await get("/providers")).status, 503);
      const health = await get("/health");
      assert.deepEqual([health.status, health.body.status], [503, "unavailable"]);
      assert.equal(health.body.last_snapshot_at, before.snapshot.taken_at);

      await using anvil = await startAnvil({ port: chain.anvil.port });
      await fetch(anvil.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_loadState", params: [dump] }),
      }).then((r) => r.json());
      now = new Date(now.getTime() + 30_000);
      const back = await refresher.refresh();
      assert.equal(back.failing, false, back.lastError?.message);
      const after = (await get("/stats")).body;
      assert.equal(after.snapshot.block_number, String(headBefore));
      assert.equal(after.snapshot.taken_at, now.toISOString());
      // Same chain state, same figures; only the time differs.
      assert.deepEqual({ ...after, snapshot: null }, { ...before, snapshot: null });
      assert.equal((await get("/health")).body.status, "ok");
    },
  );

  await t.step("CORS on 200, 404, 503 and OPTIONS over a real socket", async () => {
    await using server = serve(
      createIndexerHandler({ state: () => refresher.state, clock: () => now }),
    );
    const check = async (path: string, init: RequestInit, status: number) => {
      const response = await fetch(`${server.url}${path}`, init);
      await response.body?.cancel();
      assert.equal(response.status, status, path);
      assert.equal(response.headers.get("access-control-allow-origin"), "*", `${path} ${status}`);
    };
    await check("/stats", {}, 200);
    await check("/nowhere", {}, 404);
    await check("/models", { method: "OPTIONS" }, 204);
    now = new Date(now.getTime() + 61_000); // older than 2 × 30 s: stale
    await check("/providers", {}, 503);
    await check("/health", {}, 503);
  });

  assert.equal(firstStats.providers.live_verified, bonded.length);
});

Deno.test("the default confirmation depth leaves the newest blocks for later", async () => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({ providers: 12, routerUrls: [router.url] });
  await using refresher = new Refresher({
    rpcUrl: chain.anvil.rpcUrl,
    contracts: chain.contracts,
    client: { retryCount: 0 },
    scanFromBlock: chain.deployment.fromBlock,
    log: () => {},
    history: { dataDir: await freshDataDir() },
  });
  const head = await chain.client.getBlockNumber();
  await refresher.refresh();
  const first = await refresher.syncHistory();
  assert.equal(first.confirmed?.number, head - 12n);
  assert.equal(first.confirmations, 12);
  // The newest 12 blocks are scanned into the unconfirmed window, not counted.
  assert.equal(first.lastBlock?.number, head);
  await chain.rpc("anvil_mine", ["0xc"]);
  await refresher.refresh();
  const second = await refresher.syncHistory();
  assert.equal(second.confirmed?.number, head);
  const buckets = [...second.figures!.recent.values()].flat().sort((a, b) =>
    a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : Number(a.epoch - b.epoch)
  );
  assert.equal(second.figures!.fromEpoch, 0n, "the seed's epochs are all recent");
  assert.equal(
    second.figures!.total.amount,
    chain.expected.settlements.reduce((s, b) => s + b.amount, 0n),
  );
  assert.deepEqual(buckets.map((b) => ({ ...b })), chain.expected.settlements);
});

Deno.test("a chain down at start-up is chain_unreachable (URL path never shown); no contracts is chain_error", async () => {
  const port = closedPort();
  const contracts = {
    registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
    emission: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
    escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
  } as const;
  const options = { contracts, client: { retryCount: 0 }, log: () => {} };
  await using refresher = new Refresher({ ...options, rpcUrl: `http://127.0.0.1:${port}` });
  // An RPC URL with an API key in its path: the key is never shown.
  await using keyed = new Refresher({
    ...options,
    rpcUrl: `http://127.0.0.1:${port}/v2/secret-api-key`,
  });
  for (const r of [refresher, keyed]) {
    const state = await r.refresh();
    assert.equal(state.failing, true);
    assert.equal(state.lastError?.code, "chain_unreachable");
    assert.ok(
      state.lastError!.message.startsWith(`the chain at http://127.0.0.1:${port} is unreachable`),
      state.lastError!.message,
    );
    assert.equal(state.lastError!.message.includes("secret-api-key"), false);
    // The settlement history fails on its own, visibly, with the same care for the URL.
    const history = await r.syncHistory();
    assert.equal(history.failing, true);
    assert.equal(history.lastError?.code, "chain_unreachable", history.lastError?.message);
    assert.equal(history.lastError!.message.includes("secret-api-key"), false);
  }

  // Up now, but nothing is deployed at those addresses: reachable, and the reads fail.
  await using _anvil = await startAnvil({ port });
  const wrong = await refresher.refresh();
  assert.equal(wrong.failing, true);
  assert.equal(wrong.lastError?.code, "chain_error", wrong.lastError?.message);
  assert.match(wrong.lastError!.message, /^Cannot use the chain at http:\/\/127\.0\.0\.1:\d+: /);
  assert.match(wrong.lastError!.message, /Registry\.providerCount\(\)/);
});

Deno.test("refresh is single flight; the loop refreshes on its own and stops cleanly", async () => {
  let hanging = false;
  await using router = serve((req) => hanging ? hang(req) : Response.json({ ads: [] }));
  await using chain = await startChainFixture({ providers: 5, routerUrls: [router.url] });
  let pins = 0;
  const counter = countingFetch({
    intercept: (request) => {
      if (request.method === "eth_getBlockByNumber" && request.params[0] === "latest") pins++;
      return undefined;
    },
  });
  await using refresher = new Refresher({
    rpcUrl: chain.anvil.rpcUrl,
    contracts: chain.contracts,
    client: { retryCount: 0, fetch: counter.fetch },
    confirmations: 0,
    refreshSecs: 0.05,
    log: () => {},
    history: { dataDir: await freshDataDir() },
  });
  const [a, b] = [refresher.refresh(), refresher.refresh()];
  assert.equal(a, b, "the same promise");
  await a;
  assert.equal(pins, 1, "one network-state read for two calls");

  // The loop: wait (without a timing assertion) until it has taken two more snapshots.
  const taken = new Set<unknown>([refresher.state.snapshot]);
  refresher.start();
  refresher.start(); // idempotent
  while (taken.size < 3) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    taken.add(refresher.state.snapshot);
  }
  assert.ok(refresher.state.nextRefreshAt !== null || refresher.state.refreshing);
  await refresher.stop();
  assert.equal(refresher.state.nextRefreshAt, null);
  const after = refresher.state.snapshot;
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(refresher.state.snapshot, after, "no refresh after stop");

  // A refresh cancelled by stop() (its router never answers) changes nothing.
  hanging = true;
  const before = refresher.state;
  const cancelled = refresher.refresh();
  await refresher.stop();
  const state = await cancelled;
  assert.equal(state.failing, false);
  assert.equal(state.snapshot, before.snapshot);
  assert.equal(state.lastAttemptAt, before.lastAttemptAt);
  assert.equal(state.refreshing, false);
});

Deno.test("with no confirmations, settlement figures from another fork than the snapshot are never served", async () => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({ providers: 5, routerUrls: [router.url] });
  // A node that answers by-number block lookups (the settlement scan's) from another fork
  // than `latest` (the snapshot's pin): the two would describe different chains.
  const otherFork = `0x${"d".repeat(64)}`;
  let forked = false;
  const forkingFetch: typeof fetch = async (input, init) => {
    const request = JSON.parse(String(init?.body ?? "null"));
    const response = await fetch(input, init);
    if (!forked) return response;
    const requests = Array.isArray(request) ? request : [request];
    const byNumber = new Set(
      requests.filter((r) =>
        r.method === "eth_getBlockByNumber" && /^0x[0-9a-f]+$/.test(r.params?.[0])
      ).map((r) => r.id),
    );
    if (byNumber.size === 0) return response;
    const body = await response.json();
    for (const answer of Array.isArray(body) ? body : [body]) {
      if (byNumber.has(answer.id) && answer.result) answer.result.hash = otherFork;
    }
    return Response.json(body);
  };
  await using refresher = new Refresher({
    rpcUrl: chain.anvil.rpcUrl,
    contracts: chain.contracts,
    client: { retryCount: 0, fetch: forkingFetch },
    scanFromBlock: chain.deployment.fromBlock,
    confirmations: 0,
    log: () => {},
    history: { dataDir: await freshDataDir() },
  });
  const handle = createIndexerHandler({ state: () => refresher.state });
  const settlements = async () =>
    (await okJson(handle(new Request("http://127.0.0.1:8088/stats")))).settlements;
  await refresher.refresh();
  await refresher.syncHistory();
  assert.ok(refresher.state.snapshot, "an honest node gives a snapshot");
  assert.equal((await settlements()).synced, true);
  forked = true;
  await refresher.refresh();
  // The history now reads the block by number from the other fork: it rescans that fork,
  // whose last block is not the snapshot's.
  await refresher.syncHistory();
  assert.ok(refresher.state.snapshot, "the chain state is still served");
  const mixed = await settlements();
  assert.equal(mixed.synced, false, "mixed forks must not be served");
  assert.deepEqual([mixed.amount, mixed.tokens, mixed.count], [null, null, null]);
  assert.equal(refresher.history.confirmed?.hash, otherFork);
});
