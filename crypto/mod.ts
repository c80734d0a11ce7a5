/**
 * Cryptography of the consumer: key endorsements (more to come: HPKE, Oblivious HTTP,
 * Binary HTTP, TEE attestation).
 *
 * @module
 */

export * from "./endorsement.ts";
