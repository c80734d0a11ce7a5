/**
 * The HTTP layer on a small service: routing, 404/405/OPTIONS/HEAD from the route table,
 * validation of path, query and body against the declared schemas (each refusal naming the
 * field), the strict body reader in front of the schema, request ids, the generated document
 * (OpenAPI 3.1, strict Ajv), and the route-table check failing for a route without a
 * declaration.
 */

import assert from "node:assert/strict";
import type { Context } from "hono";
import {
  createService,
  defineRoute,
  HttpRequestError,
  json,
  type Service,
  z,
} from "../../http/mod.ts";
import { OpenApiChecker } from "../_openapi.ts";
import { assertRoutesDocumented, liveOperations } from "../_routes.ts";
import { okJson } from "../_http.ts";

const Error = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
const errors = {
  400: { description: "Bad request", content: json(Error) },
  404: { description: "No such path", content: json(Error) },
  405: { description: "Wrong method", content: json(Error) },
  413: { description: "Body too large", content: json(Error) },
};

const received: unknown[] = [];

function renderError(error: unknown, _c: Context): Response {
  if (error instanceof HttpRequestError) {
    const headers = error.allow.length ? { allow: error.allow.join(", ") } : undefined;
    return Response.json(
      { error: { code: error.reason, message: error.shortMessage, field: error.field } },
      { status: error.status, headers },
    );
  }
  return Response.json({ error: { code: "internal", message: "failed" } }, { status: 500 });
}

function service(middleware = []): Service {
  return createService({
    info: { title: "test", version: "1.0.0" },
    maxBodyBytes: 1024,
    middleware,
    renderError,
    commonResponses: errors,
    routes: [
      defineRoute({
        method: "get",
        path: "/items",
        summary: "Lists items",
        query: z.object({
          limit: z.coerce.number().int().min(1).max(10).optional(),
          tag: z.string().regex(/^[a-z]+$/).optional(),
        }).strict(),
        responses: {
          200: { description: "Items", content: json(z.object({ limit: z.number() })) },
        },
        handler: (c, { query }) => c.json({ limit: query.limit ?? 10 }),
      }),
      defineRoute({
        method: "post",
        path: "/items",
        summary: "Adds an item",
        body: {
          schema: z.object({
            name: z.string().min(1),
            role: z.enum(["user", "assistant"]),
            content: z.union([z.string(), z.array(z.object({ text: z.string() }).strict())]),
          }).strict(),
        },
        responses: { 200: { description: "Added", content: json(z.object({ ok: z.boolean() })) } },
        handler: (c, { body }) => {
          received.push(body);
          return c.json({ ok: true });
        },
      }),
      defineRoute({
        method: "get",
        path: "/items/{id:.+}",
        summary: "One item, its id may contain slashes",
        params: z.object({ id: z.string().max(20) }),
        responses: {
          200: { description: "The item", content: json(z.object({ id: z.string() })) },
        },
        handler: (c, { params }) => c.json({ id: params.id }),
      }),
    ],
  });
}

const base = "http://127.0.0.1:1";
const post = (body: BodyInit, headers: Record<string, string> = {}) =>
  new Request(`${base}/items`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });

Deno.test("routes answer with their validated input", async () => {
  const s = service();
  assert.deepEqual(await okJson(s.fetch(new Request(`${base}/items?limit=3`))), {
    limit: 3,
  });
  assert.deepEqual(await okJson(s.fetch(new Request(`${base}/items/a/b/c`))), {
    id: "a/b/c",
  });
  const ok = await s.fetch(post('{"name":"x","role":"user","content":[{"text":"hi"}]}'));
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  for (const type of ["application/json; charset=utf-8", "application/vnd.api+json"]) {
    const typed = await s.fetch(post('{"name":"x","role":"user","content":"hi"}', {
      "content-type": type,
    }));
    assert.equal(typed.status, 200, type);
    await typed.body?.cancel();
  }
});

Deno.test("a JSON route refuses a body that does not say it is JSON: 415, nothing handled", async () => {
  const s = service();
  const before = received.length;
  const body = '{"name":"x","role":"user","content":"hi"}';
  for (
    const [type, found] of [
      ["text/plain;charset=UTF-8", '"text/plain"'],
      ["application/x-www-form-urlencoded", '"application/x-www-form-urlencoded"'],
      ["multipart/form-data; boundary=x", '"multipart/form-data"'],
      [undefined, "missing"],
    ] as const
  ) {
    const request = new Request(`${base}/items`, { method: "POST", body });
    if (type) request.headers.set("content-type", type);
    else request.headers.delete("content-type");
    const refused = await s.fetch(request);
    assert.equal(refused.status, 415, String(type));
    const error = (await refused.json()).error;
    assert.equal(error.code, "unsupported_media_type");
    assert.equal(
      error.message,
      `Cannot read the request: its Content-Type is ${found}; expected application/json`,
    );
  }
  assert.equal(received.length, before, "the handler received nothing");
});

