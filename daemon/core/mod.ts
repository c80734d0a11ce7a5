/**
 * The words every room of the daemon speaks, and nothing else: the {@linkcode ChatRequest} a
 * dialect translates its request into and the {@linkcode ChatBackend} seam the network side
 * implements (`backend.ts`), {@linkcode DaemonError} and its codes (`daemon_error.ts`), model ids
 * (`model_id.ts`), a request's abort controller and deadlines (`deadlines.ts`), and errors
 * rendered as HTTP in the dialect of the path, in one place (`http_error.ts`). Uses no other room.
 *
 * @module
 */

export type {
  ChatBackend,
  ChatCompletionChunk,
  ChatReply,
  ChatRequest,
  ChunkChoice,
  ChunkDelta,
  EmbeddingsReply,
  EmbeddingsRequest,
  ForwardedChatBody,
  ModelPrices,
  NetworkModel,
  RoutingPreferences,
  ServedBy,
  Tier,
  ToolCallDelta,
  Usage,
} from "./backend.ts";
export { DAEMON_ERROR_STATUS, DaemonError, TRUST_REFUSAL_CODES } from "./daemon_error.ts";
export { LOCAL_PAYER, payerOf, setPayer } from "./payment.ts";
export type {
  AttemptPayments,
  Bill,
  BillLookup,
  BillQuery,
  PaymentAttempt,
  PaymentTicket,
} from "./payment.ts";
export type { DaemonErrorCode, DaemonErrorOptions } from "./daemon_error.ts";
export {
  ClientGone,
  clientGone,
  idleWatchdog,
  linkedController,
  requestController,
  withTimeout,
} from "./deadlines.ts";
export {
  anthropicErrorType,
  dialectOf,
  errorResponse,
  publicMessage,
  streamErrorText,
  toDaemonError,
} from "./http_error.ts";
export type { Dialect, ErrorLogger } from "./http_error.ts";
export {
  formatModelId,
  isNetworkModelId,
  MODEL_ID_FORMAT,
  ModelIdError,
  parseModelId,
} from "./model_id.ts";
export type { FormatModelIdOptions, ModelId, ModelIdFailure } from "./model_id.ts";
