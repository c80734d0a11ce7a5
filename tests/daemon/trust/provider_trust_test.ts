import assert from "node:assert/strict";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { adCommitment, type ProviderAd } from "../../../chain/ad.ts";
import {
  endorseKey,
  EndorsementError,
  type EndorsementFailure,
  endorsementToJson,
  type KeyEndorsementJson,
} from "../../../crypto/endorsement.ts";
import { NonceBook } from "../../../crypto/tee/mod.ts";
import { DaemonError, type DaemonErrorCode } from "../../../daemon/core/daemon_error.ts";
import {
  GatewayClient,
  GatewayError,
  type ProviderCandidate,
} from "../../../daemon/gateway/gateway_client.ts";
import {
  registryMismatch,
  type RegistryRecord,
  type TrustedKey,
  TrustedKeyCache,
  trustProvider,
} from "../../../daemon/trust/provider_trust.ts";
import { closedPort, serve } from "../../_http.ts";

// Well-known anvil dev keys: deterministic, never used for anything real.
const serving = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
const other = privateKeyToAccount(
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);
const PROVIDER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" as Address;
const now = new Date("2026-11-22T12:00:00Z");
const nowSeconds = Math.floor(now.getTime() / 1000);
const keyConfig = Uint8Array.from({ length: 45 }, (_, i) => (i * 7) & 0xff);

/** An ad as a provider publishes it; `serving_key` in the checksummed spelling viem gives. */
function adOf(overrides: Partial<ProviderAd> = {}): ProviderAd {
  return {
    version: 1,
    provider: PROVIDER,
    tier: "verified",
    serving_key: serving.address,
    endpoint: "http://127.0.0.1:9301",
    models: [{ id: "devnet/echo", prices: { input: "1", output: "2" }, context_length: 8192 }],
    ...overrides,
  };
}

function candidateOf(ad: ProviderAd = adOf()): ProviderCandidate {
  return {
    provider: ad.provider.toLowerCase() as Address,
    tier: ad.tier,
    ad,
    available: 1,
    tokensPerSec: 0,
  };
}

/** The Registry record that agrees with `ad`. */
function recordOf(ad: ProviderAd = adOf()): RegistryRecord {
  return {
    trustRoot: ad.serving_key.toLowerCase() as Address,
    tier: ad.tier,
    active: true,
    adCommitment: adCommitment(ad),
    bonded: true,
  };
}

async function endorsement(
  fields: { signer?: typeof serving; expiresAt?: number; nonce?: Uint8Array } = {},
): Promise<KeyEndorsementJson> {
  return endorsementToJson(
    await endorseKey(fields.signer ?? serving, {
      keyConfig,
      expiresAt: fields.expiresAt ?? nowSeconds + 600,
      nonce: fields.nonce,
    }),
  );
}

/**
 * A loopback gateway that answers `GET /v1/providers/:p/key` with `answer` (the `endorsement`
 * field of the protocol's answer) and counts every request it gets.
 */
function keyGateway(answer: () => Response | Promise<Response>) {
  const pattern = new URLPattern({ pathname: "/v1/providers/:provider/key" });
  const state = { requests: [] as string[] };
  const server = serve(async (req) => {
    const url = new URL(req.url);
    state.requests.push(url.pathname + url.search);
    if (req.method !== "GET" || !pattern.test(url)) {
      return Response.json({ error: { code: "not_found", message: "no route" } }, {
        status: 404,
      });
    }
    return await answer();
  });
  return Object.assign(state, {
    server,
    client: new GatewayClient(server.url),
    [Symbol.asyncDispose]: () => server.close(),
  });
}

const serveEndorsement = (json: unknown) => () =>
  Response.json({ provider: PROVIDER, endorsement: json });

async function refused(
  promise: Promise<unknown>,
  code: DaemonErrorCode,
  cause?: EndorsementFailure,
): Promise<DaemonError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof DaemonError, `expected DaemonError, got ${caught}`);
  assert.equal(caught.code, code, caught.message);
  if (cause) {
    assert.ok(caught.cause instanceof EndorsementError, `cause: ${caught.cause}`);
    assert.equal(caught.cause.reason, cause);
  }
  return caught;
}

const trust = (options: Partial<Parameters<typeof trustProvider>[2]> = {}) => ({
  clock: () => now,
  nonces: new NonceBook(),
  ...options,
});

// ---------------------------------------------------------------------------------------------
// registryMismatch

