import assert from "node:assert/strict";
import { registryAbi } from "../../chain/abi.ts";
import { ChainReadError } from "../../chain/errors.ts";
import { readApprovedMeasurements } from "../../chain/measurements.ts";
import { sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { countingFetch } from "../_counting_fetch.ts";

Deno.test("readApprovedMeasurements reads the approved set at one block", async (t) => {
  const counter = countingFetch();
  await using chain = await startChainFixture({
    providers: 3,
    measurements: 7,
    client: { fetch: counter.fetch },
  });
  const { registry } = chain.contracts;
  const expected = chain.expected.state.approvedMeasurements;
  const head = await chain.client.getBlock();

  await t.step("the set equals the seeded one, in two round trips", async () => {
    counter.reset();
    const { block, measurements } = await readApprovedMeasurements(chain.client, registry);
    assert.equal(block.hash, head.hash);
    assert.deepEqual(measurements, expected);
    assert.equal(counter.requests, 2);
  });

  await t.step("pages of one give the same set", async () => {
    const { measurements } = await readApprovedMeasurements(chain.client, registry, {
      pageSize: 1,
    });
    assert.deepEqual(measurements, expected);
  });

  await t.step("a revocation shows at the new block only", async () => {
    await sendAndConfirm(chain.owner, {
      address: registry,
      abi: registryAbi,
      functionName: "revokeMeasurement",
      args: [expected[0]],
    });
    const now = await readApprovedMeasurements(chain.client, registry);
    // Removal moves the last id into the freed slot.
    assert.deepEqual(now.measurements, [expected[6], ...expected.slice(1, 6)]);
    const old = await readApprovedMeasurements(chain.client, registry, { block: head.number! });
    assert.deepEqual(old.measurements, expected);
  });

  await t.step("a wrong address is a typed error", async () => {
    await assert.rejects(
      readApprovedMeasurements(chain.client, chain.contracts.escrow),
      (e: unknown) => e instanceof ChainReadError && e.reason === "call_failed",
    );
  });
});