Deno.test("404 for unknown paths, 405 with Allow, OPTIONS with Allow, HEAD for GET", async () => {
  const s = service();
  const missing = await s.fetch(new Request(`${base}/nope`));
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, "not_found");
  const wrong = await s.fetch(new Request(`${base}/items`, { method: "DELETE" }));
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "GET, HEAD, POST");
  await wrong.body?.cancel();
  const options = await s.fetch(new Request(`${base}/items/x`, { method: "OPTIONS" }));
  assert.equal(options.status, 204);
  assert.equal(options.headers.get("allow"), "GET, HEAD, OPTIONS");
  const head = await s.fetch(new Request(`${base}/items?limit=2`, { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
});

Deno.test("every refusal is a 400 that names the field; the handler receives nothing", async () => {
  const s = service();
  received.length = 0;
  const cases: [string, Request, string | null, RegExp][] = [
    [
      "query out of range",
      new Request(`${base}/items?limit=99`),
      "limit",
      /at most 10; found "99"/,
    ],
    ["unknown query", new Request(`${base}/items?x=1`), "x", /not a known field/],
    [
      "query off its pattern",
      new Request(`${base}/items?tag=A1`),
      "tag",
      /must match \/\^\[a-z\]\+\$\/; found "A1"/,
    ],
    ["repeated query", new Request(`${base}/items?limit=1&limit=2`), "limit", /appears twice/],
    ["path too long", new Request(`${base}/items/${"a".repeat(30)}`), "id", /at most 20 char/],
    ["empty body", post(""), null, /empty/],
    ["not JSON", post("{"), null, /not valid JSON/],
    ["not UTF-8", post(new Uint8Array([0x7b, 0xff, 0x7d])), null, /UTF-8/],
    ["repeated key", post('{"name":"a","name":"b"}'), null, /"name" appears twice/],
    [
      "too deep",
      post(`{"content":${"[".repeat(40)}${"]".repeat(40)}}`),
      "content" + "[0]".repeat(31),
      /nested more than 32/,
    ],
    [
      "role outside the set",
      post('{"name":"a","role":"hacker","content":"x"}'),
      "role",
      /one of user, assistant; found "hacker"/,
    ],
    [
      "content null",
      post('{"name":"a","role":"user","content":null}'),
      "content",
      /a string or an array; found null/,
    ],
    [
      "content a number",
      post('{"name":"a","role":"user","content":3}'),
      "content",
      /found a number/,
    ],
    [
      "a bad part",
      post('{"name":"a","role":"user","content":[{"text":1}]}'),
      "content[0].text",
      /must be a string; found a number/,
    ],
    [
      "unknown field",
      post('{"name":"a","role":"user","content":"x","extra":1}'),
      "extra",
      /not a known field/,
    ],
    [
      "missing field",
      post('{"role":"user","content":"x"}'),
      "name",
      /must be a string; found nothing/,
    ],
    ["not an object", post("[1]"), "the body", /must be an object; found an array/],
  ];
  for (const [name, request, field, message] of cases) {
    const response = await s.fetch(request);
    assert.equal(response.status, 400, name);
    const { error } = await response.json();
    assert.equal(error.code, "invalid_request", name);
    if (field !== "the body") assert.equal(error.field, field, name);
    assert.match(error.message, message, `${name}: ${error.message}`);
  }
  assert.deepEqual(received, []);
});

Deno.test("a body over the limit is refused whether or not its length is declared", async () => {
  const s = service();
  const declared = await s.fetch(post("x".repeat(2000), { "content-length": "2000" }));
  assert.equal(declared.status, 413);
  assert.match((await declared.json()).error.message, /2 KiB, more than the limit of 1 KiB/);
  let pulled = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(new Uint8Array(512));
    },
  });
  const streamed = await s.fetch(
    new Request(`${base}/items`, {
      method: "POST",
      body: endless,
      duplex: "half",
      headers: { "content-type": "application/json" },
    } as RequestInit),
  );
  assert.equal(streamed.status, 413);
  assert.ok(pulled < 10, `read ${pulled} chunks of an endless body`);
  await streamed.body?.cancel();
});

Deno.test("an oversized URL or header block is a JSON error, not a bare status", async () => {
  const s = service();
  const long = await s.fetch(new Request(`${base}/items?limit=1&pad=${"a".repeat(9000)}`));
  assert.equal(long.status, 414);
  assert.equal((await long.json()).error.code, "url_too_long");
  const big = await s.fetch(
    new Request(`${base}/items`, { headers: { "x-pad": "a".repeat(40_000) } }),
  );
  assert.equal(big.status, 431);
  assert.match((await big.json()).error.message, /more than the limit of 32768/);
});

Deno.test("every answer carries a request id; a well-formed one from the client is kept", async () => {
  const s = service();
  const fresh = await s.fetch(new Request(`${base}/nope`));
  assert.match(fresh.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  await fresh.body?.cancel();
  const kept = await s.fetch(
    new Request(`${base}/items`, { headers: { "x-request-id": "abc-1" } }),
  );
  assert.equal(kept.headers.get("x-request-id"), "abc-1");
  assert.match(kept.headers.get("server-timing") ?? "", /total;dur=/);
  await kept.body?.cancel();
});

Deno.test("the generated document is OpenAPI 3.1, strict, and served at /openapi.json", async () => {
  const s = service();
  // deno-lint-ignore no-explicit-any
  const served: any = await okJson(s.fetch(new Request(`${base}/openapi.json`)));
  new OpenApiChecker(served);
  assert.ok(served.paths["/items/{id}"].get);
  assert.deepEqual(Object.keys(served.paths["/items"]).sort(), ["get", "post"]);
  assert.deepEqual(served, JSON.parse(JSON.stringify(s.document())));
});

Deno.test("the route-table check fails for a route mounted without a declaration", () => {
  const s = service();
  assertRoutesDocumented(s);
  s.app.get("/undeclared", (c) => c.text("no schema"));
  assert.ok(liveOperations(s).includes("GET /undeclared"));
  assert.throws(() => assertRoutesDocumented(s), /undeclared/);
});

Deno.test("two declarations of one operation are refused", () => {
  const route = defineRoute({
    method: "get",
    path: "/x",
    summary: "x",
    responses: { 200: { description: "x" } },
    handler: (c) => c.body(null),
  });
  assert.throws(
    () =>
      createService({ info: { title: "t", version: "1" }, routes: [route, route], renderError }),
    /GET \/x is declared twice/i,
  );
});
