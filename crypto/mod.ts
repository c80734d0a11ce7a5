/**
 * Everything in `crypto/` in one import, for this repository's own programs (the daemon, the
 * devnet, the benchmarks). It is not a published entry point: the package publishes each
 * concept on its own subpath, and library users import those.
 *
 * | subpath                     | file                  | what                                            |
 * | --------------------------- | --------------------- | ----------------------------------------------- |
 * | `@net/consumer/hpke`        | `hpke/mod.ts`         | HPKE suites and key pairs                       |
 * | `@net/consumer/ohttp`       | `ohttp/mod.ts`        | key configurations, one-shot and chunked OHTTP, the sealed exchange |
 * | `@net/consumer/bhttp`       | `bhttp/mod.ts`        | Binary HTTP                                     |
 * | `@net/consumer/endorsement` | `endorsement.ts`      | key endorsements by a provider's serving key    |
 * | `@net/consumer/tee`         | `tee/mod.ts`          | TEE attestation (Intel TDX, AMD SEV-SNP)        |
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
export * from "./tee/mod.ts";