Deno.test("registryMismatch: every disagreement with the Registry is named; agreement is undefined", () => {
  const ad = adOf();
  const good = recordOf(ad);
  const lowerAd = adOf({ serving_key: serving.address.toLowerCase() as Address });
  const cases: [string, RegistryRecord | null, ProviderAd, RegExp | undefined][] = [
    ["all good", good, ad, undefined],
    ["not registered", null, ad, /not registered on chain/],
    ["inactive", { ...good, active: false }, ad, /lists it as inactive/],
    ["not bonded", { ...good, bonded: false }, ad, /stake is below the minimum provider bond/],
    [
      "inactive and not bonded: inactive is said",
      { ...good, active: false, bonded: false },
      ad,
      /inactive/,
    ],
    ["wrong tier", { ...good, tier: "tee" }, ad, /in the tee tier, not verified/],
    [
      "wrong trust root",
      { ...good, trustRoot: other.address },
      ad,
      new RegExp(`serving key ${serving.address}, the on-chain trust root is ${other.address}`),
    ],
    [
      "trust root in upper case",
      { ...good, trustRoot: serving.address.toUpperCase().replace("0X", "0x") as Address },
      ad,
      undefined,
    ],
    [
      "ad in lower case, trust root checksummed",
      { ...recordOf(lowerAd), trustRoot: serving.address },
      lowerAd,
      undefined,
    ],
    [
      "commitment mismatch",
      { ...good, adCommitment: `0x${"ab".repeat(32)}` },
      ad,
      /its ad hashes to 0x[0-9a-f]{10}…, the on-chain commitment is 0xababababab…$/,
    ],
    [
      "commitment in upper-case hex",
      { ...good, adCommitment: `0x${adCommitment(ad).slice(2).toUpperCase()}` as Hex },
      ad,
      undefined,
    ],
    [
      "an ad changed after it was committed",
      good,
      adOf({ endpoint: "http://127.0.0.1:9302" }),
      /its ad hashes to/,
    ],
  ];
  for (const [label, record, candidateAd, expected] of cases) {
    const problem = registryMismatch(record, candidateOf(candidateAd));
    if (expected === undefined) assert.equal(problem, undefined, label);
    else assert.match(problem ?? "(none)", expected, label);
  }
});

// ---------------------------------------------------------------------------------------------
// TrustedKeyCache

const key = (verdict: string): TrustedKey => ({ keyConfig, verdict });
const commitmentA = `0x${"0a".repeat(32)}` as Hex;
const commitmentB = `0x${"0b".repeat(32)}` as Hex;
const at = (ms: number) => new Date(now.getTime() + ms);

Deno.test("TrustedKeyCache: a key is fresh until the endorsement expires", () => {
  const cache = new TrustedKeyCache({ maxAgeMs: 60_000 });
  assert.equal(cache.get(PROVIDER, commitmentA, now), undefined, "empty");
  const trusted = key("k");
  cache.set(PROVIDER, commitmentA, trusted, at(30_000), now);
  assert.equal(cache.get(PROVIDER, commitmentA, now), trusted);
  assert.equal(cache.get(PROVIDER, commitmentA, at(29_999)), trusted);
  assert.equal(cache.get(PROVIDER, commitmentA, at(30_000)), undefined, "expired at expiry");
  assert.equal(cache.get(PROVIDER, commitmentA, now), undefined, "and dropped");
});

Deno.test("TrustedKeyCache: maxAgeMs caps a long endorsement; the default is one minute", () => {
  const capped = new TrustedKeyCache({ maxAgeMs: 1000 });
  capped.set(PROVIDER, commitmentA, key("k"), at(3_600_000), now);
  assert.ok(capped.get(PROVIDER, commitmentA, at(999)));
  assert.equal(capped.get(PROVIDER, commitmentA, at(1000)), undefined);

  const byDefault = new TrustedKeyCache();
  byDefault.set(PROVIDER, commitmentA, key("k"), at(3_600_000), now);
  assert.ok(byDefault.get(PROVIDER, commitmentA, at(59_999)));
  assert.equal(byDefault.get(PROVIDER, commitmentA, at(60_000)), undefined);

  const expired = new TrustedKeyCache();
  expired.set(PROVIDER, commitmentA, key("k"), at(-1), now);
  assert.equal(expired.get(PROVIDER, commitmentA, now), undefined, "already expired: never served");
});

Deno.test("TrustedKeyCache: keyed by provider and ad commitment; forget drops one provider's keys", () => {
  const cache = new TrustedKeyCache();
  const otherProvider = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc" as Address;
  cache.set(PROVIDER, commitmentA, key("a"), at(10_000), now);
  cache.set(PROVIDER, commitmentB, key("b"), at(10_000), now);
  cache.set(otherProvider, commitmentA, key("other"), at(10_000), now);
  assert.equal(cache.get(PROVIDER, commitmentA, now)?.verdict, "a");
  assert.equal(
    cache.get(PROVIDER, commitmentB, now)?.verdict,
    "b",
    "a changed ad is its own entry",
  );
  assert.equal(cache.get(otherProvider, commitmentA, now)?.verdict, "other");
  assert.equal(cache.get(otherProvider, commitmentB, now), undefined);
  cache.forget(PROVIDER);
  assert.equal(cache.get(PROVIDER, commitmentA, now), undefined);
  assert.equal(cache.get(PROVIDER, commitmentB, now), undefined);
  assert.equal(cache.get(otherProvider, commitmentA, now)?.verdict, "other", "others kept");
});

