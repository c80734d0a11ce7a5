/**
 * A chain client over several endpoints (`chain/client.ts`, `chain/_client_pool.ts`), each
 * endpoint a fault-injecting proxy in front of a real anvil: reads spread over the endpoints
 * and fail over; a 429's `Retry-After` is honoured per endpoint; the per-endpoint budget holds;
 * an endpoint of another chain is never used; a snapshot read over two endpoints that disagree
 * is always one chain's state at one block, never a mix.
 */

import assert from "node:assert/strict";
import { createChainClient, RpcEndpoints, rpcPoolOf } from "../../chain/client.ts";
import { ChainConfigError } from "../../chain/errors.ts";
import { readNetworkState } from "../../chain/network_state.ts";
import { startAnvil } from "../../devnet/anvil.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { startFaultProxy } from "../_fault_rpc.ts";
import type { ChainClient } from "../../chain/client.ts";

/** One `eth_blockNumber` call (viem's getBlockNumber shares concurrent calls; this does not). */
const head = async (client: ChainClient) =>
  BigInt(await client.request({ method: "eth_blockNumber" }));

Deno.test("several endpoints: spread, fail over, Retry-After, budget", async (t) => {
  await using anvil = await startAnvil();

  await t.step("concurrent reads spread over the endpoints", async () => {
    await using a = startFaultProxy(anvil.rpcUrl);
    await using b = startFaultProxy(anvil.rpcUrl);
    const client = await createChainClient([a.url, b.url], { batchSize: 0 });
    for (let round = 0; round < 5; round++) {
      await Promise.all(Array.from({ length: 8 }, () => head(client)));
    }
    assert.ok(a.stats.byMethod.eth_blockNumber > 0, "the first endpoint answered reads");
    assert.ok(b.stats.byMethod.eth_blockNumber > 0, "the second endpoint answered reads");
    assert.equal(a.stats.byMethod.eth_blockNumber + b.stats.byMethod.eth_blockNumber, 40);
  });

  await t.step("one slow answer does not keep an endpoint unasked", async () => {
    await using a = startFaultProxy(anvil.rpcUrl);
    await using b = startFaultProxy(anvil.rpcUrl);
    const endpoints = new RpcEndpoints([a.url, b.url]);
    // Its first answer (the chain-id check) is slow, as a cold server or a loaded machine makes it.
    a.plan = { slow: 1, slowMs: 400 };
    const client = await createChainClient(endpoints, { batchSize: 0 });
    assert.equal(a.stats.slow, 1);
    a.plan = {};
    const before = a.stats.byMethod.eth_blockNumber ?? 0;
    for (let round = 0; round < 5; round++) {
      await Promise.all(Array.from({ length: 8 }, () => head(client)));
    }
    // Counted at most 4× the fastest, it is asked again once the other has reads in flight.
    assert.ok(
      (a.stats.byMethod.eth_blockNumber ?? 0) > before,
      "the slow endpoint was asked again",
    );
    const [slow] = endpoints.status();
    assert.ok(
      slow.latencyMs !== null && slow.latencyMs < 400,
      "its answer time was measured again",
    );
  });

  await t.step("an endpoint that is down is failed over, and shown failing", async () => {
    await using a = startFaultProxy(anvil.rpcUrl);
    await using b = startFaultProxy(anvil.rpcUrl);
    const endpoints = new RpcEndpoints([a.url, b.url]);
    const client = await createChainClient(endpoints, { retryCount: 0 });
    a.plan.down = true;
    for (let round = 0; round < 3; round++) {
      const heads = await Promise.all(Array.from({ length: 6 }, () => head(client)));
      assert.ok(heads.every((h) => typeof h === "bigint"));
    }
    const [first, second] = endpoints.status();
    assert.ok(a.stats.badGateway >= 1, "the down endpoint was tried");
    assert.equal(first.state, "failing");
    assert.match(first.lastError!.message, /Service Unavailable|HTTP request failed/);
    assert.equal(second.state, "ok");
  });

  await t.step("a 429's Retry-After is honoured by that endpoint only", async () => {
    await using a = startFaultProxy(anvil.rpcUrl);
    await using b = startFaultProxy(anvil.rpcUrl);
    const endpoints = new RpcEndpoints([a.url, b.url]);
    const client = await createChainClient(endpoints, { retryCount: 0, batchSize: 0 });
    // Make `a` the cheaper endpoint, then have it ask for a 2-second pause.
    a.plan.retryAfterSecs = 2;
    a.plan.rateLimitNext = 1;
    b.plan.slow = 1;
    b.plan.slowMs = 50;
    // Read until `a` is asked again: meanwhile `b` takes every read.
    const answeredAfter = () => {
      const limited = a.stats.arrivals.find((x) => x.status === 429);
      return limited ? a.stats.arrivals.filter((x) => x.at > limited.at) : [];
    };
    for (let i = 0; i < 400 && answeredAfter().length === 0; i++) await head(client);
    const limited = a.stats.arrivals.find((x) => x.status === 429)!;
    const [again] = answeredAfter();
    assert.ok(again, "the endpoint was asked again once its wait was over");
    assert.ok(again.at - limited.at >= 1_990, `asked again after ${again.at - limited.at} ms`);
    const meanwhile = b.stats.arrivals.filter((x) => x.at > limited.at && x.at < again.at);
    assert.ok(meanwhile.length > 0, "the other endpoint took the reads meanwhile");
    assert.equal(endpoints.status()[0].rateLimited, 1);
  });

  await t.step("one endpoint that asks to wait: the read waits, then succeeds", async () => {
    await using a = startFaultProxy(anvil.rpcUrl);
    const client = await createChainClient(a.url, { retryCount: 0 });
    a.plan.retryAfterSecs = 1;
    a.plan.rateLimitNext = 1;
    assert.equal(typeof await head(client), "bigint");
    const [limited, next] = a.stats.arrivals.slice(-2);
    assert.equal(limited.status, 429);
    assert.ok(next.at - limited.at >= 990, `asked again after ${next.at - limited.at} ms`);
  });

  await t.step("the budget per endpoint (maxRps) holds", async () => {
    await using a = startFaultProxy(anvil.rpcUrl);
    const client = await createChainClient(a.url, { maxRps: 5, retryCount: 0, batchSize: 0 });
    const before = a.stats.calls;
    const started = performance.now();
    await Promise.all(Array.from({ length: 15 }, () => head(client)));
    const elapsed = performance.now() - started;
    const calls = a.stats.calls - before;
    assert.equal(calls, 15);
    // No second holds more than 5 calls: 15 calls take at least two more seconds.
    assert.ok(elapsed >= 1_990, `15 calls in ${Math.round(elapsed)} ms`);
    const times = a.stats.arrivals.slice(-15).map((x) => x.at);
    // Sent at most 5 per sliding second: the 6th call is at least a second after the 1st.
    for (let i = 5; i < times.length; i++) {
      assert.ok(times[i] - times[i - 5] >= 950, `call ${i} ${times[i] - times[i - 5]} ms`);
    }
  });
});

