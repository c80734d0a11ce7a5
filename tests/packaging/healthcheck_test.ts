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

Deno.test("the Dockerfile's HEALTHCHECK command exits 0 when healthy and 1 when not", async () => {
  // The very command of the image, pointed at a test server (tests bind no fixed port).
  const check = parseDockerfile(readText("Dockerfile")).find((i) => i.keyword === "HEALTHCHECK")!;
  const probe = parseProbe(execForm(check.args.replace(/^(?:--\S+ )*CMD /, "")));
  let status = 200;
  await using server = serve(() => new Response("{}", { status }));
  const target = new URL(server.url);
  const argv = probe.argv.map((arg) =>
    arg === `--allow-net=${probe.allowNet}`
      ? `--allow-net=${target.host}`
      : arg === probe.url.href
      ? `${server.url}${probe.url.pathname}`
      : arg
  );
  const run = async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: argv.slice(1),
      cwd: new URL("../../", import.meta.url),
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
  assert.match(healthy.text, /healthcheck: healthy: 200/);
  status = 503;
  const unhealthy = await run();
  assert.equal(unhealthy.code, 1, unhealthy.text);
  assert.match(unhealthy.text, /healthcheck: unhealthy: 503/);
});
