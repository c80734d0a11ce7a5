import assert from "node:assert/strict";
import {
  createLogger,
  LOG_FORMATS,
  type LogFields,
  type LoggerOptions,
  type LogLevel,
  type LogSink,
  MAX_FIELD_CHARS,
} from "../../io/log.ts";
import { NetError } from "../../errors.ts";

const AT = new Date("2030-03-17T05:15:00.000Z");

function capture(options: LoggerOptions = {}) {
  const lines: [LogLevel, string][] = [];
  const log = createLogger({
    clock: () => AT,
    write: (line, level) => lines.push([level, line]),
    ...options,
  });
  return { log, lines, text: () => lines.map(([, line]) => line) };
}

Deno.test("human lines are today's lines, fields appended as key=value", () => {
  const { log, text } = capture({ name: "indexer" });
  log.warn("indexer: not serving: Cannot reach the chain at http://127.0.0.1:8545");
  log.info("indexer: first snapshot", {
    block: 4321n,
    live_verified: 33,
    ok: true,
    note: "two words",
    none: null,
  });
  assert.deepEqual(text(), [
    "indexer: not serving: Cannot reach the chain at http://127.0.0.1:8545",
    'indexer: first snapshot block=4321 live_verified=33 ok=true note="two words" none=null',
  ]);
});

Deno.test("JSON lines: time, level, message, logger, then the fields; bigints exact", () => {
  const { log, text } = capture({ format: "json", name: "daemon" });
  log.with({ request_id: "r-1" }).info("daemon: relayed", { tokens: 2n ** 70n, ms: 12.5 });
  const [line] = text();
  assert.equal(
    line,
    '{"time":"2030-03-17T05:15:00.000Z","level":"info","message":"relayed","logger":"daemon",' +
      '"request_id":"r-1","tokens":"1180591620717411303424","ms":12.5}',
  );
  assert.deepEqual(Object.keys(JSON.parse(line)).slice(0, 4), [
    "time",
    "level",
    "message",
    "logger",
  ]);
  assert.deepEqual(LOG_FORMATS, ["human", "json"]);
});

Deno.test("levels: below the threshold nothing is written; each line says its level", () => {
  const { log, lines } = capture({ level: "warn", format: "json" });
  log.debug("d");
  log.info("i");
  log.warn("w");
  log.error("e");
  assert.deepEqual(lines.map(([level, line]) => [level, JSON.parse(line).level]), [
    ["warn", "warn"],
    [
      "error",
      "error",
    ],
  ]);
  assert.equal(capture({ level: "debug" }).log.debug("x"), undefined);
  assert.throws(
    () => createLogger({ level: "verbose" as LogLevel }),
    /the level "verbose" is not one of/,
  );
  assert.throws(
    () => createLogger({ format: "xml" as "json" }),
    /the format "xml" is not one of human, json/,
  );
});

Deno.test("errors: name, message, code, causes; the stack only at level error", () => {
  class SealError extends NetError {
    override readonly name = "SealError" as const;
    readonly reason = "bad_key";
  }
  const error = new SealError("Cannot seal: the key is malformed", {
    cause: new TypeError("expected 32 bytes, found 31"),
  });
  const json = capture({ format: "json" });
  json.log.warn("sealing failed", { provider: "0x11" }, error);
  json.log.error("sealing failed", {}, error);
  const [warn, failed] = json.text().map((line) => JSON.parse(line));
  assert.deepEqual(
    [warn.error_name, warn.error_message, warn.error_code, warn.error_cause, warn.error_stack],
    [
      "SealError",
      "Cannot seal: the key is malformed",
      "bad_key",
      "TypeError: expected 32 bytes, found 31",
      undefined,
    ],
  );
  assert.match(failed.error_stack, /^at /);
  const human = capture();
  human.log.errorLogger()("daemon: internal error", error);
  const [line, ...frames] = human.text()[0].split("\n");
  assert.equal(
    line,
    "daemon: internal error: SealError: Cannot seal: the key is malformed (bad_key); " +
      "caused by TypeError: expected 32 bytes, found 31",
  );
  assert.ok(frames.length > 0 && frames.every((f) => f.startsWith("    at ")), frames.join("\n"));
  const thrown = capture({ format: "json" });
  thrown.log.warn("odd", {}, "a string was thrown");
  assert.equal(JSON.parse(thrown.text()[0]).error_message, "a string was thrown");
});

