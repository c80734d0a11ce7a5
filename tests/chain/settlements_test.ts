import assert from "node:assert/strict";
import { type Address, HttpRequestError, ResponseBodyTooLargeError, TimeoutError } from "viem";
import { createChainClient } from "../../chain/client.ts";
import { ChainConfigError, SettlementScanError } from "../../chain/errors.ts";
import {
  isRangeLimitError,
  scanSettlements,
  type SettlementBucket,
  type SettlementCursor,
  SettlementLogReader,
} from "../../chain/settlements.ts";
import { settleOnChain, startChainFixture } from "../_chain_fixture.ts";
import { countingFetch, type RpcRequest } from "../_counting_fetch.ts";
import { serve } from "../_http.ts";
import { fakeLogNode, LOGS_PER_BLOCK } from "./_log_node.ts";

function range(request: RpcRequest): bigint {
  const [filter] = request.params as [{ fromBlock: string; toBlock: string }];
  return BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n;
}

function plus(
  buckets: SettlementBucket[],
  extra: { provider: Address; epoch: bigint; amount: bigint; tokens: bigint },
): SettlementBucket[] {
  const out = buckets.map((b) => ({ ...b }));
  const found = out.find((b) => b.provider === extra.provider && b.epoch === extra.epoch);
  if (found) {
    found.amount += extra.amount;
    found.tokens += extra.tokens;
    found.settlements += 1;
  } else {
    out.push({ ...extra, settlements: 1 });
    out.sort((a, b) =>
      a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : Number(a.epoch - b.epoch)
    );
  }
  return out;
}

