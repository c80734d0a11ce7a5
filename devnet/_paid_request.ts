/**
 * The worst case of a request at the devnet provider's ad (`chain/cost.ts`'s rule): what its
 * voucher must cover before it is served.
 *
 * @module
 */

import { maxTokensOf, type ProviderAd, worstCaseCost } from "../chain/mod.ts";
import type { PaidRequest } from "./provider_chat.ts";

/**
 * The most `request` can cost at the ad's prices for its model: the body's length bounds the
 * prompt; `max_completion_tokens`, else `max_tokens`, else the context length the completion
 * (a value that is not a non-negative integer counts as absent: the larger bound).
 */
export function priceRequest(ad: ProviderAd, request: PaidRequest): bigint {
  const model = ad.models.find((m) => m.id === request.model);
  if (!model) throw new Error(`Cannot price model ${request.model}: it is not in the ad`);
  return worstCaseCost(
    { input: BigInt(model.prices.input), output: BigInt(model.prices.output) },
    {
      requestBytes: request.bytes,
      maxTokens: maxTokensOf(request.body),
      contextLength: model.context_length,
      inputOnly: request.kind === "embeddings",
    },
  );
}
