import assert from "node:assert/strict";
import { ProviderReputation } from "../../../daemon/network/provider_reputation.ts";

const A = "0x00000000000000000000000000000000000000aa";
const B = "0x00000000000000000000000000000000000000bb";
const C = "0x00000000000000000000000000000000000000cc";

/** A clock the test moves by hand. */
function manualClock(start = Date.parse("2026-11-22T12:00:00Z")) {
  let now = start;
  return {
    clock: () => new Date(now),
    advance(ms: number) {
      now += ms;
    },
  };
}

/** Floating-point equality to 12 digits. */
function near(actual: number, expected: number, label: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-12, `${label}: ${actual}, expected ${expected}`);
}

Deno.test("reputation: an unknown provider scores ½ (the prior: one success, one failure)", () => {
  const reputation = new ProviderReputation();
  assert.equal(reputation.score(A), 0.5);
  reputation.record(B, false);
  assert.equal(reputation.score(A), 0.5, "another provider's record does not move it");
});

Deno.test("reputation: successes raise the score, failures lower it, by the success rate", () => {
  const { clock } = manualClock();
  const reputation = new ProviderReputation({ clock });
  const table: [boolean[], number][] = [
    [[true], 2 / 3],
    [[true, true], 3 / 4],
    [[true, true, true, true, true, true, true, true], 9 / 10],
    [[false], 1 / 3],
    [[false, false, false], 1 / 5],
    [[true, false], 1 / 2],
    [[false, true, true], 3 / 5],
  ];
  table.forEach(([outcomes, expected], i) => {
    const provider = `0x${String(i + 1).padStart(40, "0")}`;
    let previous = reputation.score(provider);
    for (const served of outcomes) {
      reputation.record(provider, served);
      const score = reputation.score(provider);
      if (served) assert.ok(score > previous, `a success raised ${previous} to ${score}`);
      else assert.ok(score < previous, `a failure lowered ${previous} to ${score}`);
      previous = score;
    }
    near(reputation.score(provider), expected, outcomes.join(","));
  });
});

Deno.test("reputation: counts halve every half-life of the injected clock", () => {
  const time = manualClock();
  const reputation = new ProviderReputation({ clock: time.clock, halfLifeMs: 1000 });
  for (let i = 0; i < 4; i++) reputation.record(A, false);
  near(reputation.score(A), 1 / 6, "4 failures");
  time.advance(1000);
  near(reputation.score(A), 1 / 4, "one half-life: 2 failures left");
  time.advance(1000);
  near(reputation.score(A), 1 / 3, "two half-lives: 1 failure left");
  time.advance(500);
  near(reputation.score(A), 1 / (2 + 0.5 ** 2.5 * 4), "half of a half-life more");
  time.advance(60_000);
  assert.ok(Math.abs(reputation.score(A) - 0.5) < 1e-9, "old failures are forgiven");

  // A record after decay adds to what is left, not to the old counts.
  const fresh = manualClock();
  const other = new ProviderReputation({ clock: fresh.clock, halfLifeMs: 1000 });
  other.record(B, true);
  other.record(B, true);
  fresh.advance(1000); // 2 successes → 1
  other.record(B, false); // 1 success, 1 failure
  near(other.score(B), 1 / 2, "decayed successes, then a failure");
  fresh.advance(1000); // 0.5 and 0.5
  near(other.score(B), 1 / 2, "both halve together");
});

Deno.test("reputation: reading the score does not restart the decay; a clock going back does not grow counts", () => {
  const time = manualClock();
  const reputation = new ProviderReputation({ clock: time.clock, halfLifeMs: 1000 });
  reputation.record(A, false);
  reputation.record(A, false);
  for (let i = 0; i < 4; i++) {
    time.advance(250);
    reputation.score(A);
  }
  near(reputation.score(A), 1 / 3, "after one half-life, read four times on the way");
  time.advance(-5000);
  near(reputation.score(A), 1 / 4, "a clock set back counts as no time passed");
});

Deno.test("reputation: the default half-life is 10 minutes", () => {
  const time = manualClock();
  const reputation = new ProviderReputation({ clock: time.clock });
  reputation.record(A, false);
  reputation.record(A, false);
  time.advance(600_000);
  near(reputation.score(A), 1 / 3, "2 failures halved once");
});

Deno.test("reputation: beyond its capacity the least recently recorded provider is forgotten", () => {
  const { clock } = manualClock();
  const reputation = new ProviderReputation({ clock, capacity: 2 });
  reputation.record(A, false);
  reputation.record(B, false);
  reputation.record(C, false);
  assert.equal(reputation.score(A), 0.5, "A, recorded first, was evicted");
  near(reputation.score(B), 1 / 3, "B kept");
  near(reputation.score(C), 1 / 3, "C kept");

  // Recording again makes a provider the most recent: B is evicted next, not C.
  reputation.record(C, true);
  reputation.record(A, false);
  assert.equal(reputation.score(B), 0.5, "B was the least recently recorded");
  near(reputation.score(C), 1 / 2, "C kept its failure and its success");
  near(reputation.score(A), 1 / 3, "A starts over from the prior");

  // Reading a score does not count as recording it.
  reputation.score(C);
  reputation.record(B, true);
  assert.equal(reputation.score(C), 0.5, "C evicted although it was read last");
});

// `halfLifeMs: 0` made every score NaN (0/0 in the decay), which `rank()` neither counts as
// reliable nor orders consistently; `capacity: NaN` turned the memory bound off. Bad values are
// refused at the door instead.
Deno.test("reputation: a bad half-life or capacity is refused at the door, with the value", () => {
  const bad: [string, ConstructorParameters<typeof ProviderReputation>[0], RegExp][] = [
    ["zero half-life", { halfLifeMs: 0 }, /halfLifeMs must be a positive finite number.*found 0/],
    ["negative half-life", { halfLifeMs: -1 }, /halfLifeMs.*found -1/],
    ["NaN half-life", { halfLifeMs: Number.NaN }, /halfLifeMs.*found NaN/],
    ["infinite half-life", { halfLifeMs: Infinity }, /halfLifeMs.*found Infinity/],
    ["zero capacity", { capacity: 0 }, /capacity must be a positive integer.*found 0/],
    ["fractional capacity", { capacity: 1.5 }, /capacity.*found 1.5/],
    ["NaN capacity", { capacity: Number.NaN }, /capacity.*found NaN/],
  ];
  for (const [label, options, message] of bad) {
    assert.throws(() => new ProviderReputation(options), (error: unknown) => {
      assert.ok(error instanceof RangeError, `${label}: got ${error}`);
      assert.match(error.message, message, label);
      return true;
    });
  }
  const edge = new ProviderReputation({ halfLifeMs: 1, capacity: 1 });
  edge.record(A, true);
  assert.ok(edge.score(A) > 0.5);
});
