/**
 * A reply's cost as the dialects show it (`docs/daemon.md`, "Money"). The backend sets
 * `usage.cost_wei` — exact, in the chain's smallest unit, from the provider's signed ad prices
 * and the reply's usage, never from the provider's own words — when the daemon paid for the
 * reply. The dialects show it as:
 *
 * - OpenAI: OpenRouter's `usage.cost` (a number, in the chain's whole unit: wei ÷ 10^18, as
 *   precise as a JSON number is) and `usage.cost_wei` (the exact decimal string), in the whole
 *   reply and in the last streamed chunk with usage;
 * - every whole reply (OpenAI, Ollama and Anthropic, chats and embeddings): the header
 *   `x-net-cost`, the exact decimal form in the whole unit (`0.000000000000001234`);
 * - Ollama's last streamed line (after its headers are gone) and Anthropic's `usage` (the whole
 *   message's and the streamed `message_delta`'s): `cost`, the same exact decimal form.
 *
 * @module
 */

import { formatCost } from "../../chain/cost.ts";
import type { Usage } from "../core/mod.ts";

/** The header that carries a whole reply's cost. */
export const COST_HEADER = "x-net-cost";

const DECIMAL = /^(0|[1-9][0-9]{0,77})$/;

/** The exact cost of `usage` in wei, or `undefined` when the daemon did not pay for it. */
export function costWei(usage: Pick<Usage, "cost_wei"> | null | undefined): bigint | undefined {
  const wei = usage?.cost_wei;
  return typeof wei === "string" && DECIMAL.test(wei) ? BigInt(wei) : undefined;
}

/** OpenAI's usage object with OpenRouter's `cost` (and the exact `cost_wei`) when known. */
export function openaiUsage(usage: Usage): Usage & { cost?: number } {
  const wei = costWei(usage);
  const counts = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
  if (wei === undefined) return counts;
  return { ...counts, cost: Number(formatCost(wei)), cost_wei: String(wei) };
}

/** The `x-net-cost` header of a whole reply, when its cost is known. */
export function costHeader(usage: Pick<Usage, "cost_wei"> | null | undefined): [string, string][] {
  const wei = costWei(usage);
  return wei === undefined ? [] : [[COST_HEADER, formatCost(wei)]];
}

/** The `cost` of Ollama's last line (the exact decimal form), when known. */
export function ollamaCost(usage: Pick<Usage, "cost_wei">): { cost?: string } {
  const wei = costWei(usage);
  return wei === undefined ? {} : { cost: formatCost(wei) };
}
