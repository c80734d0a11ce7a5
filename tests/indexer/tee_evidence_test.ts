/**
 * The indexer's check of a TEE-tier provider's evidence (`indexer/tee_evidence.ts`), against a
 * provider endpoint on loopback serving real signed TDX evidence under a test Intel PKI
 * (`tests/crypto/tee/_synthetic.ts`): verified when the quote chains to the roots, its
 * measurement is approved on chain and it attests the Registry's serving key; refused when not
 * (a mock bundle, another key, an unapproved measurement); not offered on a 404; unreachable on
 * a closed port. The outcome shows on `/providers/{address}` with its age.
 */

import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { initialState } from "../../indexer/state.ts";
import { type TeeEvidence, TeeEvidenceChecker } from "../../indexer/tee_evidence.ts";
import { createTestIntelPki } from "../crypto/tee/_synthetic.ts";
import { createTestNvidiaPki } from "../crypto/tee/_synthetic_nvidia.ts";
import { buildTdxBundle } from "../crypto/tee/_synthetic_bundle.ts";
import { closedPort, serve } from "../_http.ts";
import { handHistory, handSnapshot } from "./_network.ts";

const TEE = "0x2222222222222222222222222222222222222222";

Deno.test("TEE evidence: verified, refused, not offered, unreachable — and shown with its age", async () => {
  const now = new Date();
  const intel = await createTestIntelPki({ now });
  const gpuPki = await createTestNvidiaPki({ now });
  const pki = { ...intel, roots: { ...intel.roots, nvidia: gpuPki.roots.nvidia } };
  const servingKey = privateKeyToAccount(generatePrivateKey());
  const otherKey = privateKeyToAccount(generatePrivateKey());
  let mode: "good" | "other_key" | "mock" | "missing" = "good";
  await using provider = serve(async (request) => {
    const nonce = new URL(request.url).searchParams.get("nonce") ?? "";
    if (mode === "missing") return Response.json({ error: { code: "not_tee" } }, { status: 404 });
    if (mode === "mock") return Response.json({ format: "mock", nonce: `0x${nonce}` });
    const bytes = Uint8Array.from(nonce.match(/../g)!.map((h) => parseInt(h, 16)));
    const built = await buildTdxBundle({
      nonce: bytes,
      now: new Date(),
      pki,
      gpuPki,
      servingKey: mode === "other_key" ? otherKey : servingKey,
    });
    return Response.json(built.json);
  });
  const probe = await buildTdxBundle({ nonce: new Uint8Array(32), now, pki, gpuPki });
  const approved = [...probe.approvedIds] as `0x${string}`[];

  // The hand network's TEE provider, served from the endpoint above with the key above.
  const snapshot = handSnapshot(now);
  const live = snapshot.liveBy.get(TEE)!;
  live.state.trustRoot = servingKey.address;
  live.ad.endpoint = provider.url;
  snapshot.chain.approvedMeasurements = approved;

  const seen: TeeEvidence[] = [];
  let clock = now;
  const checker = new TeeEvidenceChecker({
    roots: probe.roots,
    recheckSecs: 60,
    clock: () => clock,
    onChange: (e) => seen.push(e),
  });
  const step = async (next: typeof mode) => {
    mode = next;
    clock = new Date(clock.getTime() + 61_000); // past recheckSecs
    await checker.check(snapshot);
    return checker.get(TEE)!;
  };

  const verified = await step("good");
  assert.equal(verified.status, "verified", verified.message ?? "");
  assert.equal(verified.format, "tdx");
  assert.equal(verified.measurementId, probe.measurementId);
  assert.ok(verified.expiresAt && verified.expiresAt > now);
  assert.deepEqual(verified.gpus?.map((g) => g.measurementId), [...probe.gpuMeasurementIds]);
  // Only the TEE-tier provider is asked; the verified-tier ones have no evidence to check.
  assert.equal(checker.get("0x1111111111111111111111111111111111111111"), undefined);

  const other = await step("other_key");
  assert.equal(other.status, "refused");
  assert.match(other.message!, /attests serving key .* the Registry lists/);

  const mock = await step("mock");
  assert.equal(mock.status, "refused");
  assert.match(mock.message!, /^mock/);

  snapshot.chain.approvedMeasurements = [];
  const unapproved = await step("good");
  assert.equal(unapproved.status, "refused");
  assert.match(unapproved.message!, /measurement/);
  snapshot.chain.approvedMeasurements = approved;

  const missing = await step("missing");
  assert.equal(missing.status, "not_offered");

  live.ad.endpoint = `http://127.0.0.1:${closedPort()}`;
  const down = await step("good");
  assert.equal(down.status, "unreachable");

  // Every change was reported once, in order.
  assert.deepEqual(seen.map((e) => e.status), [
    "verified",
    "refused",
    "refused",
    "refused",
    "not_offered",
    "unreachable",
  ]);

  // Before the next recheck nothing is asked again.
  const before = checker.get(TEE);
  await checker.check(snapshot);
  assert.equal(checker.get(TEE), before);

  // /providers/{address}: the tier's evidence with its age; a verified-tier provider has none.
  live.ad.endpoint = provider.url;
  await step("good");
  snapshot.takenAt = clock; // a fresh snapshot for the handler
  const handle = createIndexerHandler({
    state: () => ({
      ...initialState(30, 60),
      history: handHistory(),
      snapshot,
      lastSnapshotAt: now,
      lastAttemptAt: now,
    }),
    clock: () => new Date(clock.getTime() + 42_000),
    teeEvidence: (address) => checker.get(address),
    log: () => {},
  });
  const response = await handle(new Request(`http://127.0.0.1:8088/providers/${TEE}`));
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.verification.ad_commitment, "verified");
  assert.equal(body.tee.evidence.status, "verified");
  assert.equal(body.tee.evidence.age_secs, 42);
  assert.deepEqual(body.tee.gpu.measurements, [...probe.gpuMeasurementIds]);
  assert.equal(body.tee.gpu.count, probe.gpuMeasurementIds.length);
  assert.equal(body.tee.approved_measurements, approved.length);
  const plain = await handle(
    new Request("http://127.0.0.1:8088/providers/0x1111111111111111111111111111111111111111"),
  );
  assert.equal(plain.status, 200);
  assert.equal((await plain.json()).tee, null);
});
