/**
 * `@net/consumer`: the consumer side of a decentralized inference network. Each concept is a
 * subpath of its own; import only the one you need.
 *
 * - `@net/consumer` (this module): the error base every part shares — `NetError`, and
 *   `ReasonError` for an operation's error with a machine-readable `reason`.
 * - `@net/consumer/hpke`: HPKE (RFC 9180) suites and X25519 key pairs.
 * - `@net/consumer/ohttp`: Oblivious HTTP (RFC 9458, one-shot and chunked), key
 *   configurations, and the sealed exchange: `sealHttpRequest` (client) and
 *   `openHttpRequest` (provider).
 * - `@net/consumer/bhttp`: Binary HTTP (RFC 9292), whole messages and streamed responses.
 * - `@net/consumer/endorsement`: a provider's serving key endorsing an HPKE key configuration.
 * - `@net/consumer/tee`: TEE attestation of Intel TDX and AMD SEV-SNP (`verifyAttestation`).
 * - `@net/consumer/chain`: typed reads of the network's EVM contracts, pinned to one block,
 *   and provider ads.
 * - `@net/consumer/indexer`: the read-only stats and discovery service.
 * - `@net/consumer/daemon`: the local consumer daemon (OpenAI and Ollama APIs).
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
