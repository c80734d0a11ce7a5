import assert from "node:assert/strict";
import {
  CRYPTO_ERROR_CODES,
  DAEMON_ERROR_STATUS,
  DaemonError,
  type DaemonErrorCode,
} from "../../../daemon/core/daemon_error.ts";
import {
  errorBody,
  errorResponse,
  openaiErrorType,
  streamErrorText,
  toDaemonError,
} from "../../../daemon/core/http_error.ts";
import { ModelIdError, parseModelId } from "../../../daemon/core/model_id.ts";
import { NetError } from "../../../errors.ts";

function collector() {
  const logged: unknown[] = [];
  return { logged, log: (_message: string, error: unknown) => logged.push(error) };
}

Deno.test("DaemonError: each code has its status; status overrides are validated", () => {
  const expected: Record<DaemonErrorCode, number> = {
    invalid_request_error: 400,
    invalid_api_key: 401,
    // Money: a spend cap, the deposit, a refused voucher — a retry cannot fix them either.
    budget_exceeded: 402,
    insufficient_deposit: 402,
    payment_refused: 402,
    forbidden_host: 403,
    forbidden_origin: 403,
    not_found: 404,
    model_not_found: 404,
    no_matching_provider: 404,
    method_not_allowed: 405,
    request_too_large: 413,
    url_too_long: 414,
    unsupported_media_type: 415,
    too_many_auth_failures: 429,
    headers_too_large: 431,
    internal_error: 500,
    // Refusals of trust: a retry cannot fix them, so they are 403s that SDKs do not retry.
    attestation_failed: 403,
    attestation_mock: 403,
    attestation_stale: 403,
    measurement_not_approved: 403,
    key_not_vouched: 403,
    tier_mismatch: 403,
    attestation_binding_failed: 403,
    gpu_not_attested: 403,
    gpu_attestation_failed: 403,
    gpu_measurement_not_approved: 403,
    model_not_attested: 403,
    decryption_failed: 502,
    stream_truncated: 502,
    receipt_invalid: 502,
    provider_error: 502,
    no_gateway: 503,
    no_provider: 503,
    chain_unreachable: 503,
    overloaded: 503,
    timeout: 504,
  };
  assert.deepEqual({ ...DAEMON_ERROR_STATUS }, expected);
  for (const [code, status] of Object.entries(expected)) {
    const error = new DaemonError(code as DaemonErrorCode, "x");
    assert.equal(error.status, status);
    assert.equal(error.name, "DaemonError");
    assert.ok(error instanceof NetError);
    assert.equal(error.param, null);
  }
  assert.equal(new DaemonError("provider_error", "x", { status: 400 }).status, 400);
  for (const status of [200, 399, 600, 502.5]) {
    assert.throws(() => new DaemonError("provider_error", "x", { status }), RangeError);
  }
  assert.throws(() => new DaemonError("nope" as DaemonErrorCode, "x"), /unknown code "nope"/);
});

Deno.test("errors render in each dialect's shape", () => {
  const error = new DaemonError("no_provider", "No provider serves a/b in tier tee");
  assert.deepEqual(errorBody(error, "ollama"), { error: "No provider serves a/b in tier tee" });
  assert.deepEqual(errorBody(error, "openai"), {
    error: {
      message: "No provider serves a/b in tier tee",
      type: "server_error",
      param: null,
      code: "no_provider",
    },
  });
  assert.equal(openaiErrorType(400), "invalid_request_error");
  assert.equal(openaiErrorType(404), "invalid_request_error");
  assert.equal(openaiErrorType(403), "permission_error");
  assert.equal(openaiErrorType(503), "server_error");
  assert.equal(
    streamErrorText(error, "openai"),
    `data: ${JSON.stringify(errorBody(error, "openai"))}\n\n`,
  );
  assert.equal(
    streamErrorText(error, "ollama"),
    '{"error":"No provider serves a/b in tier tee"}\n',
  );
});

Deno.test("errorResponse sends Retry-After when the error says when to try again", async () => {
  for (const code of ["no_provider", "overloaded"] as const) {
    const response = errorResponse(
      new DaemonError(code, "busy", { retryAfterSeconds: 7 }),
      "openai",
    );
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "7");
    assert.equal((await response.json()).error.code, code);
  }
  const plain = errorResponse(new DaemonError("no_gateway", "none"), "ollama");
  assert.equal(plain.headers.get("retry-after"), null);
  await plain.body?.cancel();
  assert.throws(
    () => new DaemonError("overloaded", "x", { retryAfterSeconds: 1.5 }),
    /retryAfterSeconds must be a whole number of seconds, found 1.5/,
  );
});

Deno.test("errorResponse sets the status and a JSON content type", async () => {
  const response = errorResponse(
    new DaemonError("invalid_request_error", "bad", { param: "messages" }),
    "openai",
  );
  assert.equal(response.status, 400);
  assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
  assert.equal((await response.json()).error.param, "messages");
});

Deno.test("cryptographic codes get a fixed message; the full error goes to the log only", () => {
  for (const code of CRYPTO_ERROR_CODES) {
    const { logged, log } = collector();
    const error = new DaemonError(code, "HPKE open failed at chunk 4: AEAD tag mismatch");
    const body = errorBody(toDaemonError(error, { log }), "ollama") as { error: string };
    assert.ok(!body.error.includes("AEAD") && !body.error.includes("chunk 4"), code);
    assert.ok(body.error.length > 20, "the fixed message still says what happened");
    assert.deepEqual(logged, [error]);
  }
  const { logged, log } = collector();
  toDaemonError(new DaemonError("no_gateway", "none reachable"), { log });
  assert.equal(logged.length, 0, "ordinary refusals are not logged as errors");
});

Deno.test("toDaemonError finds a DaemonError or ModelIdError in the cause chain", () => {
  const inner = new DaemonError("no_provider", "none");
  const wrapped = new Error("failover exhausted", { cause: inner });
  assert.equal(toDaemonError(wrapped, { log: () => {} }), inner);
  let modelError: unknown;
  try {
    parseModelId("llama3");
  } catch (error) {
    modelError = error;
  }
  assert.ok(modelError instanceof ModelIdError);
  const resolved = toDaemonError(modelError);
  assert.equal(resolved.code, "invalid_request_error");
  assert.equal(resolved.status, 400);
  assert.equal(resolved.param, "model");
  assert.equal(resolved.cause, modelError);
});

Deno.test("unknown errors become a generic, logged 500 whatever they are", () => {
  for (const thrown of [new TypeError("x is undefined"), "a string", null, { secret: 1 }]) {
    const { logged, log } = collector();
    const resolved = toDaemonError(thrown, { log });
    assert.equal(resolved.code, "internal_error");
    assert.equal(resolved.status, 500);
    assert.ok(
      !resolved.shortMessage.includes("undefined") && !resolved.shortMessage.includes("secret"),
    );
    assert.deepEqual(logged, [thrown]);
  }
});
