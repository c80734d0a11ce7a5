import assert from "node:assert/strict";
import { healthcheckMain, probeHealth } from "../../packaging/healthcheck.ts";
import { closedPort, serve } from "../_http.ts";
import { execForm, parseDockerfile, parseProbe, readText } from "./_files.ts";

Deno.test("probeHealth: a 2xx is healthy; 503, refused, and no answer in time are not", async () => {
  await using ok = serve(() => Response.json({ status: "ok" }));
  await using down = serve(() => Response.json({ status: "starting" }, { status: 503 }));
  const { promise: never, resolve: release } = Promise.withResolvers<Response>();
  await using hung = serve(() => never);
  try {
    assert.deepEqual(await probeHealth(`${ok.url}/health`), {
      healthy: true,
      line: `healthy: 200 from ${ok.url}/health`,
    });
    const starting = await probeHealth(`${down.url}/health`);
    assert.equal(starting.healthy, false);
    assert.equal(starting.line, `unhealthy: 503 from ${down.url}/health: {"status":"starting"}`);
    const refused = await probeHealth(`http://127.0.0.1:${closedPort()}/health`);
    assert.equal(refused.healthy, false);
    assert.match(refused.line, /did not answer/);
    const slow = await probeHealth(`${hung.url}/health`, { timeoutMs: 100 });
    assert.equal(slow.healthy, false);
    assert.match(slow.line, /no complete answer within 100 ms/);
  } finally {
    release(new Response("late"));
  }
});

Deno.test("healthcheckMain: usage errors exit 2", async () => {
  assert.equal(await healthcheckMain([]), 2);
  assert.equal(await healthcheckMain(["not a url"]), 2);
  assert.equal(await healthcheckMain(["--timeout-ms", "soon", "http://127.0.0.1:1/"]), 2);
});

Deno.test("the Dockerfile's HEALTHCHECK command follows NET_STATS_BIND; a 503 or an unusable history store is unhealthy", async () => {
  // The very command of the image, on the bind a test server has (tests bind no fixed port).
  const check = parseDockerfile(readText("Dockerfile")).find((i) => i.keyword === "HEALTHCHECK")!;
  const probe = parseProbe(execForm(check.args.replace(/^(?:--\S+ )*CMD /, "")));
  let status = 200;
  let settlements: Record<string, unknown> = { stopped: null, failing: false, last_error: null };
  await using server = serve(() =>
    new Response(JSON.stringify({ status: "ok", settlements }), { status })
  );
  const run = async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: probe.argv.slice(1),
      cwd: new URL("../../", import.meta.url),
      env: { NET_STATS_BIND: new URL(server.url).host },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
    };
  };
  const healthy = await run();
  assert.equal(healthy.code, 0, healthy.text);
  assert.match(healthy.text, /healthcheck: healthy: 200 from http:\/\/127\.0\.0\.1:\d+\/health/);
  settlements = {
    stopped: null,
    failing: true,
    last_error: { code: "store_unavailable", message: "Permission denied" },
  };
  const noStore = await run();
  assert.equal(noStore.code, 1, noStore.text);
  assert.match(noStore.text, /unhealthy: 200 .*history store is unavailable: Permission denied/);
  settlements = { stopped: "the store is newer", failing: false, last_error: null };
  const stopped = await run();
  assert.equal(stopped.code, 1, stopped.text);
  assert.match(stopped.text, /the settlement history stopped: the store is newer/);
  status = 503;
  const unhealthy = await run();
  assert.equal(unhealthy.code, 1, unhealthy.text);
  assert.match(unhealthy.text, /healthcheck: unhealthy: 503/);
});
