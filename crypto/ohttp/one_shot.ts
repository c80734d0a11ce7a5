/**
 * Oblivious HTTP request and response encapsulation, one-shot form (RFC 9458 §4): the whole
 * request is one HPKE seal, the whole response one AEAD seal.
 *
 * ```
 * Encapsulated Request  = hdr ‖ enc ‖ Seal(info = "message/bhttp request" ‖ 0x00 ‖ hdr, request)
 * Encapsulated Response = response_nonce ‖ Seal(aead_key, aead_nonce, "", response)
 * ```
 *
 * The network's sealed exchange uses the chunked form (`chunked.ts`); this one is here
 * for completeness and for the RFC 9458 test vector.
 *
 * @example Both sides of one exchange
 * ```ts
 * import { generateKeyPair } from "@net/consumer/hpke";
 * import {
 *   createGatewayKey,
 *   decapsulateRequest,
 *   encapsulateRequest,
 *   encodeKeyConfig,
 * } from "@net/consumer/ohttp";
 *
 * const gatewayKey = createGatewayKey(await generateKeyPair(), { keyId: 7 });
 * const keyConfig = encodeKeyConfig(gatewayKey.config);
 *
 * // client
 * const client = await encapsulateRequest(keyConfig, new TextEncoder().encode("ping"));
 * // gateway
 * const gateway = await decapsulateRequest(gatewayKey, client.encapsulatedRequest);
 * const sealed = await gateway.sealResponse(new TextEncoder().encode("pong"));
 * // client
 * const response = await client.openResponse(sealed);
 * console.assert(new TextDecoder().decode(response) === "pong");
 * ```
 *
 * @module
 */

import { bytesLabel } from "../_bytes.ts";
import {
  type ClientSetupOptions,
  deriveResponseKeys,
  EMPTY,
  gatewayKeys,
  HEADER_LENGTH,
  ONE_SHOT_LABELS,
  parseRequestHeader,
  prefixLength,
  responseNonceLength,
  selectGatewayKey,
  setupClient,
  setupGateway,
} from "./_encapsulation.ts";
import { randomBytes, type RandomSource, systemRandom } from "../hpke/key_pair.ts";
import type { HpkeSuite } from "../hpke/suite.ts";
import type { GatewayKey, KeyConfig } from "./key_config.ts";
import { OpenError, SealError } from "./errors.ts";

/** Media type of a one-shot encapsulated request. */
export const REQUEST_MEDIA_TYPE = "message/ohttp-req";
/** Media type of a one-shot encapsulated response. */
export const RESPONSE_MEDIA_TYPE = "message/ohttp-res";

/** Options of {@linkcode encapsulateRequest}. */
export interface EncapsulateRequestOptions {
  /**
   * The AEAD to use; the key configuration must offer it.
   *
   * @default AES-128-GCM when offered, else the first suite the configuration lists
   */
  aead?: number;
  /**
   * Where the ephemeral key's bytes come from. Inject a fixed source only in tests.
   *
   * @default {crypto.getRandomValues}
   */
  random?: RandomSource;
}

/** The client's side of one exchange. */
export interface ClientExchange {
  /** Key identifier the request is sealed to. */
  readonly keyId: number;
  /** The suite used. */
  readonly suite: HpkeSuite;
  /** `hdr ‖ enc ‖ ct`, to send as `message/ohttp-req`. */
  readonly encapsulatedRequest: Uint8Array;
  /**
   * Opens the gateway's encapsulated response.
   *
   * @throws {OpenError} with reason `truncated` (shorter than nonce and tag) or
   * `authentication`.
   */
  openResponse(encapsulatedResponse: Uint8Array): Promise<Uint8Array>;
}

/**
 * Seals a request to a key configuration (given as bytes or decoded).
 *
 * @throws {SealError} with reason `invalid_key_config`, `unsupported_suite` or `crypto`.
 */
export async function encapsulateRequest(
  keyConfig: Uint8Array | KeyConfig,
  request: Uint8Array,
  options: EncapsulateRequestOptions = {},
): Promise<ClientExchange> {
  if (!(request instanceof Uint8Array)) {
    throw new SealError(
      "invalid_input",
      `Cannot seal request: expected bytes, found ${typeof request}`,
    );
  }
  const setup = await setupClient(keyConfig, ONE_SHOT_LABELS, options as ClientSetupOptions);
  let ciphertext: Uint8Array;
  try {
    ciphertext = await setup.context.seal(request, EMPTY);
  } catch (cause) {
    throw new SealError("crypto", "Cannot seal request: HPKE seal failed", { cause });
  }
  const encapsulatedRequest = new Uint8Array(setup.prefix.length + ciphertext.length);
  encapsulatedRequest.set(setup.prefix);
  encapsulatedRequest.set(ciphertext, setup.prefix.length);
  const { suite } = setup;
  return {
    keyId: setup.keyId,
    suite,
    encapsulatedRequest,
    async openResponse(encapsulatedResponse: Uint8Array): Promise<Uint8Array> {
      const nonceLength = responseNonceLength(suite);
      if (
        !(encapsulatedResponse instanceof Uint8Array) ||
        encapsulatedResponse.length < nonceLength + suite.aead.tagLength
      ) {
        throw new OpenError(
          "truncated",
          `Cannot open response: it is ${
            encapsulatedResponse instanceof Uint8Array
              ? bytesLabel(encapsulatedResponse.length)
              : typeof encapsulatedResponse
          }, shorter than the ${nonceLength}-byte nonce and ${suite.aead.tagLength}-byte tag`,
        );
      }
      const keys = deriveResponseKeys(
        suite,
        setup.context,
        setup.enc,
        encapsulatedResponse.subarray(0, nonceLength),
        ONE_SHOT_LABELS.response,
      );
      try {
        return await keys.open(keys.nonce, encapsulatedResponse.subarray(nonceLength), EMPTY);
      } catch (cause) {
        throw new OpenError("authentication", "Cannot open response: authentication failed", {
          cause,
        });
      }
    },
  };
}

