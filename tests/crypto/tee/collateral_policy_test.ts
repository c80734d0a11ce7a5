import assert from "node:assert/strict";
import {
  ACCEPTABLE_TCB_STATUSES,
  resolveCollateralPolicy,
} from "../../../crypto/tee/collateral_policy.ts";
import { DEFAULT_COLLATERAL_POLICY } from "../../../crypto/tee/mod.ts";

Deno.test("the default policy accepts UpToDate and SWHardeningNeeded, requires collateral and a GPU", () => {
  assert.deepEqual(resolveCollateralPolicy(), {
    acceptTcbStatuses: ["SWHardeningNeeded"],
    allowMissingCollateral: false,
    snpMinimumTcb: {},
    minTcbEvaluationDataNumber: 0,
    requireGpu: true,
    allowMissingGpuCollateral: false,
  });
  assert.ok(Object.isFrozen(DEFAULT_COLLATERAL_POLICY));
});

Deno.test("Revoked and NotSupported can never be accepted", () => {
  for (const status of ["Revoked", "NotSupported", "UpToDate", "Whatever"]) {
    assert.throws(
      () => resolveCollateralPolicy({ acceptTcbStatuses: [status as "OutOfDate"] }),
      TypeError,
      status,
    );
  }
  for (const status of ACCEPTABLE_TCB_STATUSES) {
    assert.deepEqual(resolveCollateralPolicy({ acceptTcbStatuses: [status] }).acceptTcbStatuses, [
      status,
    ]);
  }
});

Deno.test("bad SEV-SNP minimums are refused", () => {
  assert.throws(() => resolveCollateralPolicy({ snpMinimumTcb: { snp: 256 } }), TypeError);
  assert.throws(
    () => resolveCollateralPolicy({ snpMinimumTcb: { nope: 1 } as unknown as { snp: number } }),
    TypeError,
  );
  for (const flag of ["allowMissingCollateral", "requireGpu", "allowMissingGpuCollateral"]) {
    assert.throws(
      () => resolveCollateralPolicy({ [flag]: "yes" as unknown as boolean }),
      (e: unknown) => e instanceof TypeError && e.message.includes(flag),
      flag,
    );
  }
  assert.deepEqual(resolveCollateralPolicy({ snpMinimumTcb: { snp: 8 } }).snpMinimumTcb, {
    snp: 8,
  });
});

Deno.test("the minimum TCB evaluation data number is an unsigned 32-bit integer", () => {
  for (const bad of [-1, 1.5, Number.NaN, Infinity, 2 ** 32, "18"]) {
    assert.throws(
      () => resolveCollateralPolicy({ minTcbEvaluationDataNumber: bad as number }),
      (e: unknown) => e instanceof TypeError && /minTcbEvaluationDataNumber/.test(e.message),
      String(bad),
    );
  }
  assert.equal(
    resolveCollateralPolicy({ minTcbEvaluationDataNumber: 18 }).minTcbEvaluationDataNumber,
    18,
  );
});
