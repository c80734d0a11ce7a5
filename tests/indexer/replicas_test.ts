/**
 * Replicas on one PostgreSQL database: three `indexer/main.ts` processes with the same
 * `--database-url` all serve the API, exactly one writes the history; their answers are the
 * same; when the writer is killed (`kill -9`), one of the two left takes over (its next
 * history pass, within a refresh interval), keeps scanning, and the two still agree.
 */

import assert from "node:assert/strict";
import { escrowAbi } from "../../chain/abi.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { serve } from "../_http.ts";
import { startPostgres } from "../_postgres.ts";
import { type IndexerProcess, startIndexer } from "./_indexer_process.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// deno-lint-ignore no-explicit-any
type Json = any;

/** A body without what differs between processes by design (when each took its snapshot). */
function comparable(body: Json): Json {
  const copy = structuredClone(body);
  if (copy.snapshot) delete copy.snapshot.taken_at;
  return copy;
}

/** Waits until every replica serves a synced history with `count` settlements at one block. */
async function settled(replicas: IndexerProcess[], count: number): Promise<Json[]> {
  for (let i = 0;; i++) {
    const stats = await Promise.all(replicas.map((r) => r.get("/stats")));
    const ready = stats.every((s) =>
      s.status === 200 && s.body.settlements.synced && s.body.settlements.count === count
    );
    const blocks = new Set(stats.map((s) => s.body.snapshot?.block_number));
    if (ready && blocks.size === 1) return stats.map((s) => s.body);
    assert.ok(
      i < 600,
      `replicas never agreed: ${JSON.stringify(stats.map((s) => s.body.settlements))}`,
    );
    await sleep(100);
  }
}

async function roles(replicas: IndexerProcess[]): Promise<string[]> {
  return await Promise.all(
    replicas.map(async (r) => (await r.get("/health")).body.settlements.role),
  );
}

async function assertSame(replicas: IndexerProcess[], paths: string[]): Promise<void> {
  for (const path of paths) {
    const answers = await Promise.all(replicas.map((r) => r.get(path)));
    for (const answer of answers) assert.equal(answer.status, 200, path);
    for (const answer of answers.slice(1)) {
      assert.deepEqual(comparable(answer.body), comparable(answers[0].body), path);
    }
  }
}

Deno.test("three, then two replicas on one PostgreSQL: one writer, takeover, the same answers", async () => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({ providers: 12, routerUrls: [router.url] });
  await using pg = await startPostgres();
  const databaseUrl = await pg.createDatabase();
  const env = {
    NET_EVM_RPC_URL: chain.anvil.rpcUrl,
    NET_EVM_ESCROW: chain.contracts.escrow,
    NET_EVM_STAKING: chain.contracts.staking,
    NET_EVM_EMISSION: chain.contracts.emission,
    NET_EVM_REGISTRY: chain.contracts.registry,
    NET_STATS_SCAN_FROM_BLOCK: String(chain.deployment.fromBlock),
    NET_STATS_CONFIRMATIONS: "1",
    NET_STATS_REFRESH_SECS: "1",
    NET_STATS_DATABASE_URL: databaseUrl,
  };
  const replicas = await Promise.all([0, 1, 2].map(() => startIndexer([], env)));
  try {
    const seeded = chain.expected.settlements.reduce((s, b) => s + b.settlements, 0);
    await chain.rpc("anvil_mine", ["0x1"]);
    await settled(replicas, seeded);
    let found = await roles(replicas);
    assert.deepEqual(found.toSorted(), ["reader", "reader", "writer"], String(found));
    const paths = ["/stats", "/epochs", "/providers", "/models"];
    const paid = chain.expected.settlements[0].provider;
    await assertSame(replicas, [...paths, `/providers/${paid}`]);

    // New settlements reach every replica through the one writer.
    const settler = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, {
      chainId: chain.anvil.chainId,
    });
    const settle = (amount: bigint) =>
      sendAndConfirm(settler, {
        address: chain.contracts.escrow,
        abi: escrowAbi,
        functionName: "settle",
        args: [chain.accounts.consumer.address, paid, amount, 3n],
      });
    await settle(500n);
    await chain.rpc("anvil_mine", ["0x1"]);
    await settled(replicas, seeded + 1);
    await assertSame(replicas, paths);

    // The writer dies: one of the two left takes over and keeps the history going.
    const writer = replicas[found.indexOf("writer")];
    await writer.kill();
    const left = replicas.filter((r) => r !== writer);
    for (let i = 0; !(await roles(left)).includes("writer"); i++) {
      assert.ok(i < 300, "no replica took over");
      await sleep(100);
    }
    found = await roles(left);
    assert.deepEqual(found.toSorted(), ["reader", "writer"], String(found));
    await settle(700n);
    await chain.rpc("anvil_mine", ["0x1"]);
    const [a] = await settled(left, seeded + 2);
    assert.equal(
      a.settlements.amount,
      String(
        chain.expected.settlements.reduce((s, b) => s + b.amount, 0n) + 1_200n,
      ),
    );
    await assertSame(left, [...paths, `/providers/${paid}`]);
    for (const replica of left) assert.equal(await replica.stop(), 0);
  } finally {
    await Promise.all(replicas.map((r) => r.kill()));
  }
});