Deno.test("scanSettlements buckets the seeded settlements", async (t) => {
  await using chain = await startChainFixture({ providers: 60 });
  const { escrow } = chain.contracts;
  const fromBlock = chain.deployment.fromBlock;
  const expected = chain.expected.settlements;
  const head = await chain.client.getBlockNumber();

  await t.step("a full scan equals the seeded totals", async () => {
    const scan = await scanSettlements(chain.client, escrow, { fromBlock, confirmations: 0 });
    assert.deepEqual(scan.buckets, expected);
    assert.equal(scan.head, head);
    assert.equal(scan.scannedTo, head);
    assert.equal(scan.stats.logs, chain.plan.settlements.flatMap((s) => s.items).length);
    assert.ok(new Set(expected.map((b) => b.epoch)).size >= 4, "several epochs");
    assert.ok(expected.some((b) => b.settlements > 1), "a provider settled twice in one epoch");
    // The cursor survives JSON and carries the totals.
    const cursor = JSON.parse(JSON.stringify(scan.cursor)) as SettlementCursor;
    assert.deepEqual(cursor, scan.cursor);
    assert.equal(cursor.nextBlock, String(head + 1n));
  });

  await t.step("one block per request gives the same totals", async () => {
    const scan = await scanSettlements(chain.client, escrow, {
      fromBlock,
      confirmations: 0,
      chunkSize: 1,
      maxChunkSize: 1,
    });
    assert.deepEqual(scan.buckets, expected);
    assert.equal(BigInt(scan.stats.getLogsRequests), head - fromBlock + 1n);
  });

  await t.step("resuming from a saved cursor gives the same totals", async () => {
    const middle = fromBlock + (head - fromBlock) / 2n;
    const part = await scanSettlements(chain.client, escrow, {
      fromBlock,
      toBlock: middle,
      confirmations: 0,
      chunkSize: 3,
    });
    assert.equal(part.scannedTo, middle);
    assert.notDeepEqual(part.buckets, expected, "the first half is not everything");
    const saved = JSON.stringify(part.cursor);
    const rest = await scanSettlements(chain.client, escrow, {
      cursor: JSON.parse(saved),
      confirmations: 0,
    });
    assert.deepEqual(rest.buckets, expected);
    // Resuming at the head finds nothing new and changes nothing.
    const again = await scanSettlements(chain.client, escrow, {
      cursor: rest.cursor,
      confirmations: 0,
    });
    assert.deepEqual(again.buckets, expected);
    assert.equal(again.stats.getLogsRequests, 0);
  });

  await t.step("only blocks behind the confirmation depth count", async () => {
    const scan = await scanSettlements(chain.client, escrow, { fromBlock, confirmations: 3 });
    assert.equal(scan.scannedTo, head - 3n);
    // The seed ends: last settlements, an empty block, the emission. So the last settlements
    // are two blocks deep and not yet counted.
    assert.notDeepEqual(scan.buckets, expected);
    await chain.rpc("evm_mine", []);
    await chain.rpc("evm_mine", []);
    await chain.rpc("evm_mine", []);
    const later = await scanSettlements(chain.client, escrow, {
      cursor: scan.cursor,
      confirmations: 3,
    });
    assert.deepEqual(later.buckets, expected);
  });

  await t.step("an endpoint with a block-range limit forces smaller chunks", async () => {
    const limit = 5n;
    let largest = 0n;
    const counter = countingFetch({
      intercept: (request) => {
        if (request.method !== "eth_getLogs") return undefined;
        if (range(request) > limit) {
          return { code: -32602, message: `block range is too large: max ${limit} blocks` };
        }
        largest = range(request) > largest ? range(request) : largest;
        return undefined;
      },
    });
    const client = await createChainClient(chain.anvil.rpcUrl, {
      retryCount: 0,
      fetch: counter.fetch,
    });
    const scan = await scanSettlements(client, escrow, { fromBlock, confirmations: 0 });
    assert.deepEqual(scan.buckets, expected);
    assert.ok(scan.stats.shrinks > 0);
    assert.ok(largest <= limit && largest >= 2n, `largest accepted range ${largest}`);
  });

  await t.step("an endpoint with a result-count limit forces smaller chunks", async () => {
    const counter = countingFetch({
      inspect: (request, result) =>
        request.method === "eth_getLogs" && (result as unknown[]).length > 30
          ? { code: -32005, message: "query returned more than 30 results" }
          : undefined,
    });
    const client = await createChainClient(chain.anvil.rpcUrl, {
      retryCount: 0,
      fetch: counter.fetch,
    });
    const scan = await scanSettlements(client, escrow, { fromBlock, confirmations: 0 });
    assert.deepEqual(scan.buckets, expected);
    assert.ok(scan.stats.shrinks > 0);
  });

  await t.step("a block with more logs than the result limit fails with range_limit", async () => {
    const counter = countingFetch({
      inspect: (request, result) =>
        request.method === "eth_getLogs" && (result as unknown[]).length > 20
          ? { code: -32005, message: "query returned more than 20 results" }
          : undefined,
    });
    const client = await createChainClient(chain.anvil.rpcUrl, {
      retryCount: 0,
      fetch: counter.fetch,
    });
    // One seeded block holds 25 settlements: no range is small enough.
    await assert.rejects(
      scanSettlements(client, escrow, { fromBlock, confirmations: 0 }),
      (e: unknown) =>
        e instanceof SettlementScanError && e.reason === "range_limit" &&
        e.shortMessage.includes("more than 20 results"),
    );
  });

  await t.step("an endpoint that refuses every range fails with range_limit", async () => {
    const counter = countingFetch({
      intercept: (request) =>
        request.method === "eth_getLogs"
          ? { code: -32000, message: "exceed maximum block range: 0" }
          : undefined,
    });
    const client = await createChainClient(chain.anvil.rpcUrl, {
      retryCount: 0,
      fetch: counter.fetch,
    });
    await assert.rejects(
      scanSettlements(client, escrow, { fromBlock, confirmations: 0 }),
      (e: unknown) => e instanceof SettlementScanError && e.reason === "range_limit",
    );
  });

  await t.step("other RPC errors fail with rpc, not a retry loop", async () => {
    const counter = countingFetch({
      intercept: (request) =>
        request.method === "eth_getLogs"
          ? { code: -32000, message: "database is locked" }
          : undefined,
    });
    const client = await createChainClient(chain.anvil.rpcUrl, {
      retryCount: 0,
      fetch: counter.fetch,
    });
    await assert.rejects(
      scanSettlements(client, escrow, { fromBlock, confirmations: 0 }),
      (e: unknown) =>
        e instanceof SettlementScanError && e.reason === "rpc" &&
        e.shortMessage.includes("database is locked"),
    );
  });

  await t.step("a malformed or foreign cursor is refused", async () => {
    const good = (await scanSettlements(chain.client, escrow, { fromBlock, confirmations: 0 }))
      .cursor;
    const bad: [string, unknown][] = [
      ["not an object", "x"],
      ["other escrow", { ...good, escrow: chain.contracts.registry }],
      ["unknown field", { ...good, extra: 1 }],
      ["version", { ...good, version: 2 }],
      ["number next block", { ...good, nextBlock: 5 }],
      ["negative amount", {
        ...good,
        buckets: [{ ...good.buckets[0], amount: "-1" }],
      }],
      ["duplicate bucket", { ...good, buckets: [good.buckets[0], good.buckets[0]] }],
      ["last block not before next", { ...good, nextBlock: "1" }],
    ];
    for (const [label, cursor] of bad) {
      await assert.rejects(
        scanSettlements(chain.client, escrow, { cursor: cursor as SettlementCursor }),
        (e: unknown) => e instanceof SettlementScanError && e.reason === "bad_cursor",
        label,
      );
    }
    await assert.rejects(
      scanSettlements(chain.client, "0xabc" as Address),
      (e: unknown) => e instanceof ChainConfigError && e.reason === "invalid_option",
    );
  });
});

