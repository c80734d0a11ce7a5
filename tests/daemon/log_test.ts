/**
 * The daemon never logs a prompt or a reply. `daemon/main.ts` runs as users run it, with
 * `--log-format json` and then `human`, against a real devnet; chats carry a unique marker in
 * their prompt (the devnet's echo model answers it back, so it is in the replies too) through
 * every path that logs something: whole and streamed replies in both dialects, a refusal of trust
 * (logged with its cause), a client that leaves mid-stream (a note), a refused request body. The
 * marker must appear in no line of stdout or stderr, and not in `/metrics`; the lines about those
 * requests are there (so the test looks at real lines), and with `json` every line is one object.
 * A configuration error is written in the format the flag or the variable asks for.
 */

import assert from "node:assert/strict";
import { startDevnet } from "../../devnet/network.ts";
import { chat, startStream, words } from "./_load.ts";
import { spawnDaemon } from "./_spawn.ts";

/** Chats carrying `marker` through every path that logs; returns `/metrics`' text. */
async function chatsWithMarker(url: string, marker: string): Promise<string> {
  const content = `${marker} ${words(4)}`;
  const whole = await chat(url, { stream: false, content });
  assert.equal(whole.status, 200, whole.body);
  assert.ok(whole.body.includes(marker), `the echo model answers the marker back: ${whole.body}`);
  for (const dialect of ["openai", "ollama"] as const) {
    const streamed = await chat(url, { dialect, content });
    assert.equal(streamed.status, 200, streamed.body);
  }
  const generate = await fetch(`${url}/api/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "net/verified/devnet/echo", prompt: content, stream: false }),
  });
  assert.equal(generate.status, 200);
  await generate.body?.cancel();
  const refused = await chat(url, { model: "net/tee/devnet/echo", content, stream: false });
  assert.equal(refused.status, 403, refused.body);
  const invalid = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "net/verified/devnet/echo",
      messages: [{ role: marker, content }],
    }),
  });
  assert.equal(invalid.status, 400);
  await invalid.body?.cancel();
  // A client that leaves while the reply streams.
  const leaving = await startStream(url, { content: `${content} ${words(200)}` });
  leaving.abort.abort();
  await leaving.done.catch(() => {});
  return await (await fetch(`${url}/metrics`)).text();
}

Deno.test("no prompt or reply reaches a log line (json and human) or /metrics", async () => {
  const stateDir = await Deno.makeTempDir();
  await using devnet = await startDevnet({
    tokenDelayMs: 10,
    verifiedProviders: 1,
    teeProviders: 1,
    gateways: 1,
    stateDir,
  });
  try {
    for (const format of ["json", "human"]) {
      const marker = `MARKER${crypto.randomUUID().replaceAll("-", "")}`;
      const dataDir = await Deno.makeTempDir();
      const daemon = spawnDaemon(
        ["--bind", "127.0.0.1:0", "--network", devnet.profilePath!, "--log-format", format],
        { NET_GATEWAY: devnet.gateways[0], NET_DATA_DIR: dataDir },
      );
      try {
        const [, url] = await daemon.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
        const metrics = await chatsWithMarker(url, marker);
        assert.ok(!metrics.includes(marker), "the marker is in /metrics");
        daemon.child.kill("SIGTERM");
        assert.equal((await daemon.child.status).code, 0);
        const { stdout, stderr } = await daemon.output();
        assert.ok(!stdout.includes(marker), `${format}: the marker is on stdout:\n${stdout}`);
        assert.ok(!stderr.includes(marker), `${format}: the marker is on stderr:\n${stderr}`);
        assert.match(stderr, /refused \(attestation_mock\)/, "the refusal is logged");
        assert.match(stderr, /cancelled by the client/, "the client's leaving is noted");
        if (format === "json") {
          for (const line of `${stdout}${stderr}`.split("\n").filter((l) => l !== "")) {
            const record = JSON.parse(line);
            assert.deepEqual(Object.keys(record).slice(0, 4), [
              "time",
              "level",
              "message",
              "logger",
            ]);
            assert.equal(record.logger, "daemon");
          }
          const refusal = stderr.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
            .find((r) => r.message === "refused (attestation_mock)");
          assert.equal(refusal?.level, "warn", stderr);
          assert.equal(refusal.error_code, "attestation_mock");
        } else {
          for (const line of stdout.split("\n").filter((l) => l !== "")) {
            assert.match(line, /^daemon: /);
          }
          assert.match(stdout, /daemon: stopped/);
        }
      } finally {
        try {
          daemon.child.kill("SIGKILL");
        } catch { /* exited */ }
        await daemon.child.status;
        await Deno.remove(dataDir, { recursive: true });
      }
    }
  } finally {
    await Deno.remove(stateDir, { recursive: true });
  }
});

Deno.test("a configuration error is written in the format asked for", async () => {
  for (
    const [args, env] of [
      [["--log-format", "json", "--gateway", "http://169.254.169.254"], {}],
      [["--gateway", "http://169.254.169.254"], { NET_DAEMON_LOG_FORMAT: "json" }],
    ] as const
  ) {
    const daemon = spawnDaemon([...args], { ...env });
    assert.equal((await daemon.child.status).code, 2);
    const { stdout, stderr } = await daemon.output();
    assert.equal(stdout, "");
    const lines = stderr.split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1, stderr);
    const record = JSON.parse(lines[0]);
    assert.equal(record.level, "error");
    assert.equal(record.logger, "daemon");
    assert.match(record.message, /--gateway/);
  }
  const human = spawnDaemon(["--log-format", "yaml"], {});
  assert.equal((await human.child.status).code, 2);
  assert.match((await human.output()).stderr, /^daemon: .*--log-format/);
});
