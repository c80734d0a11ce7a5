/**
 * `deno task demo` as a user runs it: it must come up, and the commands it prints must work
 * when pasted into a shell. Runs with ephemeral ports so it cannot collide with anything.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function hasCurl(): boolean {
  try {
    return new Deno.Command("curl", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** The shell commands of the demo's "Try these" block (continuation lines joined). */
function printedCommands(output: string): string[] {
  const block = output.slice(
    output.indexOf("Try these"),
    output.indexOf("Ctrl-C stops everything."),
  );
  const commands: string[] = [];
  let current = "";
  for (const raw of block.split("\n").slice(1)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    current += line.endsWith("\\") ? `${line.slice(0, -1)} ` : line;
    if (!line.endsWith("\\")) {
      commands.push(current);
      current = "";
    }
  }
  return commands;
}

const curl = hasCurl();
if (!curl) console.warn("SKIPPED: the demo's printed commands use curl, which is not installed");

Deno.test({
  name: "`deno task demo` comes up and every command it prints works",
  ignore: !curl,
  async fn() {
    const stateDir = await Deno.makeTempDir();
    const child = new Deno.Command(Deno.execPath(), {
      args: ["task", "demo", "--ports", "ephemeral", "--state-dir", stateDir],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let output = "";
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const stderr = new Response(child.stderr).text();
    try {
      while (!output.includes("demo: ready")) {
        const { done, value } = await reader.read();
        if (done) {
          throw new Error(`the demo exited before it was ready:\n${output}\n${await stderr}`);
        }
        output += value;
      }
      const commands = printedCommands(output);
      assert.ok(
        commands.length >= 10,
        `expected the printed commands, found:\n${commands.join("\n")}`,
      );
      const results: { command: string; out: string }[] = [];
      for (const command of commands) {
        const run = await new Deno.Command("sh", {
          args: ["-c", command.replace(/^curl -s(N?) /, "curl -s$1 -w '\\nHTTP %{http_code}' ")],
          stdout: "piped",
          stderr: "piped",
        }).output();
        const out = new TextDecoder().decode(run.stdout);
        assert.ok(run.success, `${command}\nfailed: ${new TextDecoder().decode(run.stderr)}`);
        results.push({ command, out });
      }
      const find = (part: string) => results.filter((r) => r.command.includes(part));
      const [chat, stream, tee] = find("/v1/chat/completions");
      assert.match(chat.out, /You said: \\"Hello, network!\\"/);
      assert.match(chat.out, /HTTP 200$/);
      assert.match(stream.out, /data: \[DONE\]/);
      assert.match(tee.out, /"code":"attestation_mock"/);
      assert.match(tee.out, /HTTP 502$/);
      assert.match(find("/api/chat")[0].out, /"done":true/);
      assert.match(find("npm:openai")[0].out, /You said: "Hi from the SDK"/);
      assert.match(find("npm:ollama")[0].out, /You said: "Hi from ollama-js"/);
      assert.match(find("/v1/verdicts")[0].out, /"outcome":"accepted"/);
      assert.match(find("/v1/gateways")[0].out, /"gateways":\[/);
      assert.match(find("/stats")[0].out, /"live_verified":3/);
      assert.match(find("/models")[0].out, /"model":"devnet\/echo"/);
      assert.match(find("/providers")[0].out, /HTTP 200$/);
    } finally {
      child.kill("SIGTERM");
      const status = await child.status;
      for (let r = await reader.read(); !r.done; r = await reader.read()) output += r.value;
      await stderr;
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
      assert.equal(status.code, 0, output);
      assert.match(output, /demo: stopped/);
    }
  },
});
