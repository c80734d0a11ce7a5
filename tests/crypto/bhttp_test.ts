import assert from "node:assert/strict";
import {
  type BhttpRequestInit,
  type BhttpResponseInit,
  BinaryHttpError,
  type BinaryHttpFailure,
  decodeRequest,
  decodeResponse,
  decodeResponseStream,
  encodeRequest,
  encodeResponse,
  encodeResponseStream,
  type FieldLines,
  type Framing,
} from "../../crypto/bhttp/mod.ts";
import { OpenError } from "../../crypto/ohttp/errors.ts";
import { readVectorJson, vectorTest } from "../_vectors.ts";
import {
  bytesOf,
  cat,
  chunksOf,
  collect,
  endless,
  hex,
  Prng,
  streamCut,
  unhex,
} from "./_helpers.ts";

const text = new TextEncoder();
const FRAMINGS: Framing[] = ["known-length", "indeterminate-length"];

function refuses(
  decode: () => unknown,
  reasons: BinaryHttpFailure | BinaryHttpFailure[],
  label: string,
): BinaryHttpError {
  const wanted = Array.isArray(reasons) ? reasons : [reasons];
  let caught: unknown;
  try {
    decode();
  } catch (error) {
    caught = error;
  }
  assert.ok(
    caught instanceof BinaryHttpError,
    `${label}: expected BinaryHttpError, got ${caught ?? "success"}`,
  );
  assert.ok(wanted.includes(caught.reason), `${label}: reason ${caught.reason}: ${caught.message}`);
  return caught;
}

/** A length-prefixed string, as RFC 9292 encodes it (lengths < 64 here). */
const str = (value: string) => bytesOf(value.length, value);

vectorTest(
  "bhttp: the messages inside the RFC 9458 example decode, and re-encode byte for byte",
  () => {
    const { rfc9458 } = readVectorJson<
      { rfc9458: { bhttp_request: string; bhttp_response: string } }
    >("ohttp.json");
    const request = decodeRequest(unhex(rfc9458.bhttp_request));
    assert.deepEqual(
      { ...request, content: [...request.content] },
      {
        framing: "known-length",
        method: "GET",
        scheme: "https",
        authority: "example.com",
        path: "/",
        headers: [],
        content: [],
        trailers: [],
      },
    );
    assert.equal(hex(encodeRequest(request, { truncate: true })), rfc9458.bhttp_request);
    const response = decodeResponse(unhex(rfc9458.bhttp_response));
    assert.equal(response.status, 200);
    assert.deepEqual(response.headers, []);
    assert.equal(hex(encodeResponse(response, { truncate: true })), rfc9458.bhttp_response);
  },
);

Deno.test("bhttp: a known-length request has the RFC 9292 §3 layout", () => {
  const request: BhttpRequestInit = {
    method: "POST",
    authority: "p.example",
    path: "/v1",
    headers: [["content-type", "text/plain"], ["x-a", "1"]],
    content: text.encode("hello"),
    trailers: [["x-t", "done"]],
  };
  const fields = cat(str("content-type"), str("text/plain"), str("x-a"), str("1"));
  const expected = cat(
    bytesOf(0), // known-length request
    str("POST"),
    str("https"),
    str("p.example"),
    str("/v1"),
    bytesOf(fields.length),
    fields,
    bytesOf(5, "hello"),
    bytesOf(9),
    str("x-t"),
    str("done"),
  );
  assert.equal(hex(encodeRequest(request)), hex(expected));
  const decoded = decodeRequest(expected);
  assert.deepEqual(decoded.headers, request.headers);
  assert.deepEqual(decoded.trailers, request.trailers);
  assert.deepEqual(decoded.content, request.content);
});

