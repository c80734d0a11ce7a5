/**
 * The consumer daemon's client-facing surface: a local server that speaks the OpenAI
 * chat-completions API (`/v1/…`), Anthropic's Messages API (`/v1/messages`) and the Ollama API
 * (`/api/…`), so the programs people already use (Open WebUI, Continue, the OpenAI, Anthropic and
 * Ollama SDKs, Claude Code, LangChain) can point at it unchanged.
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
 * The code is split into rooms that follow a request (`docs/daemon.md`, "Rooms"): `core/` (the
 * words every room speaks), `gateway/`, `trust/`, `sealing/` and `network/` (the network side),
 * `surface/` with one room per API dialect (`openai/`, `ollama/`), and `service/`. This module
 * re-exports what a user of the package needs from their doors.
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

// core/: the words every room speaks.
export {
  type ChatBackend,
  type ChatCompletionChunk,
  type ChatReply,
  type ChatRequest,
  type ChunkChoice,
  type ChunkDelta,
  DAEMON_ERROR_STATUS,
  DaemonError,
  type DaemonErrorCode,
  type DaemonErrorOptions,
  type Dialect,
  type ErrorLogger,
  formatModelId,
  type FormatModelIdOptions,
  type ForwardedChatBody,
  type ModelId,
  ModelIdError,
  type ModelIdFailure,
  type ModelPrices,
  type NetworkModel,
  parseModelId,
  type ServedBy,
  type Tier,
  type ToolCallDelta,
  type Usage,
} from "./core/mod.ts";
// gateway/: the known gateways, their gossip and the resolver.
export {
  type AddGatewayOptions,
  askPeer,
  type AskPeerOptions,
  DEFAULT_GOSSIP_INTERVAL_MS,
  type GatewayCacheEntryJson,
  type GatewayEntry,
  type GatewayEntryJson,
  GatewayResolver,
  type GatewayResolverOptions,
  GatewaySet,
  GatewaySetError,
  type GatewaySetFailure,
  type GatewaySetOptions,
  type GossipOptions,
  type MergeListOptions,
  normalizeGatewayUrl,
} from "./gateway/mod.ts";
// trust/: whom to trust, and the verdicts.
export {
  type ProviderTrustOptions,
  type RegistryRecord,
  VerdictLog,
  type VerdictLogOptions,
  type VerdictRecord,
  type VerdictRecordJson,
} from "./trust/mod.ts";
// network/: the network backend.
export {
  type AttemptResult,
  type BackendLoad,
  type BackendMetrics,
  type LoadReading,
  NetworkBackend,
  type NetworkBackendOptions,
  ProviderReputation,
  type ProviderReputationOptions,
  type VerificationResult,
} from "./network/mod.ts";
// service/: configuration, API key, hygiene, handler, metrics, serving, the whole daemon.
export {
  type ApiKey,
  apiKeyAuth,
  type ApiKeyAuthOptions,
  type AuthConfig,
  type BindAddress,
  createDaemon,
  createDaemonHandler,
  type CreateDaemonOptions,
  createDaemonService,
  type Daemon,
  type DaemonConfig,
  type DaemonHandlerOptions,
  DaemonMetrics,
  type DaemonRequestHandler,
  type DaemonServer,
  type DialectLabel,
  dialectLabel,
  type EvmConfig,
  FailureThrottle,
  type FailureThrottleOptions,
  type GatewayLister,
  type ListedGateway,
  OPEN_ENDPOINTS,
  OriginPatternError,
  type OriginPatternFailure,
  parseDaemonConfig,
  type ParseDaemonConfigOptions,
  type ParsedDaemonArgs,
  resolveApiKey,
  type ResolveApiKeyOptions,
  serveDaemon,
  type ServeDaemonOptions,
} from "./service/mod.ts";
export { SettingError } from "../settings/mod.ts";
export type { OpenApiDocument, Service } from "../http/mod.ts";
