/**
 * `GET /v1/account` never invents a figure: with the chain unreachable it answers
 * `503 chain_unreachable` in the OpenAI dialect; so does `GET /v1/usage` while the account (its
 * chain id, its ledger) cannot be loaded, and a bad range is a 400 naming the field.
 */

import assert from "node:assert/strict";
import { okJson } from "../../_http.ts";
import { startDaemon } from "../_e2e.ts";

Deno.test("account: the chain unreachable is 503 chain_unreachable, never a made-up balance", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close(); // nothing listens there now
  const zero = "0x0000000000000000000000000000000000000001" as const;
  await using daemon = await startDaemon({
    evm: { rpcUrl: `http://127.0.0.1:${port}`, registry: zero, staking: zero, escrow: zero },
  });
  const body = await okJson(fetch(`${daemon.url}/v1/account`), 503);
  assert.equal(body.error.code, "chain_unreachable");
  assert.match(body.error.message, /Cannot load the consumer's account/);
  const usage = await fetch(`${daemon.url}/v1/usage`);
  assert.equal(usage.status, 503, "the ledger is not opened without the chain id either");
  await usage.arrayBuffer();
  const backwards = await okJson(
    fetch(`${daemon.url}/v1/usage?from=2026-05-02&to=2026-05-01`),
    400,
  );
  assert.equal(backwards.error.param, "from");
});
