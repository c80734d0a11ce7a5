import assert from "node:assert/strict";
import { join } from "node:path";
import type { Address } from "viem";
import type { ChainClient } from "../../../chain/client.ts";
import { ChainReadError } from "../../../chain/errors.ts";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import {
  chainMeasurements,
  fileMeasurements,
  registryRecords,
} from "../../../daemon/trust/trust_sources.ts";
import { startChainFixture } from "../../_chain_fixture.ts";

const M1 = `0x${"11".repeat(32)}`;
const M2 = `0x${"22".repeat(32)}`;

async function noProvider(promise: Promise<unknown>, message: RegExp): Promise<DaemonError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof DaemonError, `expected DaemonError, got ${caught}`);
  assert.equal(caught.code, "no_provider", caught.message);
  assert.match(caught.shortMessage, message);
  return caught;
}

/** Writes `text` to `path` and sets its modification time to `seconds` (Unix). */
async function write(path: string, text: string, seconds: number): Promise<void> {
  await Deno.writeTextFile(path, text);
  await Deno.utime(path, seconds, seconds);
}

// ---------------------------------------------------------------------------------------------
// fileMeasurements

Deno.test("fileMeasurements: reads the file, and again only when it changes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-measurements-" });
  try {
    const path = join(dir, "measurements.json");
    await write(path, JSON.stringify({ measurements: [M1] }), 1_800_000_000);
    const read = fileMeasurements(path);
    const first = await read();
    assert.deepEqual(first.list(), [M1]);
    assert.equal(first.source, path);
    assert.equal(await read(), first, "an unchanged file is not parsed again");

    await write(path, JSON.stringify({ measurements: [M1, M2] }), 1_800_000_060);
    const second = await read();
    assert.deepEqual(second.list(), [M1, M2], "a changed file is read again");

    // The change is seen through the modification time: the same time means the same file.
    await write(path, JSON.stringify({ measurements: [] }), 1_800_000_060);
    assert.equal(await read(), second);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileMeasurements: a missing or malformed file fails closed with no_provider", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-measurements-" });
  try {
    const path = join(dir, "measurements.json");
    await noProvider(fileMeasurements(path)(), /cannot be read/);

    const cases: [string, string, RegExp][] = [
      ["not JSON", "{", /it is not JSON/],
      ["an array", JSON.stringify([M1]), /expected an object/],
      ["an unknown field", JSON.stringify({ measurements: [M1], extra: 1 }), /unknown field/],
      ["a short id", JSON.stringify({ measurements: ["0x1234"] }), /entry 0/],
      ["not a list", JSON.stringify({ measurements: M1 }), /must be an array/],
    ];
    let seconds = 1_800_000_000;
    for (const [label, text, message] of cases) {
      // Each time a good file is loaded first: a later bad version must not be papered over by
      // the set read before.
      const read = fileMeasurements(path);
      await write(path, JSON.stringify({ measurements: [M1] }), seconds += 60);
      assert.ok((await read()).has(M1), label);
      await write(path, text, seconds += 60);
      const error = await noProvider(read(), message).catch((e) => {
        throw new Error(`${label}: ${e.message}`);
      });
      assert.ok(error.cause instanceof Error, `${label}: the cause is kept`);
      await noProvider(read(), message); // still refused, not cached as good
      await write(path, JSON.stringify({ measurements: [M2] }), seconds += 60);
      assert.deepEqual((await read()).list(), [M2], `${label}: a repaired file is read`);
    }

    // A file deleted after it was read refuses too.
    const read = fileMeasurements(path);
    await read();
    await Deno.remove(path);
    await noProvider(read(), /cannot be read/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------
// registryRecords and chainMeasurements: caching around real chain reads

/** A client getter that counts its calls and can be told to fail. */
function getter(client: ChainClient | undefined) {
  const state = {
    calls: 0,
    failure: undefined as Error | undefined,
    get: (): Promise<ChainClient> => {
      state.calls++;
      if (state.failure) return Promise.reject(state.failure);
      if (!client) return Promise.reject(new Error("no chain in this test"));
      return Promise.resolve(client);
    },
  };
  return state;
}

function manualClock() {
  let now = Date.parse("2026-11-22T12:00:00Z");
  return { clock: () => new Date(now), advance: (ms: number) => void (now += ms) };
}

Deno.test("registryRecords and chainMeasurements: a failure is never cached (no chain needed)", async () => {
  const source = getter(undefined);
  const time = manualClock();
  const records = registryRecords(source.get, {
    registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
  }, { clock: time.clock, ttlMs: 60_000 });
  const provider = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" as Address;
  source.failure = new Error("connection refused");
  for (let i = 1; i <= 3; i++) {
    const error = await noProvider(
      records(provider),
      new RegExp(
        `Cannot read the Registry record of ${provider} from the chain, so no provider can be ` +
          "trusted: connection refused",
      ),
    );
    assert.equal(error.cause, source.failure);
    assert.equal(source.calls, i, "every call within the TTL tried again");
  }
  const measurements = chainMeasurements(source.get, "0x5fbdb2315678afecb367f032d93f642f64180aa3", {
    clock: time.clock,
  });
  await noProvider(measurements(), /Cannot read the approved TEE measurements from the chain/);
  await noProvider(measurements(), /approved TEE measurements/);
  assert.equal(source.calls, 5);
});

Deno.test("registryRecords and chainMeasurements: one read per TTL, a failure never cached (real chain)", async (t) => {
  await using chain = await startChainFixture({
    providers: 6,
    settledEpochs: 1,
    settlementsPerEpoch: 1,
  });
  const { registry, staking, escrow } = chain.contracts;
  const expected = chain.expected.state;
  const bonded = expected.providers.find((p) => p.bonded)!;
  const unbonded = expected.providers.find((p) => !p.bonded);
  assert.ok(unbonded, "the seeded plan has a provider below the bond");
  const stranger = "0x000000000000000000000000000000000000dead" as Address;

  await t.step("registryRecords", async () => {
    const source = getter(chain.client);
    const time = manualClock();
    // Without a grace period: a failed read is refused even right after a good one.
    const records = registryRecords(source.get, { registry, staking }, {
      clock: time.clock,
      ttlMs: 1000,
      graceMs: 0,
    });
    const first = await records(bonded.address);
    assert.deepEqual(first, {
      trustRoot: bonded.trustRoot,
      tier: bonded.tier,
      active: bonded.active,
      adCommitment: bonded.adCommitment,
      bonded: true,
      stake: bonded.stake,
    });
    assert.equal(source.calls, 1);
    time.advance(999);
    assert.deepEqual(await records(bonded.address), first);
    assert.equal(source.calls, 1, "within the TTL: no new read");

    assert.equal((await records(unbonded.address))?.bonded, false);
    assert.equal(source.calls, 2, "another provider is its own read");
    const calls = source.calls;
    assert.equal(await records(stranger), null, "not registered");
    assert.equal(source.calls, calls + 1);

    time.advance(1);
    await records(bonded.address);
    assert.equal(source.calls, calls + 2, "after the TTL: a new read");

    time.advance(1000);
    const [a, b] = await Promise.all([records(bonded.address), records(bonded.address)]);
    assert.deepEqual(a, b);
    assert.equal(source.calls, calls + 3, "concurrent callers share one read");

    // A failure after a good read: refused (not served from the expired entry), then retried.
    time.advance(1000);
    source.failure = new Error("rpc down");
    await noProvider(records(bonded.address), /rpc down/);
    source.failure = undefined;
    assert.deepEqual(await records(bonded.address), first, "the failure was not cached");
    assert.equal(source.calls, calls + 5);
  });

  await t.step(
    "registryRecords: a failed chain read (a call that reverts) is no_provider",
    async () => {
      const source = getter(chain.client);
      const records = registryRecords(source.get, { registry: escrow, staking }, {
        clock: manualClock().clock,
      });
      const error = await noProvider(records(bonded.address), /Cannot read the Registry record/);
      assert.ok(error.cause instanceof ChainReadError, `cause: ${error.cause}`);
      await noProvider(records(bonded.address), /Cannot read the Registry record/);
      assert.equal(source.calls, 2, "the failed read was tried again");
    },
  );

  await t.step("chainMeasurements", async () => {
    const source = getter(chain.client);
    const time = manualClock();
    const measurements = chainMeasurements(source.get, registry, {
      clock: time.clock,
      ttlMs: 1000,
      graceMs: 0,
    });
    const set = await measurements();
    assert.deepEqual(set.list(), [...expected.approvedMeasurements].sort());
    assert.equal(set.source, `Registry ${registry}`);
    time.advance(999);
    assert.equal(await measurements(), set, "within the TTL: the same set, no new read");
    assert.equal(source.calls, 1);
    time.advance(1);
    assert.deepEqual((await measurements()).list(), set.list());
    assert.equal(source.calls, 2, "after the TTL: a new read");

    source.failure = new Error("rpc down");
    time.advance(1000);
    await noProvider(measurements(), /approved TEE measurements.*rpc down/);
    source.failure = undefined;
    assert.deepEqual((await measurements()).list(), set.list());
    assert.equal(source.calls, 4, "the failure was not cached");
  });
});

Deno.test("chain down: a record read within the grace is used and says so; older is refused; chain back: fresh", async () => {
  await using chain = await startChainFixture({
    providers: 6,
    settledEpochs: 1,
    settlementsPerEpoch: 1,
  });
  const { registry, staking } = chain.contracts;
  const bonded = chain.expected.state.providers.find((p) => p.bonded)!;
  const other = chain.expected.state.providers.find((p) => p.bonded && p !== bonded)!;
  const source = getter(chain.client);
  const time = manualClock();
  const lines: string[] = [];
  const sources = {
    clock: time.clock,
    ttlMs: 15_000,
    graceMs: 600_000,
    log: (l: string) => lines.push(l),
  };
  const records = registryRecords(source.get, { registry, staking }, sources);
  const measurements = chainMeasurements(source.get, registry, sources);
  const fresh = await records(bonded.address);
  assert.equal(fresh?.note, undefined, "a fresh read carries no note");
  const approved = (await measurements()).list();

  // The chain goes down 4 minutes later: what it said 4 minutes ago stands in, marked.
  time.advance(240_000);
  source.failure = new Error("connect ECONNREFUSED 127.0.0.1:8545");
  const stale = await records(bonded.address);
  assert.deepEqual({ ...stale, note: undefined }, { ...fresh, note: undefined });
  assert.equal(stale?.note, "read 4 min ago, chain unreachable");
  assert.deepEqual((await measurements()).list(), approved);
  assert.match(
    lines.join("\n"),
    /the chain cannot be read \(.*ECONNREFUSED.*\); using what it said/,
  );
  // Never read before the outage: nothing to fall back on.
  await noProvider(records(other.address), /Cannot read the Registry record of .* ECONNREFUSED/);

  // Past the grace (10 minutes after the last good read): refused, saying how old it was.
  time.advance(360_001);
  const refused = await noProvider(
    records(bonded.address),
    /ECONNREFUSED.*; it was last read on chain 10 min ago, longer than the 10 min grace/,
  );
  assert.ok(refused.hints.some((h) => h.includes("--chain-grace-secs")));
  await noProvider(measurements(), /approved TEE measurements.*longer than the 10 min grace/);

  // The chain is back: fresh reads at once, no note.
  source.failure = undefined;
  const again = await records(bonded.address);
  assert.equal(again?.note, undefined);
  assert.deepEqual(again, fresh);
  assert.match(lines.at(-1)!, /the chain answers again/);
  // And a new outage starts a new grace from this read.
  time.advance(30_000);
  source.failure = new Error("timeout");
  assert.equal((await records(bonded.address))?.note, "read 30 s ago, chain unreachable");
});