Deno.test("no request or reply content can be logged: objects, content fields and long strings", () => {
  const { log, text } = capture({ format: "json" });
  const request = new Request("http://127.0.0.1/v1/chat/completions", {
    method: "POST",
    body: "secret",
  });
  const sneaky = {
    request,
    messages: [{ role: "user", content: "secret prompt" }],
    headers: { authorization: "secret" },
    body: "secret body",
    Prompt: "secret",
    content: "secret",
    fn: () => "secret",
    long: "x".repeat(10_000),
    "Weird-Name": 1,
    level: "forged",
  } as unknown as LogFields;
  log.info("request", sneaky);
  const line = text()[0];
  assert.doesNotMatch(line, /secret/);
  const record = JSON.parse(line);
  assert.equal(record.request, "[omitted: object]");
  assert.equal(record.messages, "[omitted: content field]");
  assert.equal(record.headers, "[omitted: object]");
  assert.equal(record.body, "[omitted: content field]");
  assert.equal(record.field_prompt, "[omitted: content field]");
  assert.equal(record.fn, "[omitted: function]");
  assert.equal(record.long.length, MAX_FIELD_CHARS + "…(9744 more characters)".length);
  assert.equal(record.field_weird_name, 1);
  assert.equal(record.level, "info", "a field cannot overwrite the line's own keys");
  assert.equal(record.field_level, "forged");
});

Deno.test("a value cannot forge a human line: line breaks and control characters are escaped", () => {
  const { log, text } = capture();
  log.warn("indexer: router failed\nindexer: all good", {
    url: "http://x/\r\nfake: line",
    tab: "a\tb",
  });
  // A message's line break starts an indented line (start-up errors read as written); a
  // field's is escaped. No line but the first starts at column 0.
  assert.deepEqual(text(), [
    'indexer: router failed\n    indexer: all good url="http://x/\\r\\nfake: line" tab="a\\tb"',
  ]);
  const lines = text()[0].split("\n");
  assert.equal(lines.length, 2);
  assert.ok(lines.slice(1).every((line) => line.startsWith("    ")));
  log.error("indexer: bad\r\nindexer: forged\u0007");
  assert.equal(text()[1], "indexer: bad\n    indexer: forged\\u0007");
});

Deno.test("the line logger fits the refresher's (message) => void, at the level asked", () => {
  const { log, lines } = capture({ format: "json", name: "indexer" });
  log.lineLogger()("indexer: rescanning settlements from block 0: reorg");
  log.lineLogger("info")("indexer: serving again");
  assert.deepEqual(lines.map(([level, line]) => [level, JSON.parse(line).message]), [
    ["warn", "rescanning settlements from block 0: reorg"],
    ["info", "serving again"],
  ]);
});

Deno.test("the sink writes each line at its level, with its fields and error", () => {
  const { log, lines } = capture({ format: "json", name: "indexer" });
  const sink = log.sink();
  sink("indexer: settlement history: this process is now the writer", { level: "info" });
  sink("indexer: not serving: the chain is unreachable", {
    level: "warn",
    fields: { code: "chain_unreachable" },
  });
  sink("indexer: unexpected refresh failure", { level: "error", error: new TypeError("boom") });
  sink("indexer: no level given");
  const records = lines.map(([level, line]) => [level, JSON.parse(line)] as const);
  assert.deepEqual(records.map(([level, r]) => [level, r.level, r.message]), [
    ["info", "info", "settlement history: this process is now the writer"],
    ["warn", "warn", "not serving: the chain is unreachable"],
    ["error", "error", "unexpected refresh failure"],
    ["warn", "warn", "no level given"],
  ]);
  assert.equal(records[1][1].code, "chain_unreachable");
  assert.equal(records[2][1].error_name, "TypeError");
  assert.match(records[2][1].error_stack, /at /);
  // A plain (message) => void is a sink too: the components' tests collect lines with one.
  const collected: string[] = [];
  const plain: LogSink = (message) => collected.push(message);
  plain("indexer: serving", { level: "info" });
  assert.deepEqual(collected, ["indexer: serving"]);
});

Deno.test("the default writer writes whole lines to stderr", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { createLogger } from "${new URL("../../io/log.ts", import.meta.url)}";
       const log = createLogger({ format: "json" });
       for (let i = 0; i < 3; i++) log.info("line", { i });`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stdout), "");
  const lines = new TextDecoder().decode(out.stderr).trimEnd().split("\n");
  assert.deepEqual(lines.map((line) => JSON.parse(line).i), [0, 1, 2]);
});