Deno.test("bhttp: an indeterminate-length response with an informational response has the §3 layout", () => {
  const response: BhttpResponseInit = {
    informational: [{ status: 103, headers: [["link", "</a>"]] }],
    status: 404,
    headers: [["content-type", "text/plain"]],
    content: text.encode("no"),
  };
  const expected = cat(
    bytesOf(3), // indeterminate-length response
    bytesOf(0x40, 103), // 103 as a 2-byte varint
    str("link"),
    str("</a>"),
    bytesOf(0),
    bytesOf(0x41, 0x94), // 404
    str("content-type"),
    str("text/plain"),
    bytesOf(0),
    bytesOf(2, "no", 0), // one content chunk, terminator
    bytesOf(0), // empty trailers
  );
  assert.equal(hex(encodeResponse(response, { framing: "indeterminate-length" })), hex(expected));
  const decoded = decodeResponse(cat(expected, new Uint8Array(7)), {}); // with padding
  assert.equal(decoded.status, 404);
  assert.deepEqual(decoded.informational, [{ status: 103, headers: [["link", "</a>"]] }]);
  assert.deepEqual(decoded.content, text.encode("no"));
});

// ---------------------------------------------------------------------------------------------
// Property-style round trips.

const NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_.!#$%&'*+^`|~";
const VALUE_CHARS =
  'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,;=/"():\t\u00e9\u00ff';

function randomFields(prng: Prng, max: number): [string, string][] {
  return Array.from({ length: prng.int(0, max) }, () => {
    const name = Array.from({ length: prng.int(1, 20) }, () => prng.pick([...NAME_CHARS])).join("");
    let value = Array.from({ length: prng.int(0, 40) }, () => prng.pick([...VALUE_CHARS])).join("")
      .trim();
    if (
      ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"]
        .includes(name)
    ) {
      value = "trailers";
    }
    return [name === "te" ? "x-te" : name, value];
  });
}

function randomResponse(
  prng: Prng,
): BhttpResponseInit & { headers: FieldLines; trailers: FieldLines } {
  return {
    informational: Array.from({ length: prng.int(0, 2) }, () => ({
      status: prng.int(100, 199),
      headers: randomFields(prng, 3),
    })),
    status: prng.int(200, 599),
    headers: randomFields(prng, 6),
    content: prng.bytes(prng.pick([0, 1, prng.int(0, 200), prng.int(0, 20000)])),
    trailers: randomFields(prng, 2),
  };
}

Deno.test("bhttp: random requests and responses round-trip in both framings (seeded)", () => {
  const prng = new Prng(9292);
  for (let i = 0; i < 200; i++) {
    const framing = FRAMINGS[i % 2];
    const options = { framing, truncate: prng.int(0, 1) === 1, padding: prng.pick([0, 0, 3]) };
    const request: BhttpRequestInit = {
      method: prng.pick(["GET", "POST", "PUT", "X-CUSTOM"]),
      scheme: prng.pick(["https", "http"]),
      authority: prng.pick(["", "example.com", "127.0.0.1:9301"]),
      path: prng.pick(["/", "/v1/chat/completions", "/a?b=c&d=%20"]),
      headers: randomFields(prng, 6),
      content: prng.bytes(prng.pick([0, prng.int(0, 300), prng.int(0, 20000)])),
      trailers: randomFields(prng, 2),
    };
    const decoded = decodeRequest(encodeRequest(request, options));
    assert.deepEqual(
      { ...decoded, framing: undefined },
      { ...request, scheme: request.scheme, framing: undefined },
      `request ${i}`,
    );
    const response = randomResponse(prng);
    const decodedResponse = decodeResponse(encodeResponse(response, options));
    assert.equal(decodedResponse.framing, framing);
    assert.deepEqual(
      { ...decodedResponse, framing: undefined },
      { ...response, framing: undefined },
      `response ${i}`,
    );
  }
});

