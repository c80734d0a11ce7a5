/**
 * Review reproduction: the daemon cannot start when bound to every interface.
 *
 * `docs/daemon.md` tells Open WebUI-in-Docker users to run the daemon with
 * `--bind 0.0.0.0:11435 --allowed-hosts host.docker.internal`. `createDaemon` passes
 * `http://<bind host>:<port>` to the gateway resolver as its own URL (`self`, so gossip cannot
 * make the daemon its own gateway), and `GatewaySet` refuses an unspecified address in any
 * gateway URL, `self` included. So with `--bind 0.0.0.0:…` or `--bind [::]:…`, `createDaemon`
 * throws `GatewaySetError` — in `main.ts` after the socket is already listening, as an
 * uncaught error with a stack trace (`deno run -A daemon/main.ts --bind 0.0.0.0:0`).
 *
 * This test fails while the defect exists.
 */

import assert from "node:assert/strict";
import { parseDaemonConfig } from "../../daemon/config.ts";
import { createDaemon } from "../../daemon/daemon.ts";

for (const bind of ["0.0.0.0:11435", "[::]:11435"]) {
  Deno.test(`review: the daemon starts with --bind ${bind} (the documented Docker setup)`, async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "net-review-" });
    try {
      const parsed = parseDaemonConfig(
        ["--bind", bind, "--allowed-hosts", "host.docker.internal", "--data-dir", dataDir],
        {},
      );
      assert.ok(!parsed.help);
      let daemon;
      try {
        daemon = createDaemon(parsed.config, { port: 11435, bootstrap: [], log: () => {} });
      } catch (error) {
        assert.fail(`createDaemon threw: ${error instanceof Error ? error.message : error}`);
      }
      const response = await daemon.handler(
        new Request("http://host.docker.internal:11435/v1/gateways"),
      );
      assert.equal(response.status, 200);
      await response.body?.cancel();
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });
}
