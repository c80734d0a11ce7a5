import assert from "node:assert/strict";
import { formatEther } from "viem";
import { formatCost, parseCost, usageCost, worstCaseCost } from "../../chain/cost.ts";

const prices = { input: 150_000n, output: 600_000n };

Deno.test("usageCost: exact integers, rounded down once", () => {
  assert.equal(usageCost(prices, { promptTokens: 0, completionTokens: 0 }), 0n);
  assert.equal(usageCost(prices, { promptTokens: 10, completionTokens: 20 }), 13n); // 1.5 + 12 = 13.5
  const big = { input: 10n ** 30n, output: 3n * 10n ** 30n };
  assert.equal(
    usageCost(big, { promptTokens: 2n ** 60n, completionTokens: 7 }),
    (2n ** 60n * 10n ** 30n + 7n * 3n * 10n ** 30n) / 1_000_000n,
  );
  assert.throws(() => usageCost(prices, { promptTokens: -1, completionTokens: 0 }), RangeError);
  assert.throws(() => usageCost(prices, { promptTokens: 1.5, completionTokens: 0 }), RangeError);
});

Deno.test("worstCaseCost: bytes bound the prompt, max tokens (else the context) the completion", () => {
  const ctx = 8192;
  assert.equal(
    worstCaseCost(prices, { requestBytes: 100, maxTokens: 50, contextLength: ctx }),
    usageCost(prices, { promptTokens: 100, completionTokens: 50 }),
  );
  assert.equal(
    worstCaseCost(prices, { requestBytes: 100, contextLength: ctx }),
    usageCost(prices, { promptTokens: 100, completionTokens: ctx }),
  );
  assert.equal(
    worstCaseCost(prices, { requestBytes: 10 ** 6, maxTokens: 10 ** 6, contextLength: ctx }),
    usageCost(prices, { promptTokens: ctx, completionTokens: ctx }),
  );
  assert.equal(
    worstCaseCost(prices, {
      requestBytes: 100,
      maxTokens: 50,
      contextLength: ctx,
      inputOnly: true,
    }),
    usageCost(prices, { promptTokens: 100, completionTokens: 0 }),
  );
  // Never below the cost of any usage within the bounds.
  for (let p = 0; p <= 100; p += 7) {
    for (let c = 0; c <= 50; c += 5) {
      assert.ok(
        usageCost(prices, { promptTokens: p, completionTokens: c }) <=
          worstCaseCost(prices, { requestBytes: 100, maxTokens: 50, contextLength: ctx }),
      );
    }
  }
  assert.throws(
    () => worstCaseCost(prices, { requestBytes: 1, contextLength: 0 }),
    /contextLength is 0/,
  );
});

Deno.test("formatCost / parseCost: the exact decimal form (viem's formatEther agrees)", () => {
  for (
    const amount of [0n, 1n, 13n, 10n ** 18n, 10n ** 18n + 1n, 123456789012345678901234567890n]
  ) {
    assert.equal(formatCost(amount), formatEther(amount));
    assert.equal(parseCost(formatCost(amount)), amount);
  }
  assert.equal(formatCost(1234n), "0.000000000000001234");
  for (const bad of ["", "-1", "1.", ".5", "1e3", "0.0000000000000000001", "01"]) {
    assert.throws(() => parseCost(bad), RangeError, bad);
  }
});
