/**
 * A minimal paying requester for the devnet's tests (what the daemon does, by hand): it fetches
 * a provider's endorsed key through a gateway, signs a voucher for the request's worst case at
 * the provider's ad prices, seals the request with it and relays it through the gateway.
 */

import assert from "node:assert/strict";
import type { Address } from "viem";
import {
  maxTokensOf,
  type ProviderAd,
  type SignedVoucher,
  type VoucherSigner,
  voucherToJson,
  worstCaseCost,
} from "../../chain/mod.ts";
import { sealHttpRequest } from "../../crypto/mod.ts";

/** A sealed answer, read whole. */
export interface PaidAnswer {
  /** The status inside the seal. */
  status: number;
  /** The body text. */
  text: string;
  /** The body as JSON, or `{}`. */
  json: Record<string, unknown>;
}

/** Pays one provider through one gateway, keeping its cumulative voucher. */
export class PayingClient {
  #seq = 0n;
  #signed = 0n;
  #keyConfig: Uint8Array | undefined;
  #ad: ProviderAd | undefined;

  /** Creates a client for `provider` through `gateway`, signing with `signer`. */
  constructor(
    readonly gateway: string,
    readonly provider: Address,
    readonly signer: VoucherSigner,
  ) {}

  /** The total signed so far. */
  get signed(): bigint {
    return this.#signed;
  }

  /** The next voucher for `body`: the previous total plus its worst case. */
  async voucherFor(body: Record<string, unknown>, kind: "chat" | "embeddings" = "chat") {
    const ad = await this.#adOf();
    const model = ad.models.find((m) => m.id === body.model)!;
    const worst = worstCaseCost(
      { input: BigInt(model.prices.input), output: BigInt(model.prices.output) },
      {
        requestBytes: new TextEncoder().encode(JSON.stringify(body)).length,
        maxTokens: maxTokensOf(body),
        contextLength: model.context_length,
        inputOnly: kind === "embeddings",
      },
    );
    this.#signed += worst;
    return this.signer.sign({
      provider: this.provider,
      cumulative: this.#signed,
      seq: ++this.#seq,
    });
  }

  /** Seals `body` with `voucher` (none: no header) and relays it; reads the answer whole. */
  async send(
    body: Record<string, unknown> | undefined,
    voucher: SignedVoucher | null,
    options: { path?: string; method?: string } = {},
  ): Promise<PaidAnswer> {
    const sealed = await sealHttpRequest(await this.#key(), {
      method: options.method ?? "POST",
      path: options.path ?? "/v1/chat/completions",
      body,
      headers: {
        date: new Date().toUTCString(),
        ...(voucher ? { "net-voucher": JSON.stringify(voucherToJson(voucher)) } : {}),
      },
    });
    const response = await fetch(`${this.gateway}/v1/providers/${this.provider}/relay`, {
      method: "POST",
      headers: { "content-type": sealed.contentType },
      body: new Uint8Array(await new Response(sealed.body).arrayBuffer()),
    });
    assert.equal(response.status, 200, `the gateway relayed: ${response.status}`);
    const reply = await sealed.openResponse(response.body!);
    const text = await new Response(reply.body).text();
    return {
      status: reply.status,
      text,
      json: text.trim().startsWith("{") ? JSON.parse(text) : {},
    };
  }

  /** Pays for `body` and sends it. */
  async pay(body: Record<string, unknown>): Promise<PaidAnswer> {
    return await this.send(body, await this.voucherFor(body));
  }

  async #key(): Promise<Uint8Array> {
    if (this.#keyConfig) return this.#keyConfig;
    const response = await fetch(`${this.gateway}/v1/providers/${this.provider}/key`);
    assert.equal(response.status, 200);
    const { endorsement } = await response.json();
    const hex = (endorsement.key_config as string).slice(2);
    this.#keyConfig = Uint8Array.from(hex.match(/../g)!, (b) => parseInt(b, 16));
    return this.#keyConfig;
  }

  async #adOf(): Promise<ProviderAd> {
    if (this.#ad) return this.#ad;
    const response = await fetch(`${this.gateway}/v1/providers?model=devnet/echo&tier=verified`);
    assert.equal(response.status, 200);
    const { providers } = await response.json();
    const entry = providers.find((p: { provider: string }) => p.provider === this.provider);
    assert.ok(entry, `the gateway lists ${this.provider}`);
    this.#ad = entry.ad as ProviderAd;
    return this.#ad;
  }
}
