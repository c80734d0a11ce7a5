/**
 * `deno task demo` as a user runs it: it must come up, and the commands it prints must work
 * when pasted into a shell. Runs with ephemeral ports so it cannot collide with anything.
 *
 * Each printed command gets a deadline ({@linkcode COMMAND_DEADLINE_MS}): past it, the command
 * and everything it started are killed and the test fails naming it. The commands that need the
 * npm registry (`npx`, `npm:`) are skipped, with a `SKIPPED:` line, when the registry does not
 * answer; the curl commands still run.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { waitFor } from "../_wait.ts";

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

function hasCommand(name: string): boolean {
  try {
    return new Deno.Command("sh", {
      args: ["-c", `command -v ${name}`],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
  } catch {
    return false;
  }
}

/** Time allowed to each printed command. */
const COMMAND_DEADLINE_MS = 120_000;
/** Time allowed to the npm registry to answer before its commands are skipped. */
const REGISTRY_TIMEOUT_MS = 5_000;

/** Whether the npm registry answers at all (any status), within {@linkcode REGISTRY_TIMEOUT_MS}. */
async function npmRegistryAnswers(): Promise<boolean> {
  try {
    const response = await fetch("https://registry.npmjs.org/", {
      signal: AbortSignal.timeout(REGISTRY_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** Whether a printed command needs the npm registry. */
function needsNpm(command: string): boolean {
  return /\bnpx\b|npm:/.test(command);
}

/** With `setsid`, a command runs in its own process group, so a deadline kills all of it. */
const SETSID = hasCommand("setsid");

/**
 * Runs a shell command, killing it (and, with `setsid`, everything it started) past
 * `deadlineMs`.
 *
 * @throws {Error} naming the command and the deadline when it is passed.
 */
async function runWithDeadline(
  command: string,
  deadlineMs: number,
): Promise<{ success: boolean; stdout: string; stderr: string }> {
  const child = new Deno.Command(SETSID ? "setsid" : "sh", {
    args: SETSID ? ["sh", "-c", command] : ["-c", command],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<"expired">((resolve) => {
    timer = setTimeout(() => resolve("expired"), deadlineMs);
  });
  const result = await Promise.race([output, expired]);
  clearTimeout(timer);
  if (result === "expired") {
    try {
      Deno.kill(SETSID ? -child.pid : child.pid, "SIGKILL");
    } catch { /* already gone */ }
    await output;
    throw new Error(
      `this printed command did not finish within ${
        deadlineMs / 1000
      } s and was killed: ${command}`,
    );
  }
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { success: result.success, stdout: text(result.stdout), stderr: text(result.stderr) };
}

Deno.test("a printed command past its deadline is killed, with everything it started, and named", async () => {
  const command = "sleep 30 | cat; echo never";
  await assert.rejects(
    runWithDeadline(command, 200),
    (error: Error) => {
      assert.match(error.message, /did not finish within 0\.2 s and was killed: sleep 30 \| cat/);
      return true;
    },
  );
  const done = await runWithDeadline("echo fine", 10_000);
  assert.deepEqual(done, { success: true, stdout: "fine\n", stderr: "" });
});

/**
 * Runs a printed command (a curl one reporting its status). A 503 from the indexer says its
 * snapshot is not fresh now (on a busy machine a refresh can take longer than its interval):
 * the command is run again once the service's `/health` says it serves, as a user would.
 */
async function runUntilServed(command: string) {
  const curlCommand = command.replace(/^curl -s(N?) /, "curl -s$1 -w '\\nHTTP %{http_code}' ");
  for (;;) {
    const run = await runWithDeadline(curlCommand, COMMAND_DEADLINE_MS);
    // The indexer's commands: its data routes.
    const origin = /^curl .*?(http:\/\/127\.0\.0\.1:\d+)\/(stats|models|providers|epochs)\b/
      .exec(command)?.[1];
    if (!run.success || !run.stdout.endsWith("HTTP 503") || !origin) return run;
    await waitFor(`${origin} to serve again`, async () => {
      const health = await fetch(`${origin}/health`);
      await health.body?.cancel();
      return health.status === 200 ? true : undefined;
    });
  }
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
      const npm = await npmRegistryAnswers();
      const results: { command: string; out: string }[] = [];
      for (const command of commands) {
        if (needsNpm(command) && !npm) {
          console.warn(
            `SKIPPED: ${command.slice(0, 80)}… (npm registry unreachable: ` +
              `https://registry.npmjs.org/ did not answer within ${REGISTRY_TIMEOUT_MS / 1000} s)`,
          );
          continue;
        }
        const run = await runUntilServed(command);
        assert.ok(run.success, `${command}\nfailed: ${run.stderr}`);
        results.push({ command, out: run.stdout });
      }
      const find = (part: string) => results.filter((r) => r.command.includes(part));
      const [chat, stream, tee] = find("/v1/chat/completions");
      assert.match(chat.out, /You said: \\"Hello, network!\\"/);
      assert.match(chat.out, /HTTP 200$/);
      assert.match(stream.out, /data: \[DONE\]/);
      assert.match(tee.out, /"code":"attestation_mock"/);
      assert.match(tee.out, /HTTP 403$/);
      assert.match(find("/api/chat")[0].out, /"done":true/);
      const [embed] = find("/v1/embeddings");
      const embeddings = JSON.parse(embed.out.replace(/\nHTTP \d+$/, ""));
      // As many components as the printed command asks for, for each of its two inputs.
      const dimensions = Number(/"dimensions":(\d+)/.exec(embed.command)?.[1]);
      assert.ok(dimensions > 0, embed.command);
      assert.deepEqual(
        embeddings.data.map((d: { embedding: number[] }) => d.embedding.length),
        [dimensions, dimensions],
      );
      // Two different texts: two different vectors.
      assert.notDeepEqual(embeddings.data[0].embedding, embeddings.data[1].embedding);
      assert.match(find("/v1/responses")[0].out, /"object":"response"/);
      assert.match(find("/v1/responses")[0].out, /Hello from the Responses API/);
      if (npm) {
        assert.match(find("npm:openai")[0].out, /You said: "Hi from the SDK"/);
        assert.match(find("npm:ollama")[0].out, /You said: "Hi from ollama-js"/);
      }
      assert.match(find("/v1/verdicts")[0].out, /"outcome":"accepted"/);
      // The daemon pays with vouchers from the consumer the demo funded; the top-up works.
      assert.match(find("/v1/account")[0].out, /"available":"[1-9][0-9]*"/);
      assert.match(find("/v1/usage")[0].out, /"cost":"[1-9][0-9]*"/);
      assert.match(find("devnet/deposit.ts")[0].out, /deposit: 1 deposited for 0x[0-9a-f]{40}/);
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
