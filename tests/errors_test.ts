import assert from "node:assert/strict";
import { AdError } from "../chain/ad.ts";
import {
  ChainConfigError,
  ChainReadError,
  ContractCheckError,
  SettlementScanError,
} from "../chain/errors.ts";
import { NetworkProfileError } from "../chain/network_profile.ts";
import { VoucherError } from "../chain/errors.ts";
import { BinaryHttpError } from "../crypto/bhttp/mod.ts";
import { EndorsementError } from "../crypto/endorsement.ts";
import { ReceiptError } from "../crypto/receipt.ts";
import { DerError } from "../crypto/tee/_der.ts";
import { HpkeError } from "../crypto/hpke/mod.ts";
import { KeyConfigError, OpenError, SealError } from "../crypto/ohttp/mod.ts";
import { AttestationError, MeasurementSetError, QuoteParseError } from "../crypto/tee/mod.ts";
import { abbreviate, findCause, NetError, type NetErrorOptions, ReasonError } from "../errors.ts";
import { AtomicWriteError } from "../io/atomic_write.ts";
import { BindAddressError } from "../io/bind_address.ts";
import { FetchJsonError } from "../io/fetch_json.ts";
import { SseError } from "../io/sse.ts";
import { LedgerError } from "../daemon/account/ledger.ts";
import { SpendCapError } from "../daemon/account/spend_cap.ts";
import { DaemonError } from "../daemon/core/daemon_error.ts";
import { ModelIdError } from "../daemon/core/model_id.ts";
import { GatewayError, ProviderBusyError } from "../daemon/gateway/gateway_client.ts";
import { GatewaySetError } from "../daemon/gateway/gateway_url.ts";
import { OriginPatternError } from "../daemon/service/hygiene.ts";
import { EngineError } from "../devnet/engine_error.ts";
import { ServiceError } from "../devnet/_errors.ts";
import { HttpRequestError } from "../http/errors.ts";
import { IndexerRequestError, RouterAdsError, SnapshotError } from "../indexer/errors.ts";
import { StoreError } from "../indexer/store/errors.ts";
import { SettingError } from "../settings/mod.ts";

class ExampleError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ExampleError" as const;
}

Deno.test("message joins short message, details and hints; shortMessage stays one line", () => {
  const root = new Error("socket closed");
  const error = new ExampleError("Cannot read the thing: found A, expected B", {
    details: "at offset 7",
    hints: ["Try again later."],
    cause: root,
  });
  assert.equal(error.name, "ExampleError");
  assert.equal(error.shortMessage, "Cannot read the thing: found A, expected B");
  assert.equal(
    error.message,
    "Cannot read the thing: found A, expected B\nDetails: at offset 7\nTry again later.",
  );
  assert.equal(error.cause, root);
  assert.ok(error instanceof NetError && error instanceof Error);
  assert.equal(new NetError("x").cause, undefined);
});

Deno.test("findCause walks the chain and stops on cycles", () => {
  const inner = new ExampleError("inner");
  const outer = new NetError("outer", { cause: new Error("middle", { cause: inner }) });
  assert.equal(outer.walk((e) => e instanceof ExampleError), inner);
  assert.equal(findCause(outer, (e) => e instanceof TypeError), undefined);
  const a: { cause?: unknown } = {};
  const b = { cause: a };
  a.cause = b;
  assert.equal(findCause(a, () => false), undefined);
});

Deno.test("abbreviate keeps short values and cuts long ones", () => {
  assert.equal(abbreviate("0x1234", 10), "0x1234");
  assert.equal(abbreviate("0x91eb2b44d141d4ece09f", 6), "0x91eb…");
});