/** Options of {@linkcode decapsulateRequest}. */
export interface DecapsulateRequestOptions {
  /**
   * Where the response nonce comes from. Inject a fixed source only in tests.
   *
   * @default {crypto.getRandomValues}
   */
  random?: RandomSource;
}

/** The gateway's side of one exchange. */
export interface GatewayExchange {
  /** Key identifier the request was sealed to. */
  readonly keyId: number;
  /** The suite the client chose. */
  readonly suite: HpkeSuite;
  /** The opened request. */
  readonly request: Uint8Array;
  /**
   * Seals the response; call once.
   *
   * @throws {SealError} with reason `already_used` on a second call.
   */
  sealResponse(response: Uint8Array): Promise<Uint8Array>;
}

/**
 * Opens an encapsulated request with the gateway's key(s).
 *
 * @throws {OpenError} with reason `truncated`, `unknown_key`, `unsupported_suite`,
 * `malformed` or `authentication`.
 */
export async function decapsulateRequest(
  keys: GatewayKey | readonly GatewayKey[],
  encapsulatedRequest: Uint8Array,
  options: DecapsulateRequestOptions = {},
): Promise<GatewayExchange> {
  const list = gatewayKeys(keys);
  const what = ONE_SHOT_LABELS.what;
  if (!(encapsulatedRequest instanceof Uint8Array) || encapsulatedRequest.length < HEADER_LENGTH) {
    throw new OpenError(
      "truncated",
      `Cannot open request: it is ${
        encapsulatedRequest instanceof Uint8Array
          ? bytesLabel(encapsulatedRequest.length)
          : typeof encapsulatedRequest
      }, shorter than the ${HEADER_LENGTH}-byte header`,
    );
  }
  const headerBytes = encapsulatedRequest.subarray(0, HEADER_LENGTH);
  const header = parseRequestHeader(headerBytes);
  const { key, suite } = selectGatewayKey(list, header, what);
  const prefix = prefixLength(suite.kem.id)!;
  if (encapsulatedRequest.length < prefix + suite.aead.tagLength) {
    throw new OpenError(
      "truncated",
      `Cannot open request: it is ${
        bytesLabel(encapsulatedRequest.length)
      }, shorter than header, ${suite.kem.encLength}-byte encapsulated key and ${suite.aead.tagLength}-byte tag`,
    );
  }
  const enc = encapsulatedRequest.subarray(HEADER_LENGTH, prefix);
  const setup = await setupGateway(key, suite, headerBytes, enc, ONE_SHOT_LABELS);
  let request: Uint8Array;
  try {
    request = await setup.context.open(encapsulatedRequest.subarray(prefix), EMPTY);
  } catch (cause) {
    throw new OpenError("authentication", "Cannot open request: authentication failed", {
      cause,
    });
  }
  let used = false;
  return {
    keyId: setup.keyId,
    suite,
    request,
    async sealResponse(response: Uint8Array): Promise<Uint8Array> {
      if (used) {
        throw new SealError(
          "already_used",
          "Cannot seal response: this exchange already sealed one",
        );
      }
      if (!(response instanceof Uint8Array)) {
        throw new SealError(
          "invalid_input",
          `Cannot seal response: expected bytes, found ${typeof response}`,
        );
      }
      used = true;
      const nonceLength = responseNonceLength(suite);
      let responseNonce: Uint8Array;
      try {
        responseNonce = randomBytes(options.random ?? systemRandom, nonceLength, "response nonce");
      } catch (cause) {
        throw new SealError("crypto", "Cannot seal response: the random source failed", { cause });
      }
      const keys = deriveResponseKeys(
        suite,
        setup.context,
        setup.enc,
        responseNonce,
        ONE_SHOT_LABELS.response,
      );
      const ciphertext = await keys.seal(keys.nonce, response, EMPTY);
      const out = new Uint8Array(nonceLength + ciphertext.length);
      out.set(responseNonce);
      out.set(ciphertext, nonceLength);
      return out;
    },
  };
}
