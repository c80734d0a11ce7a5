/**
 * Cryptography of the consumer: everything that seals a request end to end to a provider.
 *
 * - {@link ./sealed_exchange.ts | The sealed exchange}: `sealHttpRequest` (the daemon) and
 *   `openHttpRequest` (the provider) — one call per side for `docs/protocol.md` §7.
 * - HPKE suites and key pairs (`hpkeSuite`, `generateKeyPair`, `importKeyPair`,
 *   `deriveKeyPair`).
 * - Oblivious HTTP key configurations (`encodeKeyConfig`, `decodeKeyConfigList`,
 *   `createGatewayKey`), one-shot encapsulation (`encapsulateRequest`,
 *   `decapsulateRequest`) and chunked encapsulation as Web Streams (`createChunkedRequest`,
 *   `openChunkedRequest`).
 * - Binary HTTP (`encodeRequest`, `decodeResponse`, `encodeResponseStream`,
 *   `decodeResponseStream`, ...).
 * - Key endorsements (`endorseKey`, `verifyEndorsement`).
 *
 * Wire format decisions and the API of both sides are described in `docs/crypto.md`.
 *
 * @example The daemon seals a chat request; the provider answers with a stream
 * ```ts
 * import {
 *   createGatewayKey,
 *   encodeKeyConfig,
 *   generateKeyPair,
 *   openHttpRequest,
 *   sealHttpRequest,
 * } from "@net/consumer/crypto";
 *
 * const providerKey = createGatewayKey(await generateKeyPair(), { keyId: 1 });
 *
 * const sealed = await sealHttpRequest(encodeKeyConfig(providerKey.config), {
 *   body: { model: "devnet/tiny-chat", messages: [{ role: "user", content: "hi" }] },
 * });
 * const request = await openHttpRequest(providerKey, sealed.body);
 * const reply = await sealed.openResponse(
 *   request.respond({ status: 200, headers: { "content-type": "application/json" }, body: "{}" }),
 * );
 * console.assert(reply.status === 200 && (await new Response(reply.body).text()) === "{}");
 * ```
 *
 * @module
 */

export * from "./bhttp.ts";
export * from "./chunked_ohttp.ts";
export * from "./endorsement.ts";
export * from "./hpke.ts";
export * from "./key_config.ts";
export * from "./ohttp.ts";
export * from "./ohttp_errors.ts";
export * from "./sealed_exchange.ts";
export * from "./tee/mod.ts";