// Every error class of the library folders and the devnet, by the pattern it follows: a
// ReasonError is only its literal name over its own reasons (the one constructor is
// ReasonError's); a NetError without reasons is only its literal name. The few that carry
// fields of their own (a check, a field path, a status, a setting…) take them in their
// constructor and are checked one by one below; the list of classes is checked against the
// sources, so a new error class, or one that repeats the constructor, fails here.
const REASON_ERRORS: [
  new (reason: never, message: string, options?: NetErrorOptions) => Error,
  string,
][] = [
  [SealError, "crypto"],
  [OpenError, "truncated"],
  [BinaryHttpError, "malformed"],
  [HpkeError, "invalid_key"],
  [KeyConfigError, "unsupported_kem"],
  [EndorsementError, "expired"],
  [ReceiptError, "mismatch"],
  [ChainConfigError, "wrong_chain"],
  [ChainReadError, "block_not_found"],
  [SettlementScanError, "reorg"],
  [NetworkProfileError, "invalid"],
  [ModelIdError, "format"],
  [OriginPatternError, "malformed"],
  [StoreError, "unreachable"],
  [RouterAdsError, "invalid_url"],
  [SnapshotError, "chain_unreachable"],
  [EngineError, "unknown_model"],
  [ServiceError, "unknown_provider"],
  [VoucherError, "bad_signature"],
];
const PLAIN_ERRORS = [
  MeasurementSetError,
  SseError,
  BindAddressError,
  AtomicWriteError,
  DerError,
  LedgerError,
  SpendCapError,
];