Deno.test("TrustedKeyCache: at most 4096 entries, the oldest dropped first", () => {
  const cache = new TrustedKeyCache();
  const provider = (i: number) => `0x${i.toString(16).padStart(40, "0")}` as Address;
  for (let i = 0; i < 4097; i++) {
    cache.set(provider(i), commitmentA, key(String(i)), at(10_000), now);
  }
  assert.equal(cache.get(provider(0), commitmentA, now), undefined, "the first was dropped");
  assert.equal(cache.get(provider(1), commitmentA, now)?.verdict, "1");
  assert.equal(cache.get(provider(4096), commitmentA, now)?.verdict, "4096");
});

// ---------------------------------------------------------------------------------------------
// trustProvider, verified tier, against a real loopback gateway

Deno.test("trustProvider: a valid endorsement by the ad's serving key is trusted", async () => {
  await using gateway = keyGateway(serveEndorsement(await endorsement()));
  const trusted = await trustProvider(candidateOf(), gateway.client, trust());
  assert.deepEqual(trusted.keyConfig, keyConfig);
  assert.equal(
    trusted.verdict,
    `endorsed-key by ${serving.address.toLowerCase().slice(0, 12)}…, gateway-listed key`,
  );
  assert.deepEqual(gateway.requests, [`/v1/providers/${PROVIDER}/key`]);
});

Deno.test("trustProvider: endorsements that must not be trusted are refused with their code", async () => {
  const cases: [string, unknown, DaemonErrorCode, EndorsementFailure][] = [
    ["another signer", await endorsement({ signer: other }), "key_not_vouched", "wrong_signer"],
    ["expired", await endorsement({ expiresAt: nowSeconds }), "attestation_stale", "expired"],
    [
      "expired long ago",
      await endorsement({ expiresAt: nowSeconds - 86_400 }),
      "attestation_stale",
      "expired",
    ],
    [
      "lifetime over 7 days",
      await endorsement({ expiresAt: nowSeconds + 8 * 86_400 }),
      "attestation_failed",
      "lifetime_too_long",
    ],
    [
      "bound to a nonce (a TEE endorsement replayed in the verified tier)",
      await endorsement({ nonce: new Uint8Array(32).fill(5) }),
      "attestation_failed",
      "nonce_mismatch",
    ],
    [
      "key configuration swapped under the signature",
      { ...await endorsement(), key_config: "0x0102" },
      "key_not_vouched",
      "wrong_signer",
    ],
    ["no endorsement field", undefined, "attestation_failed", "malformed"],
    ["not an object", "0x00", "attestation_failed", "malformed"],
    [
      "an extra field",
      { ...await endorsement(), extra: true },
      "attestation_failed",
      "malformed",
    ],
  ];
  for (const [label, json, code, reason] of cases) {
    await using gateway = keyGateway(serveEndorsement(json));
    const cache = new TrustedKeyCache();
    const error = await refused(
      trustProvider(candidateOf(), gateway.client, trust({ keyCache: cache })),
      code,
      reason,
    ).catch((e) => {
      throw new Error(`${label}: ${e.message}`);
    });
    assert.match(error.shortMessage, new RegExp(`Cannot trust the key of provider ${PROVIDER}`));
    assert.equal(
      cache.get(PROVIDER, adCommitment(adOf()), now),
      undefined,
      `${label}: a refused key is not cached`,
    );
  }
});

Deno.test("trustProvider: a gateway that cannot give the key is a GatewayError, whose fault it says", async () => {
  await using failing = keyGateway(() =>
    Response.json({ error: { code: "provider_unreachable", message: "down" } }, { status: 502 })
  );
  await assert.rejects(
    trustProvider(candidateOf(), failing.client, trust()),
    (error: unknown) =>
      error instanceof GatewayError && error.reason === "provider" && error.status === 502,
  );
  const down = new GatewayClient(`http://127.0.0.1:${closedPort()}`);
  await assert.rejects(
    trustProvider(candidateOf(), down, trust()),
    (error: unknown) => error instanceof GatewayError && error.reason === "gateway",
  );
});

