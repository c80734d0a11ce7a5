/**
 * Cryptography of the consumer: key endorsements and TEE attestation (more to come: HPKE,
 * Oblivious HTTP, Binary HTTP).
 *
 * @module
 */

export * from "./endorsement.ts";
export * from "./tee/mod.ts";