Deno.test("every error of the library and the devnet is one ReasonError or NetError with a literal name", async () => {
  const cause = new Error("root");
  for (const [ErrorClass, reason] of REASON_ERRORS) {
    const error = new ErrorClass(reason as never, "Cannot do it: found A", { details: "d", cause });
    assert.ok(error instanceof ReasonError, ErrorClass.name);
    assert.equal(error.name, ErrorClass.name);
    assert.equal(error.reason, reason);
    assert.equal(error.shortMessage, "Cannot do it: found A");
    assert.equal(error.message, "Cannot do it: found A\nDetails: d");
    assert.equal(error.cause, cause);
    assert.doesNotMatch(
      ErrorClass.toString(),
      /constructor\s*\(/,
      `${ErrorClass.name} repeats one`,
    );
  }
  for (const ErrorClass of PLAIN_ERRORS) {
    const error = new ErrorClass("Cannot do it", { cause });
    assert.ok(error instanceof NetError && !(error instanceof ReasonError), ErrorClass.name);
    assert.equal(error.name, ErrorClass.name);
    assert.doesNotMatch(
      ErrorClass.toString(),
      /constructor\s*\(/,
      `${ErrorClass.name} repeats one`,
    );
  }
  const attestation = new AttestationError("stale", "nonce", "Cannot verify attestation: old");
  assert.ok(attestation instanceof ReasonError);
  assert.deepEqual([attestation.name, attestation.reason, attestation.check], [
    "AttestationError",
    "stale",
    "nonce",
  ]);
  const ad = new AdError("invalid_field", "models[0].id", "Cannot accept ad: bad id");
  assert.ok(ad instanceof ReasonError);
  assert.deepEqual([ad.name, ad.reason, ad.field], ["AdError", "invalid_field", "models[0].id"]);
  const fetched = new FetchJsonError("status", "http://x/", "Cannot fetch: 500", { status: 500 });
  assert.ok(fetched instanceof ReasonError);
  assert.deepEqual([fetched.name, fetched.reason, fetched.url, fetched.status], [
    "FetchJsonError",
    "status",
    "http://x/",
    500,
  ]);
  const problem = {
    role: "staking",
    address: `0x${"1".repeat(40)}`,
    kind: "no_code",
    message: "NET_EVM_STAKING 0x… has no code",
  } as const;
  const check = new ContractCheckError("no_code", "Cannot use the contracts", {
    problems: [problem],
  });
  assert.ok(check instanceof ReasonError);
  assert.deepEqual([check.name, check.reason, check.problems], [
    "ContractCheckError",
    "no_code",
    [problem],
  ]);
  const parse = new QuoteParseError("Cannot parse TDX quote: short", { offset: 4 });
  assert.ok(parse instanceof NetError && !(parse instanceof ReasonError));
  assert.deepEqual([parse.name, parse.offset], ["QuoteParseError", 4]);
  // The errors whose constructor takes fields of their own, beyond the shared pattern's.
  const gatewaySet = new GatewaySetError("invalid_url", "Cannot use x", { problem: "a query" });
  assert.ok(gatewaySet instanceof ReasonError);
  assert.deepEqual([gatewaySet.name, gatewaySet.reason, gatewaySet.problem], [
    "GatewaySetError",
    "invalid_url",
    "a query",
  ]);
  const gateway = new GatewayError("provider", "Cannot relay", { status: 502, code: "x" });
  assert.ok(gateway instanceof ReasonError);
  assert.deepEqual([gateway.name, gateway.reason, gateway.status, gateway.code], [
    "GatewayError",
    "provider",
    502,
    "x",
  ]);
  const busy = new ProviderBusyError("The provider is at capacity", 1000);
  assert.ok(busy instanceof NetError && !(busy instanceof ReasonError));
  assert.deepEqual([busy.name, busy.retryAfterMs], ["ProviderBusyError", 1000]);
  const daemon = new DaemonError("no_provider", "No provider", { retryAfterSeconds: 5 });
  assert.ok(daemon instanceof NetError);
  assert.deepEqual([daemon.name, daemon.code, daemon.status], ["DaemonError", "no_provider", 503]);
  const request = new HttpRequestError("not_found", "Cannot find /x", { field: "path" });
  assert.ok(request instanceof ReasonError);
  assert.deepEqual([request.name, request.reason, request.field, request.status], [
    "HttpRequestError",
    "not_found",
    "path",
    404,
  ]);
  const indexer = new IndexerRequestError("unavailable", "Cannot serve: no chain", {
    code: "chain_unreachable",
    retryAfterSecs: 5,
  });
  assert.ok(indexer instanceof ReasonError);
  assert.deepEqual([indexer.name, indexer.reason, indexer.code, indexer.retryAfterSecs], [
    "IndexerRequestError",
    "unavailable",
    "chain_unreachable",
    5,
  ]);
  const setting = new SettingError("--bind", "Cannot use --bind x");
  assert.ok(setting instanceof NetError && !(setting instanceof ReasonError));
  assert.deepEqual([setting.name, setting.setting], ["SettingError", "--bind"]);

  // The tables above are complete: every error class declared in the folders is in them.
  const tested = new Set([
    ...REASON_ERRORS.map(([ErrorClass]) => ErrorClass.name),
    ...PLAIN_ERRORS.map((ErrorClass) => ErrorClass.name),
    "AttestationError",
    "AdError",
    "FetchJsonError",
    "QuoteParseError",
    "ContractCheckError",
    "GatewaySetError",
    "GatewayError",
    "ProviderBusyError",
    "DaemonError",
    "HttpRequestError",
    "IndexerRequestError",
    "SettingError",
  ]);
  const declared: string[] = [];
  for (const dir of ["crypto", "chain", "io", "http", "settings", "daemon", "indexer", "devnet"]) {
    for await (const path of sourceFiles(new URL(`../${dir}/`, import.meta.url))) {
      const text = await Deno.readTextFile(path);
      for (const match of text.matchAll(/^export class (\w+) extends (\w+)/gm)) {
        if (!match[1].endsWith("Error")) continue;
        declared.push(match[1]);
        assert.ok(
          ["ReasonError", "NetError"].includes(match[2]),
          `${match[1]} extends ${match[2]}`,
        );
      }
    }
  }
  assert.deepEqual(declared.sort(), [...tested].sort());
});

async function* sourceFiles(dir: URL): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.isDirectory ? `${entry.name}/` : entry.name, dir);
    if (entry.isDirectory) yield* sourceFiles(url);
    else if (entry.name.endsWith(".ts")) yield url;
  }
}
