/**
 * The shared conformance suite: one table of behaviours that every chat dialect must share,
 * run against the OpenAI dialect (`/v1/chat/completions`) and the Ollama dialect (`/api/chat`,
 * and `/api/generate` where the case applies). Each dialect says how to build a valid request
 * and how to read an error from a response or from the end of a stream; the cases are written
 * once. Handler level: a `Request` in, a `Response` out, no port.
 */

import assert from "node:assert/strict";
import {
  DAEMON_ERROR_STATUS,
  DaemonError,
  type DaemonErrorCode,
} from "../../../daemon/core/daemon_error.ts";
import { MODEL_ID_FORMAT } from "../../../daemon/core/model_id.ts";
import { ndjson, post, sseData, surface, type SurfaceFixture } from "../_surface.ts";
import type { TestBackendOptions } from "../_test_backend.ts";

interface ReadError {
  status: number;
  message: string;
  /** OpenAI only: the `code` (Ollama errors carry only a message). */
  code?: string | null;
  param?: string | null;
}

interface Dialect {
  readonly name: string;
  readonly path: string;
  /** Whether the dialect has a `messages` field. */
  readonly hasMessages: boolean;
  body(model: string, stream: boolean): Record<string, unknown>;
  readError(response: Response): Promise<ReadError>;
  /** Reads a streamed body; returns the error at its end, or null when it ended normally. */
  readStream(response: Response): Promise<{ contentPieces: number; error: ReadError | null }>;
}

const openai: Dialect = {
  name: "openai",
  path: "/v1/chat/completions",
  hasMessages: true,
  body: (model, stream) => ({
    model,
    stream,
    messages: [{ role: "user", content: "hello there world" }],
  }),
  async readError(response) {
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    const body = await response.json();
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(typeof body.error.message, "string");
    assert.equal(
      body.error.type,
      response.status === 403
        ? "permission_error"
        : response.status < 500
        ? "invalid_request_error"
        : "server_error",
    );
    return {
      status: response.status,
      message: body.error.message,
      code: body.error.code,
      param: body.error.param,
    };
  },
  async readStream(response) {
    assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
    const events = sseData(await response.text());
    let contentPieces = 0;
    for (const [i, data] of events.entries()) {
      if (data === "[DONE]") {
        assert.equal(i, events.length - 1, "[DONE] is the last event");
        return { contentPieces, error: null };
      }
      const value = JSON.parse(data);
      if (value.error) {
        assert.equal(i, events.length - 1, "the error is the last event");
        return {
          contentPieces,
          error: {
            status: response.status,
            message: value.error.message,
            code: value.error.code,
            param: value.error.param,
          },
        };
      }
      if (value.choices?.[0]?.delta?.content) contentPieces++;
    }
    throw new Error("the stream ended without [DONE] and without an error");
  },
};

function ollamaDialect(endpoint: "chat" | "generate"): Dialect {
  return {
    name: `ollama ${endpoint}`,
    path: `/api/${endpoint}`,
    hasMessages: endpoint === "chat",
    body: (model, stream) =>
      endpoint === "chat"
        ? { model, stream, messages: [{ role: "user", content: "hello there world" }] }
        : { model, stream, prompt: "hello there world" },
    async readError(response) {
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      const body = await response.json();
      assert.deepEqual(Object.keys(body), ["error"]);
      assert.equal(typeof body.error, "string");
      return { status: response.status, message: body.error };
    },
    async readStream(response) {
      assert.equal(response.headers.get("content-type"), "application/x-ndjson");
      const lines = ndjson(await response.text());
      let contentPieces = 0;
      for (const [i, line] of lines.entries()) {
        if (line.error !== undefined) {
          assert.equal(i, lines.length - 1, "the error is the last line");
          assert.deepEqual(Object.keys(line), ["error"]);
          return { contentPieces, error: { status: response.status, message: String(line.error) } };
        }
        if (line.done === true) {
          assert.equal(i, lines.length - 1, "done:true is the last line");
          return { contentPieces, error: null };
        }
        const piece = endpoint === "chat"
          ? (line.message as { content: string }).content
          : line.response;
        if (piece) contentPieces++;
      }
      throw new Error("the stream ended without done:true and without an error");
    },
  };
}

