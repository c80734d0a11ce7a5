/**
 * Review reproductions: time and lifetime inputs that turn a freshness check off instead of
 * failing closed (`crypto/endorsement.ts`, `crypto/tee/verify_attestation.ts`). None of these
 * values comes from the network; they come from the daemon's own code or configuration (a
 * clock that returns an Invalid Date, a lifetime read with `Number(env)` from an empty or
 * mistyped variable). The project's rule is that every security
 * check fails closed, so a bad parameter must be refused, not silently skip the check.
 *
 * Each test FAILS while the bug it describes exists.
 *
 * @module
 */

import assert from "node:assert/strict";
import { privateKeyToAccount } from "viem/accounts";
import { endorseKey, verifyEndorsement } from "../../crypto/endorsement.ts";
import { ApprovedMeasurements, NonceBook, verifyAttestation } from "../../crypto/tee/mod.ts";
import { buildTdxBundle, createTestIntelPki } from "../crypto/tee/_synthetic.ts";

// Well-known anvil dev key: deterministic, never used for anything real.
const serving = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
const now = new Date("2026-11-22T12:00:00Z");
const nowSeconds = Math.floor(now.getTime() / 1000);
const keyConfig = Uint8Array.from({ length: 41 }, (_, i) => i);

/** Resolves to "accepted" or to the error's name/message. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "accepted";
  } catch (error) {
    return `refused: ${(error as Error).message.split("\n")[0]}`;
  }
}

// `verifyEndorsement` compares `expires_at <= floor(now / 1000)` and
// `expires_at - now > maxLifetime`. With `now` an Invalid Date both comparisons are with NaN, so
// both are false: an endorsement that expired years ago verifies. (`verifyAttestation` checks
// `now`; `verifyEndorsement`, which the verified tier calls directly, does not.)
Deno.test("review: verifyEndorsement refuses an Invalid Date instead of skipping the expiry check", async () => {
  const expired = await endorseKey(serving, {
    keyConfig,
    expiresAt: nowSeconds - 10 * 365 * 86400,
  });
  const result = await outcome(
    verifyEndorsement(expired, { now: new Date(Number.NaN), signer: serving.address }),
  );
  assert.notEqual(result, "accepted", "an endorsement expired ten years ago was accepted");
});

// `maxLifetimeSeconds: NaN` (e.g. `Number(process.env.X)` of an empty variable) makes
// `expires_at - now > NaN` false: the 7-day cap is off. `Infinity` does the same, and a negative
// value (which refuses everything) is not flagged either. The option should be a positive finite
// number, or be refused.
Deno.test("review: verifyEndorsement refuses a NaN lifetime cap instead of disabling it", async () => {
  const forever = await endorseKey(serving, {
    keyConfig,
    expiresAt: nowSeconds + 100 * 365 * 86400,
  });
  const result = await outcome(
    verifyEndorsement(forever, { now, signer: serving.address, maxLifetimeSeconds: Number.NaN }),
  );
  assert.notEqual(result, "accepted", "a 100-year endorsement was accepted with a NaN cap");
});

// The TEE tier's own option passes straight through: `maxEndorsementLifetimeSeconds: NaN`
// accepts an HPKE key endorsed for ten years, contrary to "no option disables a check".
Deno.test("review: verifyAttestation refuses a NaN endorsement lifetime cap", async () => {
  const nonces = new NonceBook();
  const nonce = nonces.issue(now);
  const built = await buildTdxBundle({
    nonce,
    now,
    pki: await createTestIntelPki({ now }),
    endorsementExpiresAt: nowSeconds + 10 * 365 * 86400,
  });
  const result = await outcome(
    verifyAttestation(built.bundle, {
      nonce,
      nonces,
      now,
      roots: built.roots,
      approved: ApprovedMeasurements.fromList([built.measurementId]),
      maxEndorsementLifetimeSeconds: Number.NaN,
    }),
  );
  assert.notEqual(result, "accepted", "a ten-year HPKE key endorsement was accepted");
});