Deno.test("a reorg never corrupts the settlement totals", async (t) => {
  await using chain = await startChainFixture({ providers: 12, settlementsPerEpoch: 5 });
  const { escrow } = chain.contracts;
  const fromBlock = chain.deployment.fromBlock;
  const seeded = chain.expected.settlements;
  const [a, b] = chain.expected.state.providers.filter((p) => p.active);
  const epoch = chain.expected.state.emission.currentEpoch;
  const confirmations = 4;

  await t.step("a reorg shallower than the depth is never counted", async () => {
    const base = await scanSettlements(chain.client, escrow, { fromBlock, confirmations });
    const snapshot = await chain.rpc("evm_snapshot");
    // The branch that will be dropped: a settlement to `a`, two more blocks.
    await settleOnChain(chain, a.address, 111n, 11n);
    await chain.rpc("evm_mine");
    await chain.rpc("evm_mine");
    const during = await scanSettlements(chain.client, escrow, {
      cursor: base.cursor,
      confirmations,
    });
    assert.deepEqual(during.buckets, seeded, "the unconfirmed settlement is not counted");
    assert.equal(await chain.rpc("evm_revert", [snapshot]), true);
    // The branch that stays: a settlement to `b`, then enough blocks to confirm it.
    await settleOnChain(chain, b.address, 222n, 22n);
    for (let i = 0; i < confirmations; i++) await chain.rpc("evm_mine");
    const after = await scanSettlements(chain.client, escrow, {
      cursor: during.cursor,
      confirmations,
    });
    const truth = plus(seeded, { provider: b.address, epoch, amount: 222n, tokens: 22n });
    assert.deepEqual(after.buckets, truth);
    // And it equals a fresh full scan of the final chain.
    const fresh = await scanSettlements(chain.client, escrow, { fromBlock, confirmations });
    assert.deepEqual(fresh.buckets, truth);
  });

  await t.step("a reorg deeper than the depth is detected and refused", async () => {
    const snapshot = await chain.rpc("evm_snapshot");
    await settleOnChain(chain, a.address, 333n, 33n);
    for (let i = 0; i < 3; i++) await chain.rpc("evm_mine");
    const counted = await scanSettlements(chain.client, escrow, { fromBlock, confirmations: 1 });
    assert.equal(await chain.rpc("evm_revert", [snapshot]), true);
    await settleOnChain(chain, b.address, 444n, 44n);
    for (let i = 0; i < 6; i++) await chain.rpc("evm_mine");
    await assert.rejects(
      scanSettlements(chain.client, escrow, { cursor: counted.cursor, confirmations: 1 }),
      (e: unknown) =>
        e instanceof SettlementScanError && e.reason === "reorg" &&
        e.shortMessage.includes("reorg deeper than the confirmation depth"),
    );
  });
});

Deno.test("range-limit errors are recognized across node wordings", () => {
  const limited = [
    "query returned more than 10000 results",
    "block range is too large",
    "exceed maximum block range: 5000",
    "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range",
    "limit exceeded",
    "eth_getLogs is limited to a 10,000 range: block range too wide",
  ];
  for (const message of limited) {
    assert.ok(isRangeLimitError({ message: "RPC error", cause: { message } }), message);
  }
  for (const message of ["database is locked", "execution reverted", "connection refused"]) {
    assert.ok(!isRangeLimitError(new Error(message)), message);
  }
  assert.ok(isRangeLimitError({ message: "HTTP request failed", status: 413 }));
  // viem's own errors: the response body limit (10 MiB) and a timeout, as viem throws them.
  assert.ok(isRangeLimitError(new ResponseBodyTooLargeError({ maxSize: 10_485_760, size: 11e6 })));
  assert.ok(isRangeLimitError(new TimeoutError({ body: {}, url: "http://rpc.example" })));
  assert.ok(
    isRangeLimitError(
      new HttpRequestError({
        url: "http://rpc.example",
        status: 413,
        details: "Payload Too Large",
      }),
    ),
  );
});

