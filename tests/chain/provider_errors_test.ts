/**
 * Every provider's `eth_getLogs` refusal (`_provider_errors.ts`) driven through the
 * fault-injecting proxy in front of a real anvil: the reader gets every settlement, follows the
 * range the provider suggests or the limit it names (one refusal, then never over it), halves
 * when the words name nothing, and fails with a specific reason at a block no request can read.
 */

import assert from "node:assert/strict";
import { createChainClient } from "../../chain/client.ts";
import { type SettledEvent, SettlementLogReader } from "../../chain/settlements.ts";
import { SettlementScanError } from "../../chain/errors.ts";
import { readLogsRefusal } from "../../chain/_logs_refusal.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { startFaultProxy } from "../_fault_rpc.ts";
import { settleMany } from "../indexer/_settlements.ts";
import { PROVIDER_REFUSALS } from "./_provider_errors.ts";

/** Mines `blocks` empty blocks (a plain request: no client timeout on a busy machine). */
async function mine(rpcUrl: string, blocks: number): Promise<void> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: [blocks] }),
  });
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.error, undefined, JSON.stringify(body.error));
}

async function readAll(reader: SettlementLogReader, from: bigint, to: bigint) {
  const events: SettledEvent[] = [];
  for await (const range of reader.ranges(from, to)) events.push(...range.events);
  return events;
}

Deno.test("every provider's eth_getLogs refusal, through a proxy in front of anvil", async (t) => {
  await using chain = await startChainFixture({ providers: 6, settlementsPerEpoch: 2 });
  const { escrow } = chain.contracts;
  const providers = chain.expected.state.providers.map((p) => p.address);
  const start = await chain.client.getBlockNumber() + 1n;
  // 10 settlement blocks of 8, 480 empty blocks before each: about 5,000 blocks to scan.
  for (let i = 0; i < 10; i++) {
    await mine(chain.anvil.rpcUrl, 480);
    await settleMany(chain, { count: 8, perTx: 8, providers, seed: i + 1 });
  }
  const head = await chain.client.getBlockNumber();
  const direct = new SettlementLogReader(chain.client, escrow, { chunkSize: 10_000 });
  const expected = await readAll(direct, start, head);
  assert.equal(expected.length, 80);

  for (const refusal of PROVIDER_REFUSALS) {
    await t.step(`${refusal.provider}: ${refusal.seen.slice(0, 60)}`, async () => {
      // The row's real words are read as what they are.
      const seen = readLogsRefusal(
        { message: "RPC error", details: refusal.seen, status: refusal.status },
        0n,
        0n,
      );
      assert.ok(
        seen.kind === "range" || seen.kind === "results",
        `${refusal.id}: ${seen.kind}`,
      );
      await using proxy = startFaultProxy(chain.anvil.rpcUrl, { refusal });
      const client = await createChainClient(proxy.url, { retryCount: 0 });
      const reader = new SettlementLogReader(client, escrow, {
        chunkSize: 5_000,
        maxChunkSize: 10_000,
      });
      const events = await readAll(reader, start, head);
      assert.deepEqual(events, expected, `${refusal.id}: every settlement, once`);
      assert.ok(proxy.stats.refused >= 1, `${refusal.id}: the proxy refused`);
      const first = proxy.logs.findIndex((call) => call.refused);
      const after = proxy.logs[first + 1];
      if (refusal.names === "limit") {
        // The limit is read from the words: one refusal, and no request over it afterwards.
        assert.equal(reader.stats.namedLimit, refusal.scaled, refusal.id);
        assert.equal(proxy.stats.refused, 1, `${refusal.id}: refused once`);
        assert.equal(after.to - after.from + 1n, BigInt(refusal.scaled - 1), refusal.id);
      } else if (refusal.names === "range") {
        // The suggested range is asked next, as given, and answered.
        assert.equal(after.from, proxy.logs[first].from, refusal.id);
        assert.ok(!after.refused, `${refusal.id}: the suggested range is answered`);
        if (refusal.limits === "range") {
          assert.equal(after.to - after.from + 1n, BigInt(refusal.scaled), refusal.id);
        }
      } else {
        assert.ok(reader.stats.shrinks >= 1, refusal.id);
      }
    });
  }

  await t.step("a block over the provider's result limit fails with range_limit", async () => {
    const refusal = PROVIDER_REFUSALS.find((r) => r.id === "geth-results")!;
    await using proxy = startFaultProxy(chain.anvil.rpcUrl, { refusal, limit: 5 });
    const client = await createChainClient(proxy.url, { retryCount: 0 });
    const reader = new SettlementLogReader(client, escrow, { chunkSize: 5_000 });
    const firstBlock = expected[0].block;
    await assert.rejects(
      readAll(reader, start, head),
      (e: unknown) =>
        e instanceof SettlementScanError && e.reason === "range_limit" &&
        e.shortMessage.includes(`single block ${firstBlock}`) &&
        e.shortMessage.includes("more than 5 results"),
    );
  });

  await t.step("rate limits and gateway errors: every settlement, once", async () => {
    await using proxy = startFaultProxy(
      chain.anvil.rpcUrl,
      { rateLimited: 0.2, retryAfterSecs: 0, badGateway: 0.2, methods: ["eth_getLogs"] },
      { seed: 11 },
    );
    const client = await createChainClient(proxy.url, { retryCount: 0 });
    const reader = new SettlementLogReader(client, escrow, { chunkSize: 1_000, retries: 8 });
    assert.deepEqual(await readAll(reader, start, head), expected);
    assert.ok(proxy.stats.rateLimited > 0 && proxy.stats.badGateway > 0);
    assert.ok(
      reader.stats.refusals.rate > 0 && reader.stats.refusals.unreachable > 0,
      JSON.stringify(
        { ...reader.stats, lastRefusal: undefined, proxy: proxy.stats },
        (_k, v) => typeof v === "bigint" ? String(v) : v,
      ),
    );
  });

  await t.step("an endpoint that rate-limits every request fails with rate_limited", async () => {
    await using proxy = startFaultProxy(chain.anvil.rpcUrl, {
      rateLimited: 1,
      retryAfterSecs: 0,
      methods: ["eth_getLogs"],
    });
    const client = await createChainClient(proxy.url, { retryCount: 0 });
    const reader = new SettlementLogReader(client, escrow, { chunkSize: 4, retries: 1 });
    await assert.rejects(
      readAll(reader, start, head),
      (e: unknown) =>
        e instanceof SettlementScanError && e.reason === "rate_limited" &&
        e.shortMessage.includes(`block ${start}`),
    );
  });
});