Deno.test("bhttp: the incremental decoder reads random responses split at random points (seeded)", async () => {
  const prng = new Prng(4242);
  for (let i = 0; i < 120; i++) {
    const response = randomResponse(prng);
    const framing = FRAMINGS[i % 2];
    const bytes = encodeResponse(response, {
      framing,
      truncate: prng.int(0, 1) === 1,
      padding: prng.pick([0, 2]),
    });
    const stream = streamCut(bytes, prng.cuts(bytes.length, prng.int(1, 40)));
    const decoded = await decodeResponseStream(stream);
    assert.equal(decoded.framing, framing);
    assert.equal(decoded.status, response.status);
    assert.deepEqual(decoded.informational, response.informational);
    assert.deepEqual(decoded.headers, response.headers);
    assert.deepEqual(await collect(decoded.body), response.content, `body ${i}`);
    assert.deepEqual(await decoded.trailers, response.trailers, `trailers ${i}`);
  }
  // The streaming encoder's output decodes the same way.
  for (let i = 0; i < 30; i++) {
    const response = randomResponse(prng);
    const content = response.content!;
    const wire = await collect(
      encodeResponseStream(response, streamCut(content, prng.cuts(content.length, 10)), {
        trailers: response.trailers,
      }),
    );
    const decoded = await decodeResponseStream(streamCut(wire, prng.cuts(wire.length, 20)));
    assert.deepEqual(await collect(decoded.body), content);
    assert.deepEqual(await decoded.trailers, response.trailers);
    assert.deepEqual(decodeResponse(wire).content, content, "one-shot decode agrees");
  }
});

Deno.test("bhttp: the content chunks one read brings go on as one piece; a read per chunk gives a piece per chunk", async () => {
  const pieces = ["data: one\n\n", "data: two\n\n", "data: three\n\n"].map((t) => bytesOf(t));
  const encode = () =>
    chunksOf(encodeResponseStream({ status: 200 }, ReadableStream.from(pieces), {
      trailers: [["x-end", "1"]],
    }));
  const parts = await encode(); // the head, one part per content chunk, then the end
  const joined = await decodeResponseStream(ReadableStream.from([cat(...parts)]));
  assert.deepEqual(await chunksOf(joined.body), [cat(...pieces)]);
  assert.deepEqual(await joined.trailers, [["x-end", "1"]]);
  const apart = await decodeResponseStream(ReadableStream.from(await encode()));
  assert.deepEqual(await chunksOf(apart.body), pieces);
  // A truncation after content in the same read: the content first, then the refusal.
  const wire = cat(...parts);
  const cut = await decodeResponseStream(ReadableStream.from([wire.subarray(0, wire.length - 8)]));
  const reader = cut.body.getReader();
  assert.deepEqual((await reader.read()).value, cat(...pieces));
  await assert.rejects(reader.read(), BinaryHttpError);
});

Deno.test("bhttp: a content piece that shares its array with what follows is a copy of its own", async () => {
  for (const framing of FRAMINGS) {
    const response = {
      status: 200,
      headers: [["content-type", "text/plain"]] as [string, string][],
      content: bytesOf("hello world"),
      trailers: [["x-digest", "abc"]] as [string, string][],
    };
    // One read holds the whole message: the content is followed by the trailers in its array.
    const decoded = await decodeResponseStream(
      streamCut(encodeResponse(response, { framing }), []),
    );
    const reader = decoded.body.getReader();
    const pieces: Uint8Array[] = [];
    while (true) {
      const step = await reader.read();
      if (step.done) break;
      pieces.push(step.value.slice());
      step.value.fill(0xff); // a reader that writes over what it was given
    }
    assert.deepEqual(cat(...pieces), response.content, framing);
    assert.deepEqual(await decoded.trailers, response.trailers, `${framing}: trailers intact`);
  }
});

// ---------------------------------------------------------------------------------------------
// Truncation and malformed input.