Deno.test("a range whose answer is over viem's 10 MiB body limit is split, down to one block", async () => {
  // Each block of the fake node holds LOGS_PER_BLOCK settlements (about 6 MB of JSON): two
  // blocks are over the limit, which viem refuses while reading the body.
  const node = fakeLogNode();
  await using server = serve(node.handler);
  const client = await createChainClient(server.url, { retryCount: 0 });
  const reader = new SettlementLogReader(client, node.escrow, { chunkSize: 8 });
  const ranges = [];
  for await (const range of reader.ranges(10n, 13n)) ranges.push(range);
  assert.deepEqual(ranges.map((r) => [r.from, r.to, r.events.length]), [
    [10n, 10n, LOGS_PER_BLOCK],
    [11n, 11n, LOGS_PER_BLOCK],
    [12n, 12n, LOGS_PER_BLOCK],
    [13n, 13n, LOGS_PER_BLOCK],
  ]);
  assert.ok(node.tooLarge > 0, "the node sent answers over the limit");
  // The range is 4 blocks: 4 → 2 → 1, and not back to 2 (it was too much just now).
  assert.equal(reader.stats.shrinks, 2);
  assert.equal(reader.stats.getLogsRequests, 6);
  assert.deepEqual(ranges[1].events[5], node.event(11n, 5));
  // One block over the limit on its own: range_limit naming it, nothing skipped before it.
  node.logsPerBlock = (block) => (block === 21n ? 2 * LOGS_PER_BLOCK : 3);
  const stuck = new SettlementLogReader(client, node.escrow);
  const read: bigint[] = [];
  await assert.rejects(
    (async () => {
      for await (const range of stuck.ranges(20n, 30n)) read.push(range.to);
    })(),
    (e: unknown) =>
      e instanceof SettlementScanError && e.reason === "range_limit" &&
      e.shortMessage.includes("single block 21") && /size limit/.test(e.shortMessage),
  );
  assert.deepEqual(read, [20n]);
});

Deno.test("a range the node cannot answer in time is split", async () => {
  const node = fakeLogNode({ logsPerBlock: () => 2, slowAbove: 2n, slowMs: 1_500 });
  await using server = serve(node.handler);
  const client = await createChainClient(server.url, { retryCount: 0, timeoutMs: 300 });
  const reader = new SettlementLogReader(client, node.escrow, { chunkSize: 16 });
  let events = 0;
  for await (const range of reader.ranges(1n, 16n)) events += range.events.length;
  assert.equal(events, 32);
  assert.ok(reader.chunk <= 4 && reader.stats.shrinks >= 3, `chunk ${reader.chunk}`);
});

Deno.test("an answer over the settlement budget is yielded in steps between blocks, and the next request is sized to the budget", async () => {
  // 30 settlements a block, 250 in block 25; a budget of 100 a step.
  const node = fakeLogNode({ logsPerBlock: (block) => (block === 25n ? 250 : 30) });
  const asked: [bigint, bigint][] = [];
  await using server = serve(async (req) => {
    const body = await req.clone().json();
    for (const call of Array.isArray(body) ? body : [body]) {
      if (call.method !== "eth_getLogs") continue;
      asked.push([BigInt(call.params[0].fromBlock), BigInt(call.params[0].toBlock)]);
    }
    return node.handler(req);
  });
  const client = await createChainClient(server.url, { retryCount: 0 });
  const reader = new SettlementLogReader(client, node.escrow, {
    chunkSize: 40,
    maxSettlements: 100,
    withBlockHash: true,
  });
  const steps = [];
  for await (const range of reader.ranges(1n, 100n)) steps.push(range);
  // Contiguous from 1 to 100, every event once and in order.
  assert.equal(steps[0].from, 1n);
  assert.equal(steps.at(-1)!.to, 100n);
  for (let i = 1; i < steps.length; i++) assert.equal(steps[i].from, steps[i - 1].to + 1n);
  const events = steps.flatMap((s) => s.events);
  assert.equal(events.length, 99 * 30 + 250);
  let at = 0;
  for (let block = 1n; block <= 100n; block++) {
    for (let i = 0; i < node.logsPerBlock(block); i++) {
      assert.deepEqual(events[at++], node.event(block, i));
    }
  }
  for (const step of steps) {
    // At most the budget, unless one block alone holds more; each ends with its block's hash.
    const blocks = new Set(step.events.map((e) => e.block));
    assert.ok(step.events.length <= 100 || blocks.size === 1, `${step.from}–${step.to}`);
    assert.equal(step.toHash, node.event(step.to, 0).blockHash);
    for (const e of step.events) assert.ok(e.block >= step.from && e.block <= step.to);
  }
  // The first answer (blocks 1–40, 1,420 settlements) came in steps of 3 blocks and block 25
  // alone; the next requests held about the budget: 2 blocks (60), never doubled past it.
  assert.deepEqual(asked[0], [1n, 40n]);
  const first = steps.filter((s) => s.to <= 40n).map((s) => [s.from, s.to]);
  assert.deepEqual(first.slice(0, 3), [[1n, 3n], [4n, 6n], [7n, 9n]]);
  assert.ok(first.some(([from, to]) => from === 25n && to === 25n), first.join(" "));
  for (const [from, to] of asked.slice(1)) assert.ok(to - from + 1n <= 3n, `${from}–${to}`);
  assert.equal(reader.stats.shrinks, 0, "sizing to the budget is not a refusal");
  assert.throws(
    () => new SettlementLogReader(client, node.escrow, { maxSettlements: 0 }),
    (e: unknown) => e instanceof RangeError && /maxSettlements is 0/.test(e.message),
  );
});