Deno.test("trustProvider: a cached key skips the key fetch until it expires or the ad changes", async () => {
  let served = await endorsement({ expiresAt: nowSeconds + 30 });
  await using gateway = keyGateway(() => serveEndorsement(served)());
  let clock = now;
  const keyCache = new TrustedKeyCache();
  const options = trust({ keyCache, clock: () => clock });

  const first = await trustProvider(candidateOf(), gateway.client, options);
  const second = await trustProvider(candidateOf(), gateway.client, options);
  assert.equal(gateway.requests.length, 1, "the second check was served from the cache");
  assert.equal(second, first);

  // A changed ad (another commitment) is checked again.
  const moved = candidateOf(adOf({ endpoint: "http://127.0.0.1:9302" }));
  await trustProvider(moved, gateway.client, options);
  assert.equal(gateway.requests.length, 2, "a changed ad fetched the key again");

  // At the endorsement's expiry the cached key is no longer used: the expired endorsement the
  // gateway still serves is fetched again and refused.
  clock = new Date((nowSeconds + 30) * 1000);
  await refused(trustProvider(candidateOf(), gateway.client, options), "attestation_stale");
  assert.equal(gateway.requests.length, 3);

  // A renewed endorsement is trusted again.
  served = await endorsement({ expiresAt: nowSeconds + 600 });
  await trustProvider(candidateOf(), gateway.client, options);
  assert.equal(gateway.requests.length, 4);

  // Without a cache every check fetches.
  await trustProvider(candidateOf(), gateway.client, trust({ clock: () => clock }));
  await trustProvider(candidateOf(), gateway.client, trust({ clock: () => clock }));
  assert.equal(gateway.requests.length, 6);
});

Deno.test("trustProvider: with a registry, a mismatch is refused before any key is fetched", async () => {
  await using gateway = keyGateway(serveEndorsement(await endorsement()));
  const asked: Address[] = [];
  const registry = (record: RegistryRecord | null) => (provider: Address) => {
    asked.push(provider);
    return Promise.resolve(record);
  };
  const mismatches: [string, RegistryRecord | null, RegExp, DaemonErrorCode][] = [
    ["not registered", null, /not registered/, "key_not_vouched"],
    ["inactive", { ...recordOf(), active: false }, /inactive/, "key_not_vouched"],
    [
      "other trust root",
      { ...recordOf(), trustRoot: other.address },
      /on-chain trust root/,
      "key_not_vouched",
    ],
    [
      "other commitment",
      { ...recordOf(), adCommitment: `0x${"00".repeat(32)}` },
      /commitment/,
      "key_not_vouched",
    ],
    [
      "other tier",
      { ...recordOf(), tier: "tee" },
      /in the tee tier, not verified/,
      "tier_mismatch",
    ],
  ];
  for (const [label, record, message, code] of mismatches) {
    const error = await refused(
      trustProvider(candidateOf(), gateway.client, trust({ registry: registry(record) })),
      code,
    );
    assert.match(error.shortMessage, message, label);
    assert.match(error.shortMessage, new RegExp(`Cannot trust provider ${PROVIDER}`), label);
  }
  assert.deepEqual(gateway.requests, [], "no key was fetched for a provider the chain refutes");
  assert.deepEqual(asked, mismatches.map(() => PROVIDER));

  // The registry's own failure (the chain cannot be read) fails closed, before any fetch too.
  const unreadable = () =>
    Promise.reject(new DaemonError("no_provider", "Cannot read the Registry record"));
  await refused(
    trustProvider(candidateOf(), gateway.client, trust({ registry: unreadable })),
    "no_provider",
  );
  assert.deepEqual(gateway.requests, []);

  // Agreement: the key is fetched and the verdict says the chain vouched for the serving key.
  const trusted = await trustProvider(
    candidateOf(),
    gateway.client,
    trust({ registry: registry(recordOf()) }),
  );
  assert.match(trusted.verdict, /^endorsed-key by 0x[0-9a-f]{10}…, on-chain trust root$/);
  assert.equal(gateway.requests.length, 1);
});

Deno.test("trustProvider: the TEE tier without an approved set is no_provider, with the hint, and asks nothing", async () => {
  await using gateway = keyGateway(serveEndorsement(await endorsement()));
  const tee = candidateOf(adOf({ tier: "tee" }));
  const error = await refused(trustProvider(tee, gateway.client, trust()), "no_provider");
  assert.match(error.shortMessage, /no approved measurement set is configured/);
  assert.ok(error.hints.some((hint) => /--measurements/.test(hint)), error.message);
  assert.ok(error.hints.some((hint) => /NET_EVM_RPC_URL/.test(hint)), error.message);
  assert.deepEqual(gateway.requests, [], "no attestation was asked for");
});