Deno.test("bhttp: every truncation of a request is refused except at the points RFC 9292 allows", () => {
  for (const framing of FRAMINGS) {
    const request: BhttpRequestInit = {
      method: "POST",
      path: "/x",
      headers: [["a", "b"]],
      content: text.encode("body"),
      trailers: [["t", "u"]],
    };
    const full = encodeRequest(request, { framing });
    const control =
      encodeRequest({ method: "POST", path: "/x" }, { framing, truncate: true }).length;
    const withHeaders = encodeRequest({ method: "POST", path: "/x", headers: [["a", "b"]] }, {
      framing,
      truncate: true,
    }).length;
    const withContent =
      encodeRequest({ ...request, trailers: [] }, { framing, truncate: true }).length;
    const valid = new Map<number, Partial<BhttpRequestInit>>([
      [control, { headers: [], content: new Uint8Array(0), trailers: [] }],
      [withHeaders, { content: new Uint8Array(0), trailers: [] }],
      [withContent, { trailers: [] }],
      [full.length, {}],
    ]);
    for (let length = 0; length <= full.length; length++) {
      const prefix = full.subarray(0, length);
      const expected = valid.get(length);
      if (expected) {
        const decoded = decodeRequest(prefix);
        assert.deepEqual(
          decoded.headers,
          expected.headers ?? request.headers,
          `${framing} at ${length}`,
        );
        assert.deepEqual(decoded.content, expected.content ?? request.content);
        assert.deepEqual(decoded.trailers, expected.trailers ?? request.trailers);
      } else {
        refuses(() => decodeRequest(prefix), "truncated", `${framing} request cut at ${length}`);
      }
    }
  }
});

Deno.test("bhttp: every truncation of a response is refused except at the allowed points, one-shot and incremental", async () => {
  for (const framing of FRAMINGS) {
    const response: BhttpResponseInit = {
      informational: [{ status: 100 }],
      status: 200,
      headers: [["a", "b"]],
      content: text.encode("content!"),
      trailers: [["t", "u"]],
    };
    const full = encodeResponse(response, { framing });
    const head = encodeResponse({ ...response, headers: [], content: undefined, trailers: [] }, {
      framing,
      truncate: true,
    }).length;
    const validPoints = new Set([
      head,
      encodeResponse({ ...response, content: undefined, trailers: [] }, { framing, truncate: true })
        .length,
      encodeResponse({ ...response, trailers: [] }, { framing, truncate: true }).length,
      full.length,
    ]);
    for (let length = 0; length <= full.length; length++) {
      const prefix = full.subarray(0, length);
      if (validPoints.has(length)) {
        decodeResponse(prefix);
      } else {
        refuses(() => decodeResponse(prefix), "truncated", `${framing} response cut at ${length}`);
      }
      // Incrementally, byte by byte: either the head fails, or the body errors, unless valid.
      let outcome: unknown;
      try {
        const decoded = await decodeResponseStream(
          streamCut(prefix, Array.from({ length: Math.max(0, length - 1) }, (_, i) => i + 1)),
        );
        await collect(decoded.body);
        await decoded.trailers;
      } catch (error) {
        outcome = error;
      }
      if (validPoints.has(length)) {
        assert.equal(
          outcome,
          undefined,
          `${framing} incremental at valid point ${length}: ${outcome}`,
        );
      } else {
        assert.ok(
          outcome instanceof BinaryHttpError && outcome.reason === "truncated",
          `${framing} incremental cut at ${length}: ${outcome}`,
        );
      }
    }
  }
});

