/**
 * `@net/consumer`: the consumer side of a decentralized inference network.
 *
 * - `@net/consumer/crypto`: HPKE sealing, Oblivious HTTP (RFC 9458 and chunked), Binary
 *   HTTP (RFC 9292), key endorsements and TEE attestation verification.
 * - `@net/consumer/chain`: typed reads of the network's EVM contracts, pinned to one block.
 * - `@net/consumer/indexer`: the read-only stats and discovery service.
 * - `@net/consumer/daemon`: the local consumer daemon (OpenAI and Ollama APIs).
 *
 * This entry point exports what every part shares: the error base.
 *
 * @example Tell the project's errors apart from others
 * ```ts
 * import { NetError } from "@net/consumer";
 *
 * try {
 *   throw new NetError("Cannot do the thing: found A, expected B");
 * } catch (error) {
 *   if (error instanceof NetError) console.log(error.shortMessage);
 * }
 * ```
 *
 * @module
 */

export { abbreviate, findCause, NetError, type NetErrorOptions, ReasonError } from "./errors.ts";