Deno.test("a provider's words are read: kind, suggested range, named limit", () => {
  const cases: [string, number | undefined, bigint[] | undefined][] = [
    ["eth_getLogs is limited to a 10,000 range", 10_000, undefined],
    [
      "Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range. " +
      "Based on your parameters, this block range should work: [0x64, 0x6d]. Upgrade to PAYG " +
      "for expanded block range.",
      10,
      [100n, 109n],
    ],
    ["query exceeds max results 20000, retry with the range 100-120", undefined, [100n, 120n]],
    [
      "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range " +
      "and no limit on the response size",
      2_000,
      undefined,
    ],
    [
      '{"code":-32602,"message":"Invalid params","data":{"range":"the range 100 - 5100 exceeds ' +
      'the range allowed for your plan (5000 > 2000)."}}',
      2_000,
      undefined,
    ],
  ];
  for (const [words, limit, range] of cases) {
    const read = readLogsRefusal({ message: "HTTP request failed.", details: words }, 100n, 5100n);
    assert.equal(read.kind, "range", words);
    assert.equal(read.maxBlocks, limit, words);
    assert.deepEqual(read.suggested && [read.suggested.from, read.suggested.to], range, words);
  }
  // A suggestion that is the range asked (or starts elsewhere) is not followed.
  const same = readLogsRefusal(
    { details: "query exceeds max results 20000, retry with the range 100-5100" },
    100n,
    5100n,
  );
  assert.equal(same.suggested, undefined);
  assert.equal(readLogsRefusal({ status: 429 }, 0n, 1n).kind, "rate");
  assert.equal(
    readLogsRefusal({ details: "Too Many Requests", code: -32029 }, 0n, 1n).kind,
    "rate",
  );
  const gateway = readLogsRefusal({ name: "HttpRequestError", status: 502 }, 0n, 1n);
  assert.equal(gateway.kind, "unreachable");
  assert.equal(
    readLogsRefusal({ message: "database is locked", code: -32000 }, 0n, 1n).kind,
    "other",
  );
  const after = readLogsRefusal(
    { status: 429, headers: new Headers({ "retry-after": "3" }) },
    0n,
    1n,
  );
  assert.equal(after.retryAfterMs, 3_000);
});

Deno.test("docs/indexer.md lists every provider of the table", async () => {
  const docs = await Deno.readTextFile(new URL("../../docs/indexer.md", import.meta.url));
  const section = docs.slice(
    docs.indexOf("### The providers' `eth_getLogs` refusals"),
    docs.indexOf("## The settlement history"),
  );
  const listed = section.split("\n").filter((line) => /^\| [^-]/.test(line)).slice(1).map((line) =>
    line.split("|")[1].trim()
  );
  assert.deepEqual(listed.toSorted(), PROVIDER_REFUSALS.map((r) => r.provider).toSorted());
});
