import assert from "node:assert/strict";
import type { TcbStatus } from "../../../crypto/tee/mod.ts";
import {
  evaluateTdxTcb,
  type IdentityLevel,
  type TcbInfoLevels,
  type TcbInputs,
  type TcbLevel,
} from "../../../crypto/tee/tcb_status.ts";

const zero16 = (head: number[] = []) => [...head, ...new Array(16 - head.length).fill(0)];

function level(
  status: TcbStatus,
  sgx: number,
  tdx: number[],
  options: { pceSvn?: number; advisories?: string[] } = {},
): TcbLevel {
  return {
    sgxComponents: zero16([sgx, sgx]),
    pceSvn: options.pceSvn ?? 11,
    tdxComponents: zero16(tdx),
    tcbDate: `level-${status}-${sgx}`,
    status,
    advisoryIds: options.advisories ?? [],
  };
}

function identity(...levels: [number, IdentityLevel["status"], string[]?][]): IdentityLevel[] {
  return levels.map(([isvSvn, status, advisoryIds]) => ({
    isvSvn,
    status,
    tcbDate: "",
    advisoryIds: advisoryIds ?? [],
  }));
}

const info: TcbInfoLevels = {
  tcbLevels: [
    level("UpToDate", 7, [5, 0, 7]),
    level("SWHardeningNeeded", 6, [5, 0, 6], { advisories: ["SA-2"] }),
    level("ConfigurationNeeded", 5, [3, 0, 5], { advisories: ["SA-1", "SA-2"] }),
    level("OutOfDate", 4, [3, 0, 4], { advisories: ["SA-0", "SA-1"] }),
    level("Revoked", 3, [2, 0, 3], { advisories: ["SA-X"] }),
  ],
  tdxModuleIdentities: [
    {
      id: "TDX_01",
      mrSigner: new Uint8Array(48),
      attributes: new Uint8Array(8),
      attributesMask: new Uint8Array(8).fill(0xff),
      tcbLevels: identity([6, "UpToDate"], [4, "OutOfDate", ["SA-M"]], [2, "Revoked"]),
    },
  ],
};

function inputs(overrides: Partial<TcbInputs> & { sgx?: number; tee?: number[] }): TcbInputs {
  return {
    sgxComponents: zero16([overrides.sgx ?? 7, overrides.sgx ?? 7]),
    pceSvn: 11,
    teeTcbSvn: Uint8Array.from(zero16(overrides.tee ?? [7, 0, 7])),
    teeTcbSvn2: null,
    qeIsvSvn: 8,
    qeLevels: identity([8, "UpToDate"], [4, "OutOfDate", ["SA-Q"]]),
    ...overrides,
  };
}

Deno.test("the first level at or below every component wins", () => {
  assert.equal(evaluateTdxTcb(info, inputs({})).status, "UpToDate");
  assert.equal(evaluateTdxTcb(info, inputs({ sgx: 6 })).status, "SWHardeningNeeded");
  assert.deepEqual(evaluateTdxTcb(info, inputs({ sgx: 6 })).advisoryIds, ["SA-2"]);
  // SGX would match level 0, but the TDX part only matches level 2.
  const mixed = evaluateTdxTcb(info, inputs({ tee: [4, 0, 5] }));
  assert.equal(mixed.status, "ConfigurationNeeded");
  assert.deepEqual(mixed.advisoryIds, ["SA-1", "SA-2"]);
  assert.equal(evaluateTdxTcb(info, inputs({ sgx: 4, tee: [3, 0, 4] })).status, "OutOfDate");
  assert.equal(evaluateTdxTcb(info, inputs({ sgx: 3, tee: [3, 0, 4] })).status, "Revoked");
  // PCESVN below every level, SGX below every level, TDX below every level.
  assert.equal(evaluateTdxTcb(info, { ...inputs({}), pceSvn: 10 }).status, "NotSupported");
  assert.equal(evaluateTdxTcb(info, inputs({ sgx: 2 })).status, "NotSupported");
  assert.equal(evaluateTdxTcb(info, inputs({ tee: [1, 0, 1] })).status, "NotSupported");
});

Deno.test("all sixteen TEE_TCB_SVN bytes are compared, even with a module identity", () => {
  // Byte 0 (module SVN 4) is below level 0's 5: Intel would skip it; we take level 1.
  const result = evaluateTdxTcb(info, inputs({ tee: [6, 1, 7] }));
  assert.equal(result.status, "UpToDate");
  const lower = evaluateTdxTcb(info, inputs({ tee: [4, 1, 7] }));
  assert.notEqual(lower.status, "UpToDate");
});

