/**
 * The devnet provider takes payment (`devnet/provider_payments.ts`), on a real anvil with the
 * real Escrow and real HTTP: a request is served only with a voucher that pays for it; forged,
 * replayed, over-the-price, other-key and other-provider vouchers are refused by the provider
 * with a sealed 402 — and by the Escrow when the provider tries to cash them; what was served is
 * redeemed on chain for exactly what was billed, and a bill can be looked up afterwards.
 */

import assert from "node:assert/strict";
import { type Address, type Hex, parseEventLogs } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { escrowAbi } from "../../chain/abi.ts";
import { readEscrowAccount } from "../../chain/escrow_account.ts";
import { type SignedVoucher, VoucherSigner, voucherToJson } from "../../chain/voucher.ts";
import {
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  sealHttpRequest,
} from "../../crypto/mod.ts";
import { ANVIL_MNEMONIC } from "../../devnet/anvil.ts";
import { EchoEngine } from "../../devnet/engine.ts";
import { DevnetProvider } from "../../devnet/provider.ts";
import { billId, type VoucherClaim } from "../../devnet/provider_payments.ts";
import { createSigner, type DevnetSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { parseSse } from "../../io/sse.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { serve } from "../_http.ts";
import { reverts } from "../_reverts.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const PRICES = { input: 150_000n, output: 600_000n };
const CONTEXT = 8192;

function chat(text: string, extra: Record<string, unknown> = {}) {
  return { model: "devnet/echo", messages: [{ role: "user", content: text }], ...extra };
}

/** The worst case the provider computes for `body` (chain/cost.ts's rule, by hand). */
function worstOf(body: Record<string, unknown>): bigint {
  const bytes = new TextEncoder().encode(JSON.stringify(body)).length;
  const max = typeof body.max_tokens === "number" ? body.max_tokens : CONTEXT;
  return (BigInt(Math.min(bytes, CONTEXT)) * PRICES.input +
    BigInt(Math.min(max, CONTEXT)) * PRICES.output) / 1_000_000n;
}

Deno.test("provider payments: only vouchers that pay are served, and the Escrow agrees", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const { escrow } = chain.contracts;
  const chainId = chain.anvil.chainId;
  const domain = { chainId, escrow };
  const providerAccount = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 5 });
  const providerAddress = providerAccount.address.toLowerCase() as Address;
  const providerSigner = createSigner(chain.anvil.rpcUrl, providerAccount, { chainId });
  const other = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 6 }).address
    .toLowerCase() as Address;
  const consumer = new VoucherSigner(generatePrivateKey(), domain);
  const stranger = new VoucherSigner(generatePrivateKey(), domain);
  const broke = new VoucherSigner(generatePrivateKey(), domain);
  await sendAndConfirm(chain.owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "depositFor",
    args: [consumer.address],
    value: 10n ** 15n,
  });

  const key = createGatewayKey(await generateKeyPair(), { keyId: 3 });
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  await using server = serve((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: providerAddress,
    servingKey: privateKeyToAccount(generatePrivateKey()),
    tier: "verified",
    endpoint: server.url,
    engine: new EchoEngine({ tokenDelayMs: 5 }),
    key,
    prices: PRICES,
    log: () => {},
    payments: {
      domain,
      readAccount: async (who) => {
        const account = await readEscrowAccount(chain.client, escrow, who, {
          providers: [providerAddress],
        });
        return { available: account.available, settled: account.settled.get(providerAddress)! };
      },
    },
  });
  handler = provider.handler;
  const till = provider.till!;
  const keyConfig = encodeKeyConfig(key.config);

  /** Seals `body` with the voucher, relays it, and reads the sealed answer whole. */
  async function ask(
    body: Record<string, unknown>,
    voucher: SignedVoucher | null,
    path = "/v1/chat/completions",
  ): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
    const sealed = await sealHttpRequest(keyConfig, {
      method: path.startsWith("/v1/generation") ? "GET" : "POST",
      path,
      body: path.startsWith("/v1/generation") ? undefined : body,
      headers: {
        date: new Date().toUTCString(),
        ...(voucher ? { "net-voucher": JSON.stringify(voucherToJson(voucher)) } : {}),
      },
    });
    const response = await fetch(`${server.url}/v1/relay`, {
      method: "POST",
      headers: { "content-type": sealed.contentType },
      body: new Uint8Array(await new Response(sealed.body).arrayBuffer()),
    });
    assert.equal(response.status, 200, "the relay answers 200; the status is inside the seal");
    const reply = await sealed.openResponse(response.body!);
    const text = await new Response(reply.body).text();
    return {
      status: reply.status,
      json: text.trim().startsWith("{") ? JSON.parse(text) : {},
      text,
    };
  }
  const code = (answer: { json: Record<string, unknown> }) =>
    (answer.json.error as { code?: string } | undefined)?.code;

  const redeem = (
    claims: Parameters<typeof toRedemption>[0][],
    signer: DevnetSigner = providerSigner,
  ) =>
    sendAndConfirm(signer, {
      address: escrow,
      abi: escrowAbi,
      functionName: "redeemVouchers",
      args: [claims.map(toRedemption)],
    });

  let seq = 0n;
  let signed = 0n;
  const next = (body: Record<string, unknown>) => {
    signed += worstOf(body);
    return consumer.sign({ provider: providerAddress, cumulative: signed, seq: ++seq });
  };

  let first: SignedVoucher;
  await t.step(
    "a voucher covering the worst case is served; its bill can be looked up",
    async () => {
      const body = chat("one two three", { max_tokens: 8 });
      first = next(body);
      const answer = await ask(body, first);
      assert.equal(answer.status, 200, answer.text);
      const usage = answer.json.usage as { prompt_tokens: number; completion_tokens: number };
      const cost = (BigInt(usage.prompt_tokens) * PRICES.input +
        BigInt(usage.completion_tokens) * PRICES.output) / 1_000_000n;
      const bill = await ask({}, null, `/v1/generation?id=${billId(first.signature)}`);
      assert.equal(bill.status, 200, bill.text);
      assert.deepEqual(bill.json, {
        id: billId(first.signature),
        cost: cost.toString(),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
      });
      assert.deepEqual(till.account(consumer.address), {
        charged: cost,
        held: 0n,
        settled: 0n,
        best: signed,
      });
      const unknown = await ask({}, null, `/v1/generation?id=${"0".repeat(32)}`);
      assert.equal(unknown.status, 404);
      assert.equal(code(unknown), "unknown_generation");
    },
  );

  await t.step(
    "no voucher, forged, replayed, other key, other provider, over the price: 402",
    async () => {
      const body = chat("four five", { max_tokens: 4 });
      const worst = worstOf(body);
      const newcomer = new VoucherSigner(generatePrivateKey(), domain);
      await sendAndConfirm(chain.owner, {
        address: escrow,
        abi: escrowAbi,
        functionName: "depositFor",
        args: [newcomer.address],
        value: 10n ** 15n,
      });
      const fresh = () =>
        consumer.sign({ provider: providerAddress, cumulative: signed + worst, seq: seq + 1n });
      const cases: [string, SignedVoucher | null, string][] = [
        ["no voucher", null, "payment_required"],
        ["forged", { ...fresh(), cumulative: signed + worst + 1_000n }, "invalid_voucher"],
        ["replayed", first!, "voucher_replayed"],
        ["another key", {
          ...stranger.sign({
            provider: providerAddress,
            cumulative: signed + worst,
            seq: seq + 1n,
          }),
          consumer: consumer.address,
        }, "invalid_voucher"],
        [
          "another provider",
          consumer.sign({ provider: other, cumulative: signed + worst, seq: seq + 1n }),
          "invalid_voucher",
        ],
        [
          // A consumer's first voucher, signed for less than the worst case at the ad's prices.
          "over the price",
          newcomer.sign({ provider: providerAddress, cumulative: worst - 1n, seq: 1n }),
          "voucher_insufficient",
        ],
      ];
      for (const [name, voucher, expected] of cases) {
        const answer = await ask(body, voucher);
        assert.equal(answer.status, 402, `${name}: ${answer.text}`);
        assert.equal(code(answer), expected, name);
      }
      // Nothing was charged or held for any of them.
      assert.equal(till.account(consumer.address)?.held, 0n);
      // The same vouchers at the Escrow, cashed by the provider for what they say.
      await reverts(
        redeem([{
          voucher: { ...fresh(), cumulative: signed + worst + 1_000n },
          total: signed + worst + 1_000n,
        }]),
        "InvalidVoucherSignature",
      );
      await reverts(
        redeem([{
          voucher: {
            ...stranger.sign({ provider: providerAddress, cumulative: signed, seq: 9n }),
            consumer: consumer.address,
          },
          total: signed,
        }]),
        "InvalidVoucherSignature",
      );
      await reverts(
        redeem([{
          voucher: consumer.sign({ provider: other, cumulative: signed, seq: 9n }),
          total: signed,
        }]),
        "NotVoucherProvider",
      );
      await reverts(
        redeem([{ voucher: first!, total: first!.cumulative + 1n }]),
        "ClaimExceedsVoucher",
      );
    },
  );

  await t.step(
    "a consumer whose deposit cannot cover the worst case: insufficient_deposit",
    async () => {
      const body = chat("six", { max_tokens: 2 });
      const answer = await ask(
        body,
        broke.sign({ provider: providerAddress, cumulative: worstOf(body), seq: 1n }),
      );
      assert.equal(answer.status, 402, answer.text);
      assert.equal(code(answer), "insufficient_deposit");
      assert.match(String((answer.json.error as { message: string }).message), /has 0 available/);
    },
  );

  await t.step(
    "a stream cut by its requester is billed what was produced, and the bill says so",
    async () => {
      const body = chat(Array.from({ length: 60 }, (_, i) => `w${i}`).join(" "), {
        stream: true,
        stream_options: { include_usage: true },
      });
      const voucher = next(body);
      const sealed = await sealHttpRequest(keyConfig, {
        body,
        headers: {
          date: new Date().toUTCString(),
          "net-voucher": JSON.stringify(voucherToJson(voucher)),
        },
      });
      const abort = new AbortController();
      const response = await fetch(`${server.url}/v1/relay`, {
        method: "POST",
        headers: { "content-type": sealed.contentType },
        body: new Uint8Array(await new Response(sealed.body).arrayBuffer()),
        signal: abort.signal,
      });
      const reply = await sealed.openResponse(response.body!);
      for await (const _ of parseSse(reply.body)) break;
      abort.abort();
      const id = billId(voucher.signature);
      let bill = await ask({}, null, `/v1/generation?id=${id}`);
      while (bill.status === 409) bill = await ask({}, null, `/v1/generation?id=${id}`);
      assert.equal(bill.status, 200, bill.text);
      assert.ok(BigInt(bill.json.cost as string) <= worstOf(body));
      assert.ok((bill.json.prompt_tokens as number) > 0);
      assert.ok(
        (bill.json.completion_tokens as number) < 60,
        `cut after the first event, yet billed ${bill.json.completion_tokens} completion tokens`,
      );
    },
  );

  await t.step(
    "what was served is redeemed on chain for exactly what was billed, once",
    async () => {
      const claims: VoucherClaim[] = till.claims();
      assert.equal(claims.length, 1);
      const [claim] = claims;
      assert.equal(claim.voucher.consumer, consumer.address);
      assert.equal(claim.total, till.account(consumer.address)!.charged);
      const receipt = await redeem([claim]);
      till.paid(claim);
      const settled = parseEventLogs({ abi: escrowAbi, eventName: "Settled", logs: receipt.logs });
      assert.deepEqual(
        settled.map((l) => [l.args.provider.toLowerCase(), l.args.amount, l.args.tokens]),
        [
          [providerAddress, claim.total, claim.tokens],
        ],
      );
      const account = await readEscrowAccount(chain.client, escrow, consumer.address, {
        providers: [providerAddress],
      });
      assert.equal(account.settled.get(providerAddress), claim.total);
      assert.deepEqual(till.claims(), []);
      await reverts(redeem([claim]), "StaleVoucher");
    },
  );
});

/** A claim as `redeemVouchers` takes it. */
function toRedemption(claim: { voucher: SignedVoucher; total: bigint; tokens?: bigint }) {
  const { consumer, provider, cumulative, seq, signature } = claim.voucher;
  return {
    voucher: { consumer, provider, cumulative, seq },
    signature: signature as Hex,
    total: claim.total,
    tokens: claim.tokens ?? 0n,
  };
}
