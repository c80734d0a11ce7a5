import assert from "node:assert/strict";
import { encodeSse, parseSse, SseError, type SseEvent, SseParser } from "../../io/sse.ts";

async function collect(chunks: (string | Uint8Array)[], maxEventBytes?: number) {
  const enc = new TextEncoder();
  const body = ReadableStream.from(chunks.map((c) => typeof c === "string" ? enc.encode(c) : c));
  const out: SseEvent[] = [];
  for await (const event of parseSse(body, { maxEventBytes })) out.push(event);
  return out;
}

Deno.test("parses events with every line ending, comments and fields", async () => {
  const events = await collect([
    ": comment\n",
    "data: one\r\n\r\n",
    "event: x\rdata:two\rdata:  lines\r\r",
    "id: 7\ndata\n\n",
    "retry: 10\n\n",
    "data: unterminated",
  ]);
  assert.deepEqual(events, [
    { data: "one", event: undefined, id: undefined },
    { data: "two\n lines", event: "x", id: undefined },
    { data: "", event: undefined, id: "7" },
  ]);
});

Deno.test("a byte order mark is dropped at the start of the stream only", async () => {
  // The mark split across chunks, and U+FEFF again inside the data, where it stays.
  const events = await collect([
    Uint8Array.of(0xef, 0xbb),
    Uint8Array.of(0xbf),
    "data: \ufeffx\n\n",
  ]);
  assert.deepEqual(events.map((event) => event.data), ["\ufeffx"]);
});

Deno.test("the same stream split at every byte gives the same events", async () => {
  const text = 'data: {"a":1}\r\n\r\ndata: é ü 😀\n\ndata: [DONE]\n\n';
  const bytes = new TextEncoder().encode(text);
  const whole = await collect([bytes]);
  assert.equal(whole.length, 3);
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await collect([bytes.slice(0, cut), bytes.slice(cut)]), whole, `cut ${cut}`);
  }
});

Deno.test("encodeSse round-trips, multi-line data included", async () => {
  const data = ['{"x":"y"}', "a\nb", "[DONE]"];
  const events = await collect([...data.map((d) => encodeSse(d)), encodeSse("z", "error")]);
  assert.deepEqual(events.map((e) => e.data), [...data, "z"]);
  assert.equal(events[3].event, "error");
});

Deno.test("an oversized event or line is refused", async () => {
  await assert.rejects(
    collect(["data: " + "x".repeat(100) + "\n", "data: y\n\n"], 64),
    SseError,
  );
  await assert.rejects(collect(["data: " + "x".repeat(5000)], 1024), SseError);
});

Deno.test("a 1 MiB event arriving in 64-byte chunks is parsed whole", async () => {
  const MiB = 1024 * 1024;
  const data = "x".repeat(MiB - 1) + "é"; // the 2-byte character is split across chunks
  const bytes = new TextEncoder().encode(`data: ${data}\r\n\r\ndata: next\n\n`);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 64) chunks.push(bytes.slice(at, at + 64));
  const events = await collect(chunks, 2 * MiB);
  assert.equal(events.length, 2);
  assert.equal(events[0].data.length, MiB);
  assert.equal(events[0].data, data);
  assert.equal(events[1].data, "next");
});

Deno.test("SseParser: any three pieces of a stream give the same events, CR and CRLF included", () => {
  // LF-only stretches take the parser's native split; a CR anywhere, a CR at the end of a
  // piece (its LF in the next) or a line left unfinished take the character-by-character one.
  const text =
    'data: {"a":1}\n\ndata: x\r\n\r\n: c\ndata: y\rdata: z\r\rid: 9\ndata\n\ndata: é\n\n';
  const expected: SseEvent[] = [
    { data: '{"a":1}', event: undefined, id: undefined },
    { data: "x", event: undefined, id: undefined },
    { data: "y\nz", event: undefined, id: undefined },
    { data: "", event: undefined, id: "9" },
    { data: "é", event: undefined, id: "9" }, // the last event id stays, as the standard says
  ];
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i <= bytes.length; i++) {
    for (let j = i; j <= bytes.length; j++) {
      const parser = new SseParser();
      const events = [
        ...parser.push(bytes.slice(0, i)),
        ...parser.push(bytes.slice(i, j)),
        ...parser.push(bytes.slice(j)),
        ...parser.end(),
      ];
      assert.deepEqual(events, expected, `pieces cut at ${i} and ${j}`);
    }
  }
});

Deno.test("SseParser: an unfinished line past the limit is refused on the native split too", () => {
  const parser = new SseParser({ maxEventBytes: 64 });
  assert.deepEqual(parser.push(new TextEncoder().encode("data: a\n\n")), [
    { data: "a", event: undefined, id: undefined },
  ]);
  assert.throws(
    () => parser.push(new TextEncoder().encode("data: b\n\ndata: " + "x".repeat(100))),
    SseError,
  );
});