Deno.test("an endpoint of another chain is never used", async (t) => {
  await using anvil = await startAnvil();
  await using other = await startAnvil({ chainId: 1337 });

  await t.step("reachable at start: the client is refused, naming it", async () => {
    await assert.rejects(
      createChainClient([anvil.rpcUrl, other.rpcUrl]),
      (e: unknown) =>
        e instanceof ChainConfigError && e.reason === "wrong_chain" &&
        e.shortMessage.includes("chain id is 1337, expected 31337"),
    );
  });

  await t.step("down at start, up later: refused when checked, never sent a read", async () => {
    await using bad = startFaultProxy(other.rpcUrl, { down: true });
    const endpoints = new RpcEndpoints([anvil.rpcUrl, bad.url]);
    const client = await createChainClient(endpoints, { retryCount: 0 });
    const checks = bad.stats.byMethod.eth_chainId;
    bad.plan.down = false;
    // Concurrent reads until the second endpoint is asked again (once its pause after the
    // failed check is over) and so checked.
    for (let round = 0; round < 5_000 && bad.stats.byMethod.eth_chainId === checks; round++) {
      await Promise.all(Array.from({ length: 4 }, () => head(client)));
    }
    for (let round = 0; round < 5; round++) {
      await Promise.all(Array.from({ length: 4 }, () => head(client)));
    }
    assert.ok(bad.stats.byMethod.eth_chainId > checks, "it was checked once up");
    assert.equal(bad.stats.byMethod.eth_blockNumber, undefined, "never asked a read");
    const status = endpoints.status()[1];
    assert.equal(status.state, "refused");
    assert.match(status.lastError!.message, /serves chain 1337, expected 31337/);
  });
});

Deno.test("a snapshot over two endpoints that disagree is one chain's state, never a mix", async (t) => {
  // Two chains with the same id and the same contract addresses, different networks.
  await using small = await startChainFixture({ providers: 4 });
  await using large = await startChainFixture({ providers: 9 });
  assert.deepEqual(small.contracts, large.contracts);
  await large.rpc("anvil_mine", ["0x20"]);
  await using toSmall = startFaultProxy(small.anvil.rpcUrl);
  await using toLarge = startFaultProxy(large.anvil.rpcUrl);
  const endpoints = new RpcEndpoints([toSmall.url, toLarge.url]);
  const client = await createChainClient(endpoints, { retryCount: 1 });

  await t.step("concurrent snapshots: each is one chain's, at its pinned block", async () => {
    for (let round = 0; round < 3; round++) {
      const states = await Promise.all(
        Array.from({ length: 4 }, () => readNetworkState(client, small.contracts)),
      );
      for (const state of states) {
        const which = [small, large].find((c) =>
          c.expected.state.providers.length === state.providers.length
        )!;
        const direct = await readNetworkState(which.client, which.contracts, {
          block: state.block.number,
        });
        assert.equal(state.block.hash, direct.block.hash, "the pinned block is that chain's");
        assert.deepEqual(state, direct, "every value is the pinned block's, on one chain");
      }
    }
    // Both endpoints were asked pinned reads: the one without the pinned block was failed over.
    assert.ok(
      (toSmall.stats.byMethod.eth_call ?? 0) > 0 && (toLarge.stats.byMethod.eth_call ?? 0) > 0,
    );
  });

  await t.step("an endpoint behind the other is lagging, and not asked for the head", async () => {
    await Promise.all(Array.from({ length: 4 }, () => head(client)));
    const [behind, ahead] = endpoints.status();
    assert.ok(behind.head !== null && ahead.head !== null && behind.head + 4n < ahead.head);
    assert.equal(behind.state, "lagging");
    const before = toSmall.stats.byMethod.eth_blockNumber ?? 0;
    for (let i = 0; i < 5; i++) assert.equal(await head(client), ahead.head);
    assert.equal(toSmall.stats.byMethod.eth_blockNumber ?? 0, before);
  });
  assert.ok(rpcPoolOf(client) !== undefined);
});
