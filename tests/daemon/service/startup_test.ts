/**
 * Found by review: configurations the daemon accepts and then crashes on.
 *
 * 1. The daemon cannot start when bound to every interface. `docs/daemon.md` tells Open
 *    WebUI-in-Docker users to run it with `--bind 0.0.0.0:11435 --allowed-hosts
 *    host.docker.internal`. `createDaemon` passes `http://<bind host>:<port>` to the gateway
 *    resolver as its own URL (`self`, so gossip cannot make the daemon its own gateway), and
 *    `GatewaySet` refuses an unspecified address in any gateway URL, `self` included. So with
 *    `--bind 0.0.0.0:…` or `--bind [::]:…`, `createDaemon` throws `GatewaySetError` — in
 *    `main.ts` after the socket is already listening, as an uncaught error with a stack trace
 *    (`deno run -A daemon/main.ts --bind 0.0.0.0:0`).
 *
 * 2. A pinned gateway that `GatewaySet` refuses (link-local, unspecified, reserved, e.g. the
 *    cloud metadata address `http://169.254.169.254`) passes `parseDaemonConfig`, whose
 *    `parseGateway` checks only scheme, credentials, query and fragment; the refusal comes
 *    later from `createDaemon` as an uncaught `GatewaySetError` (exit code 1 with a stack
 *    trace, not the documented exit code 2 with a message naming `--gateway`).
 *
 * The tests guard the fixes.
 */

import assert from "node:assert/strict";
import { parseDaemonConfig } from "../../../daemon/service/config.ts";
import { SettingError } from "../../../settings/mod.ts";
import { createDaemon } from "../../../daemon/service/daemon.ts";

for (const bind of ["0.0.0.0:11435", "[::]:11435"]) {
  Deno.test(`the daemon starts with --bind ${bind} (the documented Docker setup)`, async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "net-review-" });
    let daemon: ReturnType<typeof createDaemon> | undefined;
    try {
      const parsed = parseDaemonConfig(
        ["--bind", bind, "--allowed-hosts", "host.docker.internal", "--data-dir", dataDir],
        {},
      );
      assert.ok(!parsed.help);
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
      // The daemon writes its API key into the data directory in the background: waited for
      // before the directory is removed (else the removal can meet a file being created).
      await daemon?.apiKey.catch(() => {});
      await daemon?.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
}

Deno.test("a pinned gateway that can never be used is a configuration error naming --gateway", () => {
  for (
    const gateway of ["http://169.254.169.254", "http://0.0.0.0:8701", "http://[fe80::1]:8701"]
  ) {
    assert.throws(
      () => parseDaemonConfig(["--gateway", gateway, "--data-dir", "/tmp/unused"], {}),
      (error: unknown) => error instanceof SettingError && /--gateway/.test(error.message),
      `--gateway ${gateway} was accepted by the configuration (createDaemon throws later)`,
    );
  }
});