Deno.test("bhttp: a corpus of malformed encodings is refused with the right reason", () => {
  const GET = cat(str("GET"), str("https"), str(""), str("/"));
  const requestCases: [string, Uint8Array, BinaryHttpFailure][] = [
    ["empty", new Uint8Array(0), "truncated"],
    ["framing indicator 4", bytesOf(4), "malformed"],
    [
      "framing indicator 2^62-1",
      bytesOf(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
      "too_large",
    ],
    ["a response", bytesOf(1, 0x40, 200), "wrong_kind"],
    ["cut varint", bytesOf(0, 0x40), "truncated"],
    ["method length past end", bytesOf(0, 10, "GET"), "truncated"],
    ["huge method length", bytesOf(0, 0xbf, 0xff, 0xff, 0xff, "GET"), "too_large"],
    [
      "method with space",
      cat(bytesOf(0), str("G T"), str("https"), str(""), str("/")),
      "invalid_control_data",
    ],
    [
      "empty method",
      cat(bytesOf(0), str(""), str("https"), str(""), str("/")),
      "invalid_control_data",
    ],
    [
      "bad scheme",
      cat(bytesOf(0), str("GET"), str("1ttp"), str(""), str("/")),
      "invalid_control_data",
    ],
    [
      "path with space",
      cat(bytesOf(0), str("GET"), str("https"), str(""), str("/a b")),
      "invalid_control_data",
    ],
    [
      "GET without path",
      cat(bytesOf(0), str("GET"), str("https"), str(""), str("")),
      "invalid_control_data",
    ],
    [
      "authority with newline",
      cat(bytesOf(0), str("GET"), str("https"), str("a\nb"), str("/")),
      "invalid_control_data",
    ],
    ["section length past end", cat(bytesOf(0), GET, bytesOf(20), str("a"), str("b")), "truncated"],
    [
      "section length cuts a field line",
      cat(bytesOf(0), GET, bytesOf(3), str("ab"), str("c")),
      "malformed",
    ],
    ["empty field name", cat(bytesOf(0), GET, bytesOf(4), str(""), str("ab")), "invalid_field"],
    [
      "upper-case field name",
      cat(bytesOf(0), GET, bytesOf(5), str("Ab"), str("c")),
      "invalid_field",
    ],
    [
      "pseudo-header field",
      cat(bytesOf(2), GET, str(":path"), str("/"), bytesOf(0)),
      "invalid_field",
    ],
    [
      "field name with space",
      cat(bytesOf(2), GET, str("a b"), str("c"), bytesOf(0)),
      "invalid_field",
    ],
    ["value with CR", cat(bytesOf(2), GET, str("a"), str("b\rc"), bytesOf(0)), "invalid_field"],
    ["value with LF", cat(bytesOf(2), GET, str("a"), str("b\nc"), bytesOf(0)), "invalid_field"],
    ["value with NUL", cat(bytesOf(2), GET, str("a"), str("b\0c"), bytesOf(0)), "invalid_field"],
    [
      "value with leading space",
      cat(bytesOf(2), GET, str("a"), str(" b"), bytesOf(0)),
      "invalid_field",
    ],
    [
      "value with trailing tab",
      cat(bytesOf(2), GET, str("a"), str("b\t"), bytesOf(0)),
      "invalid_field",
    ],
    [
      "connection field",
      cat(bytesOf(2), GET, str("connection"), str("close"), bytesOf(0)),
      "invalid_field",
    ],
    [
      "transfer-encoding field",
      cat(bytesOf(2), GET, str("transfer-encoding"), str("chunked"), bytesOf(0)),
      "invalid_field",
    ],
    [
      "te other than trailers",
      cat(bytesOf(2), GET, str("te"), str("gzip"), bytesOf(0)),
      "invalid_field",
    ],
    ["indeterminate section never ends", cat(bytesOf(2), GET, str("a"), str("b")), "truncated"],
    ["content length past end", cat(bytesOf(0), GET, bytesOf(0, 9, "abc")), "truncated"],
    ["content chunk without terminator", cat(bytesOf(2), GET, bytesOf(0, 3, "abc")), "truncated"],
    ["non-zero padding", cat(bytesOf(0), GET, bytesOf(0, 0, 0, 0, 0, 1)), "malformed"],
    ["trailing garbage", cat(bytesOf(0), GET, bytesOf(0, 0, 0, 0xff)), "malformed"],
  ];
  for (const [label, bytes, reason] of requestCases) {
    refuses(() => decodeRequest(bytes), reason, label);
  }
  const responseCases: [string, Uint8Array, BinaryHttpFailure][] = [
    ["a request", cat(bytesOf(0), GET), "wrong_kind"],
    ["status 99", bytesOf(1, 0x40, 99), "invalid_status"],
    ["status 0", bytesOf(1, 0), "invalid_status"],
    ["status 600", bytesOf(1, 0x42, 0x58), "invalid_status"],
    ["informational then end", bytesOf(1, 0x40, 100, 0), "truncated"],
    ["cut status", bytesOf(3, 0x40), "truncated"],
    [
      "nine informational responses",
      cat(
        bytesOf(3),
        ...Array.from({ length: 9 }, () => bytesOf(0x40, 100, 0)),
        bytesOf(0x40, 200),
      ),
      "too_large",
    ],
    ["upper-case header", bytesOf(3, 0x40, 200, 1, "A", 1, "b", 0), "invalid_field"],
  ];
  for (const [label, bytes, reason] of responseCases) {
    refuses(() => decodeResponse(bytes), reason, label);
  }
  refuses(() => decodeRequest("x" as unknown as Uint8Array), "malformed", "not bytes");
});

Deno.test("bhttp: field and section limits are options with defaults", () => {
  const long = "v".repeat(20000);
  for (const framing of FRAMINGS) {
    const bytes = encodeResponse({ status: 200, headers: [["x", long]] }, { framing });
    refuses(
      () => decodeResponse(bytes),
      "too_large",
      `${framing}: 20000-byte value over the 16 KiB default`,
    );
    assert.equal(decodeResponse(bytes, { maxFieldLength: 20000 }).headers[0][1], long);
    const many = encodeResponse({
      status: 200,
      headers: Array.from({ length: 100 }, (_, i) => [`x-${i}`, "v".repeat(100)]),
    }, { framing });
    refuses(
      () => decodeResponse(many, { maxFieldSectionLength: 5000 }),
      "too_large",
      `${framing}: section over 5000`,
    );
    assert.equal(decodeResponse(many).headers.length, 100);
    const interim = encodeResponse({
      status: 200,
      informational: [{ status: 100 }, { status: 102 }],
    }, { framing });
    refuses(
      () => decodeResponse(interim, { maxInformationalResponses: 1 }),
      "too_large",
      "two interim over 1",
    );
    const path = encodeRequest({ method: "GET", path: "/" + "p".repeat(100) }, { framing });
    refuses(() => decodeRequest(path, { maxFieldLength: 50 }), "too_large", "long path");
  }
  assert.throws(
    () => decodeResponse(bytesOf(1, 0x40, 200), { maxFieldLength: -1 }),
    BinaryHttpError,
  );
});

Deno.test("bhttp: random garbage never escapes as anything but a BinaryHttpError", async () => {
  const prng = new Prng(66);
  for (let i = 0; i < 2000; i++) {
    const garbage = prng.bytes(prng.int(0, 60));
    if (garbage.length > 0 && prng.int(0, 1)) garbage[0] = prng.int(0, 3); // valid framing more often
    for (const decode of [decodeRequest, decodeResponse]) {
      try {
        decode(garbage);
      } catch (error) {
        assert.ok(error instanceof BinaryHttpError, `garbage ${hex(garbage)}: ${error}`);
      }
    }
    if (i % 10 === 0) {
      try {
        const decoded = await decodeResponseStream(
          streamCut(garbage, prng.cuts(garbage.length, 4)),
        );
        await collect(decoded.body);
      } catch (error) {
        assert.ok(
          error instanceof BinaryHttpError,
          `incremental garbage ${hex(garbage)}: ${error}`,
        );
      }
    }
  }
});

Deno.test("bhttp: encoding refuses invalid statuses, fields and control data", () => {
  const bad: [string, () => unknown, BinaryHttpFailure][] = [
    ["status 199 final", () => encodeResponse({ status: 199 }), "invalid_status"],
    ["status 600", () => encodeResponse({ status: 600 }), "invalid_status"],
    [
      "interim 200",
      () => encodeResponse({ status: 200, informational: [{ status: 200 }] }),
      "invalid_status",
    ],
    ["fractional status", () => encodeResponse({ status: 200.5 }), "invalid_status"],
    [
      "pseudo field",
      () => encodeResponse({ status: 200, headers: [[":status", "200"]] }),
      "invalid_field",
    ],
    [
      "value with LF",
      () => encodeResponse({ status: 200, headers: [["a", "b\nc"]] }),
      "invalid_field",
    ],
    [
      "value above 0xFF",
      () => encodeResponse({ status: 200, headers: [["a", "\u0100"]] }),
      "invalid_field",
    ],
    [
      "connection",
      () => encodeRequest({ method: "GET", path: "/", headers: [["connection", "close"]] }),
      "invalid_field",
    ],
    [
      "method with space",
      () => encodeRequest({ method: "G T", path: "/" }),
      "invalid_control_data",
    ],
    ["empty path", () => encodeRequest({ method: "GET", path: "" }), "invalid_control_data"],
    [
      "content not bytes",
      () => encodeRequest({ method: "GET", path: "/", content: "x" as unknown as Uint8Array }),
      "malformed",
    ],
    [
      "negative padding",
      () => encodeRequest({ method: "GET", path: "/" }, { padding: -1 }),
      "malformed",
    ],
  ];
  for (const [label, encode, reason] of bad) refuses(encode, reason, label);
  // Names are lower-cased; Headers, records and pairs all work; CONNECT may omit scheme and path.
  const fromHeaders = decodeResponse(
    encodeResponse({ status: 200, headers: new Headers({ "X-A": "1" }) }),
  );
  assert.deepEqual(fromHeaders.headers, [["x-a", "1"]]);
  assert.deepEqual(
    decodeResponse(encodeResponse({ status: 200, headers: { "X-B": "2" } })).headers,
    [["x-b", "2"]],
  );
  assert.equal(
    decodeRequest(encodeRequest({ method: "CONNECT", scheme: "", authority: "h:1", path: "" }))
      .authority,
    "h:1",
  );
});

// ---------------------------------------------------------------------------------------------
// The incremental decoder streams, and never ends before its input has.

Deno.test("bhttp: the head resolves before the body arrives, and body bytes flow before a chunk completes", async () => {
  const source = new TransformStream<Uint8Array, Uint8Array>();
  const writer = source.writable.getWriter();
  const head = encodeResponse({ status: 200, headers: [["content-type", "text/event-stream"]] }, {
    framing: "indeterminate-length",
    truncate: true,
  });
  writer.write(head);
  const decoded = await decodeResponseStream(source.readable);
  assert.equal(decoded.status, 200);
  const reader = decoded.body.getReader();
  // A 10-byte content chunk, of which only 4 bytes have arrived.
  writer.write(bytesOf(10, "data"));
  assert.deepEqual((await reader.read()).value, text.encode("data"));
  writer.write(bytesOf(": 1\n\n\n"));
  assert.deepEqual((await reader.read()).value, text.encode(": 1\n\n\n"));
  // The terminators arrive, but the input has not ended: the body must not end yet.
  writer.write(bytesOf(0, 0));
  let inputEnded = false;
  const end = reader.read().then((result) => {
    assert.ok(inputEnded, "the body ended before its input did");
    return result;
  });
  await new Promise((resolve) => setTimeout(resolve, 0)); // let the decoder run
  inputEnded = true;
  await writer.close();
  assert.equal((await end).done, true);
  assert.deepEqual(await decoded.trailers, []);
});

Deno.test("bhttp: an input error (such as a truncated sealed stream) errors the body with the same error", async () => {
  const source = new TransformStream<Uint8Array, Uint8Array>();
  const writer = source.writable.getWriter();
  writer.write(bytesOf(3, 0x40, 200, 0, 5, "hello"));
  const decoded = await decodeResponseStream(source.readable);
  const reader = decoded.body.getReader();
  assert.deepEqual((await reader.read()).value, text.encode("hello"));
  const failure = new OpenError(
    "truncated",
    "Cannot open chunked response: the stream ended without the final chunk",
  );
  writer.abort(failure);
  await assert.rejects(reader.read(), (error: unknown) => error === failure);
  await assert.rejects(decoded.trailers, (error: unknown) => error === failure);
});

Deno.test("bhttp: the incremental decoder refuses an oversized head before buffering it, and wrong kinds", async () => {
  // An indeterminate header section that never ends: refused once it passes the limit.
  const huge = endless(bytesOf(3, 0x40, 200));
  const filler = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      // Turn filler bytes into a stream of small field lines: "a" = "AAAA...".
      controller.enqueue(
        chunk[0] === 3 ? chunk : cat(bytesOf(1, "a", 0x44, 0x00), chunk.subarray(0, 1024)),
      );
    },
  });
  await assert.rejects(
    decodeResponseStream(huge.stream.pipeThrough(filler), { maxFieldSectionLength: 10_000 }),
    (error: unknown) => error instanceof BinaryHttpError && error.reason === "too_large",
  );
  assert.ok(huge.pulled() < 200_000, `pulled ${huge.pulled()}`);

  await assert.rejects(
    decodeResponseStream(streamCut(encodeRequest({ method: "GET", path: "/" }), [])),
    (error: unknown) => error instanceof BinaryHttpError && error.reason === "wrong_kind",
  );
  await assert.rejects(
    decodeResponseStream(ReadableStream.from(["text" as unknown as Uint8Array])),
    (error: unknown) => error instanceof BinaryHttpError && error.reason === "malformed",
  );
});

