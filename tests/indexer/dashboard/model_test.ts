import assert from "node:assert/strict";
import {
  formatValue,
  historyOf,
  lacksHistory,
  lookup,
  modelColumns,
  NOT_SYNCED,
  providerColumns,
  providerHistory,
  sparkOf,
  summaryFigures,
  valueOf,
} from "../../../indexer/dashboard/src/model.ts";
import type { Model, Provider, Stats } from "../../../indexer/dashboard/src/types.ts";

const E18 = 10n ** 18n;

Deno.test("a value carries its field, its exact value, its text and its hover text", () => {
  const body = { staked_security: (3n * E18 / 2n).toString(), list: [1, 2, 3], none: null };
  assert.deepEqual(valueOf(body, "staked_security", "tokens"), {
    field: "staked_security",
    value: "1500000000000000000",
    format: "tokens",
    text: "1.5",
    title: "1.5 tokens (1500000000000000000 units)",
  });
  assert.equal(lookup(body, "list.length"), 3);
  assert.equal(lookup(body, "none.deeper"), undefined);
  assert.deepEqual(valueOf(body, "none", "reputation"), {
    field: "none",
    value: "null",
    format: "reputation",
    text: "—",
    title: "",
  });
  assert.equal(formatValue("price", "84800000000000"), "0.0000848");
  assert.equal(formatValue("reputation", "0.1429"), "0.14");
  assert.equal(formatValue("rate", "21.25"), "21.3");
  assert.equal(formatValue("address", "0x062ac3a1b4b8326f354a308deca24d2b48a41356"), "0x062a…1356");
});

Deno.test("settled volume the history has not caught up with is said so, not shown as zero", () => {
  const stats = {
    providers: { registered: 3, bonded: 2, live_verified: 1 },
    validators: 1,
    staked_security: "0",
    min_provider_bond: "0",
    routers: { total: 1, reachable: 1 },
    tee_measurements: [],
    capacity: { max_concurrency: 1, available_concurrency: 0 },
    models: 0,
    settlements: { amount: null, tokens: null, count: null },
  } as unknown as Stats;
  const settled = summaryFigures(stats).find((figure) => figure.key === "settled")!;
  assert.deepEqual(settled.parts, ["not yet synced: the settlement history is catching up"]);
  // Unknown figures in the tables say so too, never a zero.
  const row = {
    provider: "0x1111111111111111111111111111111111111111",
    settled: null,
    reputation: null,
  } as unknown as Provider;
  const columns = providerColumns(() => null, false);
  const cell = (header: string) => columns.find((c) => c.header === header)!;
  assert.deepEqual(cell("Settled per epoch").cell(row), [NOT_SYNCED]);
  assert.equal(cell("Settled per epoch").spark!(row), null);
  assert.deepEqual(cell("Settled in all (tokens)").cell(row), [NOT_SYNCED]);
  assert.deepEqual(cell("Reputation").cell(row), [NOT_SYNCED]);
  // Synced, a null reputation is "none yet" (no epoch finished): a dash.
  const synced = providerColumns(() => null, true).find((c) => c.header === "Reputation")!;
  assert.equal((synced.cell(row)[0] as { text: string }).text, "—");
  const model = { model: "a/b", reputation: null } as unknown as Model;
  assert.deepEqual(modelColumns(false).find((c) => c.header === "Reputation")!.cell(model), [
    NOT_SYNCED,
  ]);
});

Deno.test("a provider's sparkline: its epochs oldest first, with the exact amounts as text", () => {
  const provider = {
    provider: "0x1111111111111111111111111111111111111111",
    settled: {
      epochs: [
        { epoch: "6", amount: "0", tokens: "0", settlements: 0 },
        { epoch: "5", amount: (2n * E18).toString(), tokens: "9", settlements: 1 },
      ],
    },
  } as unknown as Provider;
  assert.deepEqual(sparkOf(providerHistory(provider)), {
    values: [2, 0],
    label: "Settled per epoch, in tokens: epoch 5 2, epoch 6 0",
  });
  assert.equal(providerHistory({ ...provider, settled: null }), null);
  assert.equal(sparkOf([]), null);
  const columns = providerColumns(providerHistory);
  assert.equal(columns.filter((column) => column.spark).length, 1);
  assert.deepEqual(columns.map((c) => c.header).slice(0, 3), [
    "Provider",
    "Tier",
    "Stake (tokens)",
  ]);
});

Deno.test("a provider's history from /providers/{address}: the latest epochs, gaps as zeros", () => {
  // Newest first, as the page asks for it (`order=desc`): paid epochs only.
  const paid = [30, 29, 25, 20, 14, 13, 3].map((epoch) => ({
    epoch: String(epoch),
    amount: String(epoch * 10),
    tokens: "1",
    settlements: 1,
  }));
  const history = historyOf({ settled: { epochs: paid } })!;
  assert.deepEqual(
    history.map((e) => `${e.epoch}:${e.amount}`),
    Array.from({ length: 16 }, (_, i) => {
      const epoch = 15 + i;
      return `${epoch}:${[30, 29, 25, 20].includes(epoch) ? epoch * 10 : 0}`;
    }),
  );
  // Oldest first gives the same; a short history is filled back to epoch 0.
  assert.deepEqual(historyOf({ settled: { epochs: [...paid].reverse() } }), history);
  assert.deepEqual(
    historyOf({ settled: { epochs: [paid[6]] } })!.map((e) => e.epoch),
    ["0", "1", "2", "3"],
  );
  assert.deepEqual(historyOf({ settled: { epochs: [] } }), []);
  assert.equal(historyOf({ settled: { epochs: null } }), null, "not synced");
  assert.equal(historyOf({ settled: { epochs: [{ epoch: 1 }] } }), null);
  assert.equal(historyOf({}), null);
  const row = { provider: "0x1", settled: { total: null } } as unknown as Provider;
  assert.equal(lacksHistory(row), true);
  assert.equal(lacksHistory({ ...row, settled: null }), false, "null: the history is catching up");
  assert.equal(lacksHistory({ ...row, settled: { epochs: [] } }), false);
});
