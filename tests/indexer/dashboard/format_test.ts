import assert from "node:assert/strict";
import {
  exactTokens,
  formatCount,
  formatDuration,
  formatShare,
  formatTokens,
  formatUnixTime,
  shortAddress,
  tokensAsNumber,
  tokensTitle,
} from "../../../indexer/dashboard/src/format.ts";

const E18 = 10n ** 18n;

Deno.test("formatTokens: whole tokens, exact bigint rounding, half up", () => {
  const cases: [string, string][] = [
    ["0", "0"],
    [E18.toString(), "1"],
    [(3n * E18 / 2n).toString(), "1.5"],
    ["1234567890000000000000", "1,234.57"],
    ["1234564999999999999999", "1,234.56"], // just below the half: down
    ["1234565000000000000000", "1,234.57"], // the half: up
    ["999949999999999999", "0.9999"], // 0.9999|4999…: four significant digits, down
    ["999950000000000000", "1"], // 0.9999|5: up, to a whole token
    ["120000000000000", "0.00012"],
    ["123456789000000", "0.0001235"],
    ["1", "0.000000000000000001"],
    ["5", "0.000000000000000005"],
    [(10n ** 30n).toString(), "1,000,000,000,000"],
    [
      (2n ** 256n - 1n).toString(),
      "115,792,089,237,316,195,423,570,985,008,687,907,853,269,984,665,640,564,039,457.58",
    ],
  ];
  for (const [units, shown] of cases) assert.equal(formatTokens(units), shown, units);
});

Deno.test("exactTokens and tokensTitle keep every digit", () => {
  assert.equal(exactTokens("1500000000000000001"), "1.500000000000000001");
  assert.equal(exactTokens("1000000000000000000000"), "1000");
  assert.equal(exactTokens("7"), "0.000000000000000007");
  assert.equal(exactTokens("0"), "0");
  assert.equal(
    tokensTitle("116055494975597845961118"),
    "116055.494975597845961118 tokens (116055494975597845961118 units)",
  );
});

Deno.test("formatting refuses what is not an unsigned decimal integer", () => {
  for (const bad of ["", "-1", "1.5", "0x10", "01", " 1", "1e3"]) {
    assert.throws(() => formatTokens(bad), RangeError, bad);
    assert.throws(() => exactTokens(bad), RangeError, bad);
  }
});

Deno.test("counts, shares, durations, times, addresses, chart numbers", () => {
  assert.equal(formatCount(0), "0");
  assert.equal(formatCount(1234567), "1,234,567");
  assert.equal(formatCount("131072"), "131,072");
  assert.equal(formatShare("5500", "6000"), "91.7 %");
  assert.equal(formatShare("1", "3"), "33.3 %");
  assert.equal(formatShare("2", "3"), "66.7 %");
  assert.equal(formatShare("6000", "6000"), "100.0 %");
  assert.equal(formatShare("0", "0"), "—");
  assert.equal(formatDuration("3600"), "1 h");
  assert.equal(formatDuration("86400"), "1 d");
  assert.equal(formatDuration("90"), "90 s");
  assert.equal(formatDuration("120"), "2 min");
  assert.equal(formatUnixTime("1900000000"), "2030-03-17T17:46:40Z");
  assert.equal(shortAddress("0x062ac3a1b4b8326f354a308deca24d2b48a41356"), "0x062a…1356");
  assert.equal(tokensAsNumber("1500000000000000000"), 1.5);
});