Deno.test("bhttp: cancelling the body rejects the trailers and cancels the input", async () => {
  let cancelled: unknown = "not cancelled";
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytesOf(3, 0x40, 200, 0, 3, "abc"));
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const decoded = await decodeResponseStream(source);
  await decoded.body.cancel("client went away");
  assert.equal(cancelled, "client went away");
  await assert.rejects(
    decoded.trailers,
    (error: unknown) => error instanceof BinaryHttpError && error.reason === "cancelled",
  );
});

Deno.test("bhttp: the streaming encoder emits the head first and one content chunk per body chunk", async () => {
  const body = new TransformStream<Uint8Array, Uint8Array>();
  const writer = body.writable.getWriter();
  let trailersAsked = false;
  const wire = encodeResponseStream(
    { status: 200, headers: { "content-type": "text/event-stream" } },
    body.readable,
    {
      trailers: () => {
        trailersAsked = true;
        return [["x-usage", "7"]];
      },
    },
  ).getReader();
  assert.deepEqual(
    (await wire.read()).value,
    cat(bytesOf(3, 0x40, 200), str("content-type"), str("text/event-stream"), bytesOf(0)),
  );
  writer.write(text.encode("data: 1\n\n"));
  assert.deepEqual((await wire.read()).value, bytesOf(9, "data: 1\n\n"));
  writer.write(new Uint8Array(0)); // skipped: a zero length would end the content
  writer.write(text.encode("x".repeat(100)));
  assert.deepEqual(
    (await wire.read()).value,
    cat(bytesOf(0x40, 100), text.encode("x".repeat(100))),
  );
  assert.equal(trailersAsked, false);
  writer.close();
  assert.deepEqual(
    (await wire.read()).value,
    cat(bytesOf(0), str("x-usage"), str("7"), bytesOf(0)),
  );
  assert.equal(trailersAsked, true);
  assert.equal((await wire.read()).done, true);
  assert.throws(
    () => encodeResponseStream({ status: 99 }, ReadableStream.from([])),
    BinaryHttpError,
  );
  assert.deepEqual(await chunksOf(encodeResponseStream({ status: 204 }, ReadableStream.from([]))), [
    bytesOf(3, 0x40, 204, 0),
    bytesOf(0, 0),
  ]);
});
