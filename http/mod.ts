/**
 * The project's one HTTP layer (hono, zod and `@hono/zod-openapi`): routes declared once with
 * their schemas ({@linkcode defineRoute}), mounted by {@linkcode createService} with the
 * service's middleware and error mapping; the OpenAPI 3.1 document is generated from the
 * declarations; {@linkcode serveHttp} serves a service with header, idle and body timeouts. How to
 * add an endpoint: `docs/http.md`.
 *
 * @module
 */

export { DEFAULT_MAX_JSON_DEPTH, formatBytes, readJsonBody } from "./body.ts";
export {
  HTTP_FAILURE_STATUS,
  type HttpFailure,
  HttpRequestError,
  MAX_HEADER_BYTES,
  MAX_URL_LENGTH,
} from "./errors.ts";
export { describeIssue, describeValue, fieldPath } from "./issues.ts";
export { listenUrls, type ListenUrlsOptions } from "./listen_urls.ts";
export {
  defineRoute,
  json,
  type MediaSpec,
  type ResponseSpec,
  type Route,
  type RouteInput,
  type RouteMethod,
  type RouteSpec,
} from "./route.ts";
export {
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  type HttpHandler,
  type HttpServer,
  serveHttp,
  type ServeHttpOptions,
} from "./serve.ts";
export {
  createService,
  DEFAULT_MAX_BODY_BYTES,
  type OpenApiDocument,
  type Service,
  type ServiceOptions,
} from "./service.ts";
export { z } from "@hono/zod-openapi";
