import assert from "node:assert/strict";
import { expectedNetwork, planNetwork } from "../../../devnet/seed.ts";
import {
  emissionSeries,
  type Schedule,
  scheduledReward,
  scheduledTotal,
  volumeSeries,
} from "../../../indexer/dashboard/src/series.ts";
import type { Stats } from "../../../indexer/dashboard/src/types.ts";

const E18 = 10n ** 18n;

function stats(emission: Partial<Stats["emission"]>, cap = 6000n * E18): Stats {
  return {
    emission: {
      total_emitted: "0",
      cap: cap.toString(),
      current_epoch: "7",
      current_epoch_reward: "0",
      emitted_epochs: "7",
      schedule: {
        rule: "halving",
        genesis_time: "0",
        epoch_length: "3600",
        initial_reward: (1000n * E18).toString(),
        halving_interval: "4",
      },
      ...emission,
    },
  } as Stats;
}

Deno.test("the schedule: halvings and the cap, worked out by hand", () => {
  const s: Schedule = { initial: 1000n, interval: 4n, cap: 6000n };
  assert.deepEqual(
    [0n, 3n, 4n, 7n, 8n, 1023n, 1024n].map((e) => scheduledReward(s, e)),
    [1000n, 1000n, 500n, 500n, 250n, 1000n >> 255n, 0n],
  );
  // 4 × 1000 + 3 × 500 = 5500 after seven epochs; the eighth reaches the cap (6000).
  assert.equal(scheduledTotal(s, 0n), 0n);
  assert.equal(scheduledTotal(s, 7n), 5500n);
  assert.equal(scheduledTotal(s, 8n), 6000n);
  assert.equal(scheduledTotal(s, 10_000n), 6000n);
  // Uncapped, the integer halvings end at zero: 4 × (1000 + 500 + 250 + … + 3 + 1) = 4 × 1994.
  assert.equal(scheduledTotal({ ...s, cap: 10n ** 30n }, 10n ** 12n), 7976n);
});

Deno.test("the schedule agrees with the devnet's emission (an independent computation)", () => {
  const plan = planNetwork({ providers: 12, settledEpochs: 6 });
  const emission = expectedNetwork(plan).state.emission;
  const schedule = {
    initial: emission.schedule.initialReward,
    interval: emission.schedule.halvingInterval,
    cap: emission.cap,
  };
  assert.equal(scheduledTotal(schedule, emission.emittedEpochs), emission.totalEmitted);
  assert.equal(scheduledReward(schedule, emission.currentEpoch), emission.currentEpochReward);
});

Deno.test("emission over epochs: emitted, then scheduled from where it ends, and each reward", () => {
  const series = emissionSeries(stats({}));
  assert.deepEqual(series.epochs, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(series.emitted, [1000, 2000, 3000, 4000, 4500, 5000, 5500, null]);
  assert.deepEqual(series.scheduled, [null, null, null, null, null, null, 5500, 6000]);
  assert.deepEqual(series.reward, [1000, 1000, 1000, 1000, 500, 500, 500, 500]);
  // `/epochs`' own rewards win where given.
  const withRewards = emissionSeries(stats({}), new Map([["7", (123n * E18).toString()]]));
  assert.equal(withRewards.reward[7], 123);
  // A cap of 5200 stops the totals there.
  assert.deepEqual(emissionSeries(stats({}, 5200n * E18)).emitted.slice(4), [
    4500,
    5000,
    5200,
    null,
  ]);
});

Deno.test("a long history is sampled to at most the points asked for, the last epoch kept", () => {
  const series = emissionSeries(
    stats({ current_epoch: "100000", emitted_epochs: "99999" }),
    new Map(),
    240,
  );
  assert.ok(series.epochs.length <= 241, `${series.epochs.length} points`);
  assert.equal(series.epochs[0], 0);
  assert.equal(series.epochs.at(-1), 100000);
  assert.equal(series.scheduled.at(-1), 6000);
});

Deno.test("settled volume per epoch is sorted by epoch, whatever the answer's order", () => {
  const rows = [
    { epoch: "10", amount: (5n * E18).toString(), tokens: "1", settlements: 2 },
    { epoch: "9", amount: (3n * E18 / 2n).toString(), tokens: "1", settlements: 1 },
  ];
  assert.deepEqual(volumeSeries(rows), {
    epochs: [9, 10],
    amount: [1.5, 5],
    settlements: [1, 2],
    signed: [0, 0],
    payers: [0, 0],
  });
  assert.deepEqual(
    volumeSeries([{ ...rows[0], signed_amount: "500000000000000000", paying_consumers: 3 }]).payers,
    [3],
  );
});
