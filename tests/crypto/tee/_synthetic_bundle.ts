/**
 * Test-only builders of whole attestation bundles under test roots: a TDX quote or SEV-SNP
 * report whose report data binds the nonce, the serving key, the GPUs' reports and the served
 * models (`docs/protocol.md` §6), the CPU collateral, one or more NVIDIA-shaped GPUs with
 * their OCSP collateral, and a nonce-bound endorsement.
 *
 * ```ts ignore
 * const built = await buildTdxBundle({ nonce, now, models });
 * const verdict = await verifyAttestation(built.bundle, {
 *   nonce, nonces, now, roots: built.roots,
 *   approved: ApprovedMeasurements.fromList(built.approvedIds),
 * });
 * ```
 *
 * @module
 */

import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { hexToBytes } from "viem";
import { endorseKey } from "../../../crypto/endorsement.ts";
import {
  type AttestationBundleJson,
  attestationBundleToJson,
  attestationReportData,
  type AttestedModel,
  type BoundEvidence,
  type GpuCollateral,
  type GpuEvidence,
  gpuMeasurementId,
  gpuNonce,
  type MeasurementId,
  parseGpuReport,
  type SnpBundle,
  snpMeasurementId,
  type TdxBundle,
  tdxMeasurementId,
  type TrustRoots,
} from "../../../crypto/tee/mod.ts";
import {
  buildSnpReport,
  buildTdxCollateral,
  buildTdxQuote,
  createTestAmdPki,
  createTestIntelPki,
  type SnpReportOptions,
  type TdxCollateralOptions,
  type TdxQuoteOptions,
  type TestAmdPki,
  type TestIntelPki,
} from "./_synthetic.ts";
import {
  buildGpuCollateral,
  buildGpuEvidence,
  createTestNvidiaPki,
  type GpuOcspOptions,
  type GpuReportOptions,
  type TestNvidiaPki,
} from "./_synthetic_nvidia.ts";

const intelPkis = new Map<number, Promise<TestIntelPki>>();
const amdPkis = new Map<number, Promise<TestAmdPki>>();
const nvidiaPkis = new Map<number, Promise<TestNvidiaPki>>();

/** One PKI per `now` for the builders' default (key generation, RSA above all, is slow). */
function sharedPki<P>(
  cache: Map<number, Promise<P>>,
  now: Date,
  create: (options: { now: Date }) => Promise<P>,
): Promise<P> {
  let pki = cache.get(now.getTime());
  if (!pki) {
    pki = create({ now });
    cache.set(now.getTime(), pki);
  }
  return pki;
}

function filled(length: number, byte: number): Uint8Array {
  return new Uint8Array(length).fill(byte);
}

/** Default HPKE key configuration bytes used by the builders (opaque to this library). */
export const TEST_KEY_CONFIG: Uint8Array = Uint8Array.from(
  { length: 41 },
  (_, i) => (i * 7) & 0xff,
);

/** What a bundle builder returns. */
export interface BuiltBundle<B> {
  /** The bundle. */
  readonly bundle: B;
  /** Its JSON form, as a provider would serve it. */
  readonly json: AttestationBundleJson;
  /** The roots under which it verifies (the CPU vendor's test root and the GPUs'). */
  readonly roots: TrustRoots;
  /** The enclave's measurement id. */
  readonly measurementId: MeasurementId;
  /** Each GPU's measurement id. */
  readonly gpuMeasurementIds: readonly MeasurementId[];
  /** Every id to approve for the bundle to pass: the enclave's and the GPUs'. */
  readonly approvedIds: readonly MeasurementId[];
  /** The serving key. */
  readonly servingKey: PrivateKeyAccount;
}

/** Options shared by the bundle builders. */
export interface BundleOptions {
  /** The nonce the daemon issued. */
  nonce: Uint8Array;
  /** The time the bundle is built for. */
  now: Date;
  /** The serving key. @default {a fresh key} */
  servingKey?: PrivateKeyAccount;
  /** The key that signs the endorsement. @default {the serving key} */
  endorsementSigner?: PrivateKeyAccount;
  /** The HPKE key configuration. @default {TEST_KEY_CONFIG} */
  keyConfig?: Uint8Array;
  /** Endorsement expiry, Unix seconds. @default {now + 1 hour} */
  endorsementExpiresAt?: number;
  /** Nonce in the endorsement. @default {nonce} */
  endorsementNonce?: Uint8Array | null;
  /** Report data override. @default {the protocol's binding} */
  reportData?: Uint8Array;
  /** Evidence the report data binds, instead of the bundle's own. */
  boundEvidence?: BoundEvidence;
  /** Models the report data binds, instead of the bundle's (`models`). */
  boundModels?: AttestedModel[];
  /** Nonce written into the bundle. @default {nonce} */
  bundleNonce?: Uint8Array;
  /** GPUs the bundle carries. @default {1} */
  gpus?: number;
  /** The GPUs' PKI. @default {one shared PKI per `now` value} */
  gpuPki?: TestNvidiaPki;
  /** What the GPUs report (measurements, driver, FWID, signing key). */
  gpuReport?: Omit<GpuReportOptions, "nonce">;
  /** The nonce the GPUs sign. @default {gpuNonce(nonce, serving key)} */
  gpuNonce?: Uint8Array;
  /** GPU revocation collateral: `false` for none, or OCSP options. @default {fresh, good} */
  gpuCollateral?: false | Omit<GpuOcspOptions, "now">;
  /** The models the enclave names. @default {[]} */
  models?: AttestedModel[];
}

