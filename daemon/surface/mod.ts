/**
 * What every API dialect shares, so each dialect room only translates: the handler's resolved
 * dependencies ({@linkcode SurfaceContext}), the network's model list (`models.ts`), a chat reply
 * started, read as validated events, streamed or buffered (`reply.ts`, `reply_events.ts`,
 * `reply_buffer.ts`), embeddings' rules (`embeddings.ts`), request validation (`validate.ts`) and
 * the schemas and documented answers both dialects use (`schemas.ts`). Uses `core/`.
 *
 * @module
 */

export { randomId } from "./context.ts";
export { COST_HEADER, costHeader, costWei, ollamaCost, openaiUsage } from "./cost.ts";
export type { SurfaceContext } from "./context.ts";
export { EMBEDDINGS_DESCRIPTION, embeddingsResponse, runEmbed } from "./embeddings.ts";
export { capabilitiesNeeded, checkCapabilities, findModel, listNetworkModels } from "./models.ts";
export type { CapabilityFields } from "./models.ts";
export {
  endedByCancel,
  eventStreamHeaders,
  jsonHeaders,
  servedHeaders,
  serveReply,
} from "./reply.ts";
export type { CancelNote } from "./reply.ts";
export { aggregateReply, ReplyBudget, ToolCallAssembler } from "./reply_buffer.ts";
export type { AggregatedReply, AssembledToolCall } from "./reply_buffer.ts";
export { providerError } from "./reply_events.ts";
export type { ReplyEvent, TokenLogprob } from "./reply_events.ts";
export {
  answers,
  ANTHROPIC_ERROR,
  COUNT,
  DECIMAL,
  embeddingInputs,
  ERROR_CODE,
  errorResponses,
  errorSchema,
  MAX_EMBEDDING_INPUTS,
  OLLAMA_ERROR,
  OPENAI_ERROR,
  REQUESTED_MODEL,
  SERVED_HEADERS,
  TIER,
  TIME,
  USAGE,
  wholeOrStreamed,
} from "./schemas.ts";
export { validate } from "./validate.ts";
export {
  ANTHROPIC_SAMPLING,
  MAX_STOP_SEQUENCES,
  OLLAMA_SAMPLING,
  OPENAI_SAMPLING,
  RESPONSES_SAMPLING,
} from "./sampling.ts";
export { PROVIDER_PREFERENCES, routed, withoutPreferences } from "./preferences.ts";
export type { ProviderPreferences } from "./preferences.ts";
