/**
 * The consumer daemon's client-facing surface: a local server that speaks the OpenAI
 * chat-completions API (`/v1/…`) and the Ollama API (`/api/…`), so the programs people already
 * use (Open WebUI, Continue, the OpenAI and Ollama SDKs, LangChain) can point at it unchanged.
 * Behind it, a {@linkcode ChatBackend} reaches the network: gateway resolution, attestation,
 * sealing, failover.
 *
 * - {@linkcode createDaemon}: a whole daemon from its configuration (gateway resolver, trust
 *   sources, network backend, verdict log, handler); {@linkcode serveDaemon} serves its handler
 *   so that a client's leaving is seen in every phase of its request.
 * - {@linkcode createDaemonHandler}: the pure `(Request) => Promise<Response>` handler, with the
 *   local hygiene (Host allowlist, Origin refusal, body limit) and both dialects;
 *   {@linkcode createDaemonService}: the same service with its route table and its generated
 *   OpenAPI document.
 * - {@linkcode ChatBackend}: the interface the network backend implements.
 * - {@linkcode DaemonError}: what the surface and the backend throw; rendered per dialect.
 * - {@linkcode parseModelId}: `net/<tier>/<maker>/<model>[:latest]`.
 * - {@linkcode VerdictLog}: the bounded log behind `GET /v1/verdicts`.
 * - {@linkcode parseDaemonConfig}: flags and environment.
 * - {@linkcode GatewaySet}, {@linkcode askPeer}, {@linkcode normalizeGatewayUrl}: the known
 *   gateways and their gossip, shared with the reference network's gateways.
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
} from "./core/backend.ts";
export {
  DAEMON_ERROR_STATUS,
  DaemonError,
  type DaemonErrorCode,
  type DaemonErrorOptions,
} from "./core/daemon_error.ts";
export type { Dialect, ErrorLogger } from "./core/http_error.ts";
export {
  formatModelId,
  type FormatModelIdOptions,
  type ModelId,
  ModelIdError,
  type ModelIdFailure,
  parseModelId,
} from "./core/model_id.ts";
export { OriginPatternError, type OriginPatternFailure } from "./service/hygiene.ts";
export {
  VerdictLog,
  type VerdictLogOptions,
  type VerdictRecord,
  type VerdictRecordJson,
} from "./trust/verdict_log.ts";
export type { GatewayLister, ListedGateway } from "./service/transparency.ts";
export {
  createDaemonHandler,
  createDaemonService,
  type DaemonHandlerOptions,
} from "./service/handler.ts";
export {
  type ApiKey,
  apiKeyAuth,
  type ApiKeyAuthOptions,
  FailureThrottle,
  type FailureThrottleOptions,
  OPEN_ENDPOINTS,
  resolveApiKey,
  type ResolveApiKeyOptions,
} from "./service/auth.ts";
export {
  type AuthConfig,
  type BindAddress,
  type DaemonConfig,
  type EvmConfig,
  parseDaemonConfig,
  type ParseDaemonConfigOptions,
  type ParsedDaemonArgs,
} from "./service/config.ts";
export { SettingError } from "../settings/mod.ts";
export type { OpenApiDocument, Service } from "../http/mod.ts";
export { createDaemon, type CreateDaemonOptions, type Daemon } from "./service/daemon.ts";
export {
  type AddGatewayOptions,
  type GatewayCacheEntryJson,
  type GatewayEntry,
  type GatewayEntryJson,
  GatewaySet,
  type GatewaySetOptions,
  type MergeListOptions,
} from "./gateway/gateway_set.ts";
export { askPeer, type AskPeerOptions } from "./gateway/gateway_list.ts";
export {
  GatewaySetError,
  type GatewaySetFailure,
  normalizeGatewayUrl,
} from "./gateway/gateway_url.ts";
export {
  DEFAULT_GOSSIP_INTERVAL_MS,
  GatewayResolver,
  type GatewayResolverOptions,
  type GossipOptions,
} from "./gateway/gateway_resolver.ts";
export {
  type BackendLoad,
  NetworkBackend,
  type NetworkBackendOptions,
} from "./network/network_backend.ts";
export {
  type AttemptResult,
  type BackendMetrics,
  DaemonMetrics,
  type DialectLabel,
  dialectLabel,
  type LoadReading,
  type VerificationResult,
} from "./service/metrics.ts";
export {
  type DaemonRequestHandler,
  type DaemonServer,
  serveDaemon,
  type ServeDaemonOptions,
} from "./service/serve.ts";
export {
  ProviderReputation,
  type ProviderReputationOptions,
} from "./network/provider_reputation.ts";
export { type ProviderTrustOptions, type RegistryRecord } from "./trust/provider_trust.ts";
