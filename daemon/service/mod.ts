/**
 * The daemon as a service: its configuration (`config.ts`), the API key (`auth.ts`) and the local
 * hygiene (`hygiene.ts`), the handler (`handler.ts`) with the route table of every dialect and
 * the transparency endpoints (`_routes.ts`, `transparency.ts`), the metrics (`metrics.ts`),
 * serving (`serve.ts`) and the wiring of a whole daemon (`daemon.ts`: {@linkcode createDaemon}).
 * Uses every other room.
 *
 * @module
 */

export { apiKeyAuth, FailureThrottle, OPEN_ENDPOINTS, resolveApiKey } from "./auth.ts";
export type {
  ApiKey,
  ApiKeyAuthOptions,
  FailureThrottleOptions,
  ResolveApiKeyOptions,
} from "./auth.ts";
export { parseDaemonConfig } from "./config.ts";
export type {
  AuthConfig,
  BindAddress,
  DaemonConfig,
  EvmConfig,
  ParseDaemonConfigOptions,
  ParsedDaemonArgs,
} from "./config.ts";
export { createDaemon } from "./daemon.ts";
export type { CreateDaemonOptions, Daemon } from "./daemon.ts";
export { createDaemonHandler, createDaemonService } from "./handler.ts";
export type { DaemonHandlerOptions } from "./handler.ts";
export { OriginPatternError } from "./hygiene.ts";
export type { OriginPatternFailure } from "./hygiene.ts";
export { DaemonMetrics, dialectLabel } from "./metrics.ts";
export type { DialectLabel } from "./metrics.ts";
export { serveDaemon } from "./serve.ts";
export type { DaemonRequestHandler, DaemonServer, ServeDaemonOptions } from "./serve.ts";
export type { GatewayLister, ListedGateway } from "./transparency.ts";
