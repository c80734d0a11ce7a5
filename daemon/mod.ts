/**
 * The consumer daemon's client-facing surface: a local server that speaks the OpenAI
 * chat-completions API (`/v1/…`) and the Ollama API (`/api/…`), so the programs people already
 * use (Open WebUI, Continue, the OpenAI and Ollama SDKs, LangChain) can point at it unchanged.
 * Behind it, a {@linkcode ChatBackend} reaches the network: gateway resolution, attestation,
 * sealing, failover.
 *
 * - {@linkcode createDaemonHandler}: the pure `(Request) => Promise<Response>` handler, with the
 *   local hygiene (Host allowlist, Origin refusal, body limit) and both dialects.
 * - {@linkcode ChatBackend}: the interface the network backend implements.
 * - {@linkcode DaemonError}: what the surface and the backend throw; rendered per dialect.
 * - {@linkcode parseModelId}: `net/<tier>/<maker>/<model>[:latest]`.
 * - {@linkcode VerdictLog}: the bounded log behind `GET /v1/verdicts`.
 * - {@linkcode parseDaemonConfig}: flags and environment.
 *
 * `docs/daemon.md` documents the endpoints, headers, error codes and options.
 *
 * @example Serve the surface over a backend
 * ```ts
 * import { type ChatBackend, createDaemonHandler, DaemonError, VerdictLog } from "@net/consumer/daemon";
 *
 * const backend: ChatBackend = {
 *   listModels: () => Promise.resolve([]),
 *   chat: () => Promise.reject(new DaemonError("no_gateway", "No gateway is reachable")),
 * };
 * const handler = createDaemonHandler({
 *   backend,
 *   gateways: () => [],
 *   verdicts: new VerdictLog(),
 *   version: "0.1.0",
 *   port: 11435,
 * });
 * const response = await handler(new Request("http://127.0.0.1:11435/api/version"));
 * console.assert((await response.json()).version === "0.1.0");
 * ```
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
  ForwardedChatBody,
  ModelPrices,
  NetworkModel,
  ServedBy,
  Tier,
  ToolCallDelta,
  Usage,
} from "./backend.ts";
export {
  CRYPTO_ERROR_CODES,
  DAEMON_ERROR_STATUS,
  DaemonError,
  type DaemonErrorCode,
  type DaemonErrorOptions,
} from "./daemon_error.ts";
export {
  type Dialect,
  errorBody,
  type ErrorLogger,
  errorResponse,
  openaiErrorType,
  publicMessage,
  type RenderErrorOptions,
  streamErrorText,
  toDaemonError,
} from "./http_error.ts";
export {
  formatModelId,
  type FormatModelIdOptions,
  isNetworkModelId,
  MODEL_ID_FORMAT,
  type ModelId,
  ModelIdError,
  type ModelIdFailure,
  parseModelId,
} from "./model_id.ts";
export {
  allowedHosts,
  checkHost,
  checkOrigin,
  corsHeaders,
  type HostCheckOptions,
  LOOPBACK_HOSTNAMES,
  type OriginPattern,
  OriginPatternError,
  parseOriginPatterns,
  preflightResponse,
  SERVED_BY_HEADERS,
} from "./hygiene.ts";
export {
  VerdictLog,
  type VerdictLogOptions,
  type VerdictRecord,
  type VerdictRecordJson,
  verdictToJson,
} from "./verdict_log.ts";
export { DEFAULT_VERDICT_LIMIT, type GatewayLister, type ListedGateway } from "./transparency.ts";
export { DAEMON_OPENAPI, type DaemonOpenApiDocument } from "./openapi.ts";
export {
  createDaemonHandler,
  type DaemonHandlerOptions,
  DEFAULT_FIRST_BYTE_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_BODY_BYTES,
} from "./handler.ts";
export {
  type BindAddress,
  DAEMON_HELP,
  type DaemonConfig,
  DaemonConfigError,
  DATA_DIR_NAME,
  DEFAULT_BIND,
  defaultDataDir,
  type EvmConfig,
  parseDaemonConfig,
  type ParseDaemonConfigOptions,
  type ParsedDaemonArgs,
} from "./config.ts";
export { createDaemon, type CreateDaemonOptions, type Daemon } from "./daemon.ts";
export * from "./gateway_set.ts";
export {
  BOOTSTRAP_GATEWAYS,
  GatewayResolver,
  type GatewayResolverOptions,
} from "./gateway_resolver.ts";
export { NetworkBackend, type NetworkBackendOptions, rank } from "./network_backend.ts";
export { ProviderReputation, type ProviderReputationOptions } from "./provider_reputation.ts";
export {
  type ProviderTrustOptions,
  registryMismatch,
  type RegistryRecord,
  type TrustedKey,
  TrustedKeyCache,
  trustProvider,
} from "./provider_trust.ts";
export {
  GatewayClient,
  type GatewayClientOptions,
  GatewayError,
  type GatewayFailure,
  type ProviderCandidate,
} from "./gateway_client.ts";
export {
  chainMeasurements,
  type ChainSourceOptions,
  fileMeasurements,
  registryRecords,
} from "./trust_sources.ts";
export { type OpenedReply, openSealedReply, type OpenSealedReplyOptions } from "./sealed_reply.ts";