/** Options of {@linkcode buildTdxBundle}. */
export interface TdxBundleOptions extends BundleOptions, Omit<TdxQuoteOptions, "reportData"> {
  /** The PKI to issue under. @default {one shared PKI per `now` value} */
  pki?: TestIntelPki;
  /** Collateral: `false` for none, or options. @default {UpToDate collateral valid at now} */
  collateral?: false | Omit<TdxCollateralOptions, "now">;
}

/** What both builders share: the key, the GPUs, the binding and the endorsement. */
async function common(options: BundleOptions) {
  const servingKey = options.servingKey ?? privateKeyToAccount(generatePrivateKey());
  const servingPublicKey = hexToBytes(servingKey.publicKey);
  const gpuPki = options.gpuPki ?? await sharedPki(nvidiaPkis, options.now, createTestNvidiaPki);
  const signedNonce = options.gpuNonce ?? gpuNonce(options.nonce, servingPublicKey);
  const gpus: GpuEvidence[] = await Promise.all(
    Array.from(
      { length: options.gpus ?? 1 },
      () => buildGpuEvidence(gpuPki, { ...options.gpuReport, nonce: signedNonce }),
    ),
  );
  const gpuCollateral: GpuCollateral | null = options.gpuCollateral === false || !gpus.length
    ? null
    : await buildGpuCollateral(gpuPki, { ...options.gpuCollateral, now: options.now });
  const models = options.models ?? [];
  const reportData = options.reportData ??
    attestationReportData(
      options.nonce,
      servingPublicKey,
      options.boundEvidence ??
        { gpuReports: gpus.map((gpu) => gpu.report), models: options.boundModels ?? models },
    );
  const endorsement = await endorseKey(options.endorsementSigner ?? servingKey, {
    keyConfig: options.keyConfig ?? TEST_KEY_CONFIG,
    expiresAt: options.endorsementExpiresAt ?? Math.floor(options.now.getTime() / 1000) + 3600,
    nonce: options.endorsementNonce === undefined ? options.nonce : options.endorsementNonce,
  });
  const gpuMeasurementIds = gpus.map((gpu) => gpuMeasurementId(parseGpuReport(gpu.report)));
  return {
    servingKey,
    servingPublicKey,
    reportData,
    endorsement,
    shared: { gpus, gpuCollateral, models },
    gpuRoots: gpuPki.roots.nvidia ?? [],
    gpuMeasurementIds,
  };
}

/**
 * Builds a TDX bundle that verifies under the returned roots (with `approvedIds` approved):
 * a quote binding the nonce, serving key, GPUs and models under the given (or a shared) test
 * PKI, collateral, one GPU with its OCSP answers, and a nonce-bound endorsement.
 */
export async function buildTdxBundle(options: TdxBundleOptions): Promise<BuiltBundle<TdxBundle>> {
  const pki = options.pki ?? await sharedPki(intelPkis, options.now, createTestIntelPki);
  const made = await common(options);
  const quote = await buildTdxQuote(pki, { ...options, reportData: made.reportData });
  const collateral = options.collateral === false
    ? null
    : await buildTdxCollateral(pki, { ...options.collateral, now: options.now });
  const bundle: TdxBundle = {
    format: "tdx",
    nonce: options.bundleNonce ?? options.nonce,
    servingPublicKey: made.servingPublicKey,
    quote,
    collateral,
    endorsement: made.endorsement,
    ...made.shared,
  };
  const rtmrs = options.rtmrs ??
    [filled(48, 0x20), filled(48, 0x21), filled(48, 0x22), filled(48, 0x23)];
  const measurementId = tdxMeasurementId({ mrTd: options.mrTd ?? filled(48, 0x11), rtmrs });
  return {
    bundle,
    json: attestationBundleToJson(bundle),
    roots: { ...pki.roots, nvidia: made.gpuRoots },
    measurementId,
    gpuMeasurementIds: made.gpuMeasurementIds,
    approvedIds: [measurementId, ...made.gpuMeasurementIds],
    servingKey: made.servingKey,
  };
}

/** Options of {@linkcode buildSnpBundle}. */
export interface SnpBundleOptions extends BundleOptions, Omit<SnpReportOptions, "reportData"> {
  /** The PKI to issue under. @default {one shared PKI per `now` value} */
  pki?: TestAmdPki;
}

/** Builds an SEV-SNP bundle that verifies under the returned roots. */
export async function buildSnpBundle(options: SnpBundleOptions): Promise<BuiltBundle<SnpBundle>> {
  const pki = options.pki ?? await sharedPki(amdPkis, options.now, createTestAmdPki);
  const made = await common(options);
  const measurement = options.measurement ?? filled(48, 0x5e);
  const quote = await buildSnpReport(pki, {
    ...options,
    reportData: made.reportData,
    measurement,
  });
  const bundle: SnpBundle = {
    format: "sev-snp",
    nonce: options.bundleNonce ?? options.nonce,
    servingPublicKey: made.servingPublicKey,
    quote,
    collateral: { vcek: pki.vcek.der },
    endorsement: made.endorsement,
    ...made.shared,
  };
  const measurementId = snpMeasurementId(measurement);
  return {
    bundle,
    json: attestationBundleToJson(bundle),
    roots: { ...pki.roots, nvidia: made.gpuRoots },
    measurementId,
    gpuMeasurementIds: made.gpuMeasurementIds,
    approvedIds: [measurementId, ...made.gpuMeasurementIds],
    servingKey: made.servingKey,
  };
}