Deno.test("the TDX module identity folds into the status", () => {
  // Module major version 1, SVN 4: the identity says OutOfDate.
  const outOfDate = evaluateTdxTcb(info, inputs({ tee: [5, 1, 7] }));
  assert.equal(outOfDate.status, "OutOfDate");
  assert.ok(outOfDate.advisoryIds.includes("SA-M"));
  const configuration = evaluateTdxTcb(info, inputs({ tee: [5, 1, 5], sgx: 5 }));
  assert.equal(configuration.status, "OutOfDateConfigurationNeeded");
  assert.equal(evaluateTdxTcb(info, inputs({ tee: [9, 1, 7] })).status, "UpToDate");
  // Module SVN 3: the identity's "Revoked" level (isvsvn 2) applies.
  assert.equal(evaluateTdxTcb(info, inputs({ tee: [5, 1, 7], qeIsvSvn: 8 })).status, "OutOfDate");
  const revokedModule: TcbInfoLevels = {
    ...info,
    tcbLevels: [level("UpToDate", 7, [2, 0, 7])],
  };
  assert.equal(evaluateTdxTcb(revokedModule, inputs({ tee: [3, 1, 7] })).status, "Revoked");
  // No identity for major version 2; SVN below every identity level.
  assert.equal(evaluateTdxTcb(info, inputs({ tee: [9, 2, 7] })).status, "NotSupported");
  assert.equal(evaluateTdxTcb(revokedModule, inputs({ tee: [2, 1, 7] })).status, "Revoked");
  const strictModule: TcbInfoLevels = {
    ...revokedModule,
    tdxModuleIdentities: [{ ...info.tdxModuleIdentities[0], tcbLevels: identity([4, "UpToDate"]) }],
  };
  assert.equal(evaluateTdxTcb(strictModule, inputs({ tee: [3, 1, 7] })).status, "NotSupported");
});

Deno.test("the QE identity folds into the status", () => {
  const qeOld = evaluateTdxTcb(info, inputs({ qeIsvSvn: 5 }));
  assert.equal(qeOld.status, "OutOfDate");
  assert.ok(qeOld.advisoryIds.includes("SA-Q"));
  assert.equal(
    evaluateTdxTcb(info, inputs({ qeIsvSvn: 5, sgx: 5, tee: [3, 0, 5] })).status,
    "OutOfDateConfigurationNeeded",
  );
  assert.equal(evaluateTdxTcb(info, inputs({ qeIsvSvn: 3 })).status, "NotSupported");
  const revokedQe = inputs({ qeLevels: identity([8, "Revoked"]) });
  assert.equal(evaluateTdxTcb(info, revokedQe).status, "Revoked");
});

Deno.test("TD 1.5: a TD launched before a module update is told to relaunch", () => {
  // Running module (TEE_TCB_SVN) is out of date per its identity; the platform now has a
  // current module (TEE_TCB_SVN2).
  const base = inputs({ tee: [5, 1, 7] });
  assert.equal(evaluateTdxTcb(info, base).status, "OutOfDate");
  const relaunch = evaluateTdxTcb(info, {
    ...base,
    teeTcbSvn2: Uint8Array.from(zero16([6, 1, 7])),
  });
  assert.equal(relaunch.status, "TDRelaunchAdvised");
  // Configuration needed on the SGX side carries over.
  const configured = evaluateTdxTcb(info, {
    ...inputs({ tee: [5, 1, 5], sgx: 5 }),
    teeTcbSvn2: Uint8Array.from(zero16([6, 1, 7])),
  });
  assert.equal(configured.status, "TDRelaunchAdvisedConfigurationNeeded");
  // The newer module is itself not current: no relaunch advice.
  assert.equal(
    evaluateTdxTcb(info, { ...base, teeTcbSvn2: Uint8Array.from(zero16([5, 1, 7])) }).status,
    "OutOfDate",
  );
  // An out-of-date QE blocks the advice.
  assert.equal(
    evaluateTdxTcb(info, { ...base, qeIsvSvn: 5, teeTcbSvn2: Uint8Array.from(zero16([6, 1, 7])) })
      .status,
    "OutOfDate",
  );
});
