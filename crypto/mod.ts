/**
 * Everything in `crypto/` in one import, for this repository's own programs (the daemon, the
 * devnet, the benchmarks). It is not a published entry point: the package publishes each
 * concept on its own subpath, and library users import those.
 *
 * - `hpke/mod.ts` (`@net/consumer/hpke`): HPKE suites and key pairs.
 * - `ohttp/mod.ts` (`@net/consumer/ohttp`): key configurations, one-shot and chunked OHTTP,
 *   the sealed exchange.
 * - `bhttp/mod.ts` (`@net/consumer/bhttp`): Binary HTTP.
 * - `endorsement.ts` (`@net/consumer/endorsement`): key endorsements by a serving key.
 * - `receipt.ts` (`@net/consumer/receipt`): reply receipts signed by an attested serving key.
 * - `tee/mod.ts` (`@net/consumer/tee`): TEE attestation (Intel TDX, AMD SEV-SNP, NVIDIA GPUs).
 *
 * @example
 * ```ts
 * import { createGatewayKey, generateKeyPair, sealHttpRequest } from "./mod.ts";
 *
 * const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
 * const sealed = await sealHttpRequest(key.config, { body: { ping: true } });
 * console.assert(sealed.contentType === "message/ohttp-chunked-req");
 * ```
 *
 * @module
 */

export * from "./hpke/mod.ts";
export * from "./ohttp/mod.ts";
export * from "./bhttp/mod.ts";
export * from "./endorsement.ts";
export * from "./receipt.ts";
export * from "./tee/mod.ts";
