/**
 * A child process for the kill-loop test: writes `gateways.json` in the given directory as the
 * daemon does (`saveGatewayCache`, atomic), as fast as it can, with a different set each time,
 * until it is killed. It prints `writing` once the first write is done.
 *
 * Usage: deno run -A tests/daemon/gateway/_cache_writer.ts <dir>
 *
 * @module
 */

import { saveGatewayCache } from "../../../daemon/gateway/gateway_cache.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";

if (import.meta.main) {
  const path = `${Deno.args[0]}/gateways.json`;
  for (let round = 0;; round++) {
    const set = new GatewaySet();
    for (let i = 0; i < 1 + (round % 40); i++) {
      set.markReached(`http://10.0.${i}.${round % 250}:8701`);
    }
    await saveGatewayCache(path, set);
    if (round === 0) console.log("writing");
  }
}