const DIALECTS: readonly Dialect[] = [openai, ollamaDialect("chat"), ollamaDialect("generate")];
const MODEL = "net/verified/devnet/tiny-chat";

async function call(
  fixture: SurfaceFixture,
  request: Request,
): Promise<Response> {
  return await fixture.handler(request);
}

function expectError(
  dialect: Dialect,
  error: ReadError,
  expected: { status: number; code: DaemonErrorCode; includes?: string | RegExp; param?: string },
): void {
  assert.equal(error.status, expected.status, `${dialect.name}: ${error.message}`);
  if (dialect === openai) {
    assert.equal(error.code, expected.code);
    if (expected.param) assert.equal(error.param, expected.param);
  }
  if (typeof expected.includes === "string") {
    assert.ok(
      error.message.includes(expected.includes),
      `${dialect.name}: ${JSON.stringify(error.message)} should include ${expected.includes}`,
    );
  } else if (expected.includes) {
    assert.match(error.message, expected.includes);
  }
}

for (const dialect of DIALECTS) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`conformance [${dialect.name}]: ${name}`, fn);

  test("a valid request streams and ends normally, and non-streaming answers 200", async () => {
    const fixture = surface();
    const streamed = await call(fixture, post(dialect.path, dialect.body(MODEL, true)));
    assert.equal(streamed.status, 200);
    const { contentPieces, error } = await dialect.readStream(streamed);
    assert.equal(error, null);
    assert.equal(contentPieces, 4, "Echo: hello there world, one word per chunk");
    const whole = await call(fixture, post(dialect.path, dialect.body(MODEL, false)));
    assert.equal(whole.status, 200);
    await whole.body?.cancel();
    assert.equal(fixture.backend.chats.length, 2);
  });

  test("malformed JSON is a 400 that says so", async () => {
    const fixture = surface();
    for (const body of ['{"model": "net/verified/devnet/tiny-chat",', "", "[1,2]", '"text"']) {
      const response = await call(fixture, post(dialect.path, body));
      expectError(dialect, await dialect.readError(response), {
        status: 400,
        code: "invalid_request_error",
        includes: "Cannot parse the request body",
      });
    }
    const notUtf8 = new Request(`http://127.0.0.1:11435${dialect.path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    });
    expectError(dialect, await dialect.readError(await call(fixture, notUtf8)), {
      status: 400,
      code: "invalid_request_error",
      includes: "UTF-8",
    });
    assert.equal(fixture.backend.chats.length, 0);
  });

  test("a bad model id is a 400 naming the expected format", async () => {
    const fixture = surface();
    const bad: unknown[] = [
      "llama3",
      "llama3:latest",
      "net/gold/devnet/tiny-chat",
      "net/verified/devnet/tiny-chat:7b",
      "net/verified/devnet",
      "net/verified/devnet/tiny chat",
      "NET/verified/devnet/tiny-chat",
      42,
      null,
    ];
    for (const model of bad) {
      const response = await call(fixture, post(dialect.path, dialect.body(model as string, true)));
      expectError(dialect, await dialect.readError(response), {
        status: 400,
        code: "invalid_request_error",
        includes: MODEL_ID_FORMAT,
        param: "model",
      });
    }
    const missing = dialect.body(MODEL, true);
    delete missing.model;
    expectError(
      dialect,
      await dialect.readError(await call(fixture, post(dialect.path, missing))),
      {
        status: 400,
        code: "invalid_request_error",
        includes: '"model"',
        param: "model",
      },
    );
    assert.equal(fixture.backend.chats.length, 0);
  });

  test("the model id is accepted with and without :latest", async () => {
    const fixture = surface();
    for (const model of [MODEL, `${MODEL}:latest`, "net/tee/devnet/tiny-chat:latest"]) {
      const response = await call(fixture, post(dialect.path, dialect.body(model, false)));
      assert.equal(response.status, 200, model);
      await response.body?.cancel();
    }
    assert.deepEqual(
      fixture.backend.chats.map((c) => [c.request.tier, c.request.model]),
      [["verified", "devnet/tiny-chat"], ["verified", "devnet/tiny-chat"], [
        "tee",
        "devnet/tiny-chat",
      ]],
    );
  });

  if (dialect.hasMessages) {
    test("missing or malformed messages are a 400 naming the field", async () => {
      const fixture = surface();
      const cases: [unknown, string][] = [
        [undefined, "messages"],
        ["hello", "messages"],
        [{ role: "user" }, "messages"],
        [[42], "messages[0]"],
        [[{ content: "hi" }], "messages[0].role"],
        [[{ role: "user", content: 7 }], "messages[0].content"],
      ];
      for (const [messages, param] of cases) {
        const body = dialect.body(MODEL, true);
        if (messages === undefined) delete body.messages;
        else body.messages = messages;
        const response = await call(fixture, post(dialect.path, body));
        expectError(dialect, await dialect.readError(response), {
          status: 400,
          code: "invalid_request_error",
          includes: param,
          param,
        });
      }
      assert.equal(fixture.backend.chats.length, 0);
    });
  }

  test("a body over the limit is a 413, with or without Content-Length", async () => {
    const fixture = surface({}, { maxBodyBytes: 1024 });
    const body = dialect.body(MODEL, true);
    (body as { padding?: string }).padding = "x".repeat(2000);
    const declared = await call(fixture, post(dialect.path, body));
    expectError(dialect, await dialect.readError(declared), {
      status: 413,
      code: "request_too_large",
      includes: "1 KiB",
    });
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    const undeclared = new Request(`http://127.0.0.1:11435${dialect.path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 100) controller.enqueue(bytes.slice(i, i + 100));
          controller.close();
        },
      }),
    });
    assert.equal(undeclared.headers.get("content-length"), null);
    expectError(dialect, await dialect.readError(await call(fixture, undeclared)), {
      status: 413,
      code: "request_too_large",
    });
    const small = dialect.body(MODEL, false);
    const ok = await call(fixture, post(dialect.path, small));
    assert.equal(ok.status, 200, "a body under the limit passes");
    await ok.body?.cancel();
  });

  test("a foreign Host header is refused before anything else (DNS rebinding)", async () => {
    const fixture = surface();
    for (const host of ["evil.example:11435", "127.0.0.1:8080", "localhost", "127.0.0.2:11435"]) {
      const response = await call(
        fixture,
        post(dialect.path, dialect.body(MODEL, true), { host }),
      );
      expectError(dialect, await dialect.readError(response), {
        status: 403,
        code: "forbidden_host",
        includes: "127.0.0.1:11435",
      });
    }
    for (const host of ["127.0.0.1:11435", "LOCALHOST:11435", "[::1]:11435"]) {
      const response = await call(
        fixture,
        post(dialect.path, dialect.body(MODEL, false), { host }),
      );
      assert.equal(response.status, 200, host);
      await response.body?.cancel();
    }
    assert.equal(fixture.backend.chats.length, 3);
  });

  test("a browser Origin is refused unless allowed", async () => {
    const fixture = surface();
    const refused = await call(
      fixture,
      post(dialect.path, dialect.body(MODEL, true), { origin: "https://evil.example" }),
    );
    expectError(dialect, await dialect.readError(refused), {
      status: 403,
      code: "forbidden_origin",
      includes: "https://evil.example",
    });
    assert.equal(refused.headers.get("access-control-allow-origin"), null);
    assert.equal(fixture.backend.chats.length, 0);

    const allowing = surface({}, { allowedOrigins: ["http://localhost:*"] });
    const allowed = await call(
      allowing,
      post(dialect.path, dialect.body(MODEL, false), { origin: "http://localhost:3000" }),
    );
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get("access-control-allow-origin"), "http://localhost:3000");
    await allowed.body?.cancel();
    const other = await call(
      allowing,
      post(dialect.path, dialect.body(MODEL, false), { origin: "http://localhost.evil.example" }),
    );
    assert.equal(other.status, 403);
    await other.body?.cancel();
  });

  test("an unknown model is a 404 in Ollama's wording", async () => {
    const fixture = surface();
    const model = "net/tee/acme/big-model:latest";
    const response = await call(fixture, post(dialect.path, dialect.body(model, true)));
    expectError(dialect, await dialect.readError(response), {
      status: 404,
      code: "model_not_found",
      includes: `model '${model}' not found`,
    });
  });

  test("a GET on the chat endpoint is a 405 with Allow", async () => {
    const fixture = surface();
    const response = await call(
      fixture,
      new Request(`http://127.0.0.1:11435${dialect.path}`),
    );
    assert.equal(response.headers.get("allow"), "POST");
    expectError(dialect, await dialect.readError(response), {
      status: 405,
      code: "method_not_allowed",
    });
  });

  const backendCodes: DaemonErrorCode[] = [
    "no_gateway",
    "no_provider",
    "attestation_failed",
    "attestation_mock",
    "attestation_stale",
    "decryption_failed",
    "stream_truncated",
    "provider_error",
    "timeout",
  ];
  const CRYPTO: DaemonErrorCode[] = [
    "attestation_failed",
    "attestation_mock",
    "attestation_stale",
    "decryption_failed",
    "stream_truncated",
  ];
  const secret = "step 3 of 7: AEAD tag mismatch at chunk 5 with key 0xdeadbeef";

  test("every backend code before the first chunk has its status, code and no secrets", async () => {
    for (const code of backendCodes) {
      for (const stream of [true, false]) {
        const fixture = surface({ failBefore: new DaemonError(code, `Refused: ${secret}`) });
        const response = await call(fixture, post(dialect.path, dialect.body(MODEL, stream)));
        const error = await dialect.readError(response);
        expectError(dialect, error, { status: DAEMON_ERROR_STATUS[code], code });
        if (CRYPTO.includes(code)) {
          assert.ok(!error.message.includes("AEAD"), `${code} must not reveal the step`);
          assert.equal(fixture.logged.length, 1, "the full error is logged");
        } else {
          assert.ok(error.message.includes(secret), "non-crypto messages pass through");
        }
        assert.equal(response.headers.get("x-net-provider"), null);
      }
    }
  });

  test("every backend code after the first chunk ends the stream with an in-stream error", async () => {
    for (const code of backendCodes) {
      const fixture = surface({
        failAfter: { chunks: 3, error: new DaemonError(code, `Failed: ${secret}`) },
      });
      const response = await call(fixture, post(dialect.path, dialect.body(MODEL, true)));
      assert.equal(response.status, 200, "the stream had started");
      assert.equal(
        response.headers.get("x-net-provider"),
        "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
      );
      const { contentPieces, error } = await dialect.readStream(response);
      assert.equal(contentPieces, 2, "the two words before the failure were delivered");
      assert.ok(error, `${code}: the stream must end with an error`);
      if (dialect === openai) assert.equal(error.code, code);
      assert.equal(CRYPTO.includes(code), !error.message.includes("AEAD"), code);
      assert.ok(fixture.backend.chats[0].closed, "the backend's stream was closed");
    }
  });

  test("a backend failure mid-reply of a non-streaming request is an HTTP error", async () => {
    const fixture = surface({
      failAfter: { chunks: 3, error: new DaemonError("stream_truncated", "cut") },
    });
    const response = await call(fixture, post(dialect.path, dialect.body(MODEL, false)));
    expectError(dialect, await dialect.readError(response), {
      status: 502,
      code: "stream_truncated",
    });
  });

  test("an unexpected error is a logged, generic 500, before and during the stream", async () => {
    const internals = new Error("TypeError in sealer.ts:42 with key material 0xfeed");
    const options: TestBackendOptions[] = [
      { failBefore: internals },
      { failAfter: { chunks: 2, error: internals } },
    ];
    for (const [i, backendOptions] of options.entries()) {
      const fixture = surface(backendOptions);
      const response = await call(fixture, post(dialect.path, dialect.body(MODEL, true)));
      const error = i === 0
        ? await dialect.readError(response)
        : (await dialect.readStream(response)).error!;
      expectError(dialect, error, {
        status: i === 0 ? 500 : 200,
        code: "internal_error",
        includes: "the details are in its log",
      });
      assert.ok(!error.message.includes("sealer"), "internals never leak");
      assert.equal(fixture.logged.length, 1);
      assert.equal(fixture.logged[0].error, internals);
    }
  });

  test("a reply that breaks the chunk contract is a provider_error", async () => {
    const base = { id: "x", object: "chat.completion.chunk", created: 1, model: "m" };
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    const finish = { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] };
    const cases: [string, unknown[]][] = [
      ["no usage", [finish]],
      ["no finish", [{ ...base, choices: [], usage }]],
      ["content not a string", [{ ...base, choices: [{ index: 0, delta: { content: 5 } }] }]],
      ["second choice", [{ ...base, choices: [{ index: 1, delta: { content: "a" } }] }]],
      ["choices not an array", [{ ...base, choices: {} }]],
      ["chunk not an object", ["data"]],
      ["negative usage", [finish, {
        ...base,
        choices: [],
        usage: { ...usage, prompt_tokens: -1 },
      }]],
      ["error chunk", [{ error: { message: "CUDA out of memory" } }]],
    ];
    for (const [label, rawChunks] of cases) {
      const fixture = surface({ rawChunks });
      const response = await call(fixture, post(dialect.path, dialect.body(MODEL, false)));
      const error = await dialect.readError(response);
      expectError(dialect, error, { status: 502, code: "provider_error" });
      assert.equal(fixture.logged.length, 0, label);
    }
  });

  test("a buffered reply over maxReplyBytes is a provider_error; the provider is cut off at once", async () => {
    const base = { id: "x", object: "chat.completion.chunk", created: 1, model: "m" };
    const piece = (delta: Record<string, unknown>) => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: null }],
    });
    const end = [
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      { ...base, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
    ];
    // "é" is 2 bytes in UTF-8: 6 × 10 bytes + 4 = 64 bytes, in 34 UTF-16 code units.
    const exactly64 = [
      ...Array(6).fill(piece({ content: "é".repeat(5) })),
      piece({ content: "abcd" }),
    ];
    const fits = surface({ rawChunks: [...exactly64, ...end] }, { maxReplyBytes: 64 });
    const ok = await call(fits, post(dialect.path, dialect.body(MODEL, false)));
    assert.equal(ok.status, 200, "a reply of exactly maxReplyBytes is served");
    await ok.body?.cancel();

    const cases: [string, unknown[], number][] = [
      ["one byte too many (UTF-8 bytes, not characters)", [...exactly64, ...end], 63],
      ["endless content", Array(1000).fill(piece({ content: "0123456789" })), 64],
      ["endless reasoning", Array(1000).fill(piece({ reasoning_content: "0123456789" })), 64],
      [
        "endless tool-call arguments",
        [
          piece({ tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "" } }] }),
          ...Array(1000).fill(
            piece({ tool_calls: [{ index: 0, function: { arguments: "[1,2,3]," } }] }),
          ),
        ],
        64,
      ],
    ];
    for (const [label, rawChunks, maxReplyBytes] of cases) {
      const fixture = surface({ rawChunks }, { maxReplyBytes });
      const response = await call(fixture, post(dialect.path, dialect.body(MODEL, false)));
      expectError(dialect, await dialect.readError(response), {
        status: 502,
        code: "provider_error",
        includes: /maxReplyBytes/,
      });
      const [chat] = fixture.backend.chats;
      assert.ok(chat.signal.aborted, `${label}: the backend is aborted`);
      assert.ok(chat.closed, `${label}: the provider's stream is closed`);
    }
  });

  test("a reply served in another tier than asked is refused (fail closed)", async () => {
    const fixture = surface({ served: { tier: "verified" } });
    const response = await call(
      fixture,
      post(dialect.path, dialect.body("net/tee/devnet/tiny-chat", true)),
    );
    expectError(dialect, await dialect.readError(response), {
      status: 500,
      code: "internal_error",
    });
    assert.match(String(fixture.logged[0].error), /backend contract broken/);
  });
}
