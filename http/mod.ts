/**
 * The project's one HTTP layer (hono, zod and `@hono/zod-openapi`): routes declared once with
 * their schemas ({@linkcode defineRoute}), mounted by {@linkcode createService} with the
 * service's middleware and error mapping; the OpenAPI 3.1 document is generated from the
 * declarations. How to add an endpoint: `docs/http.md`.
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
  createService,
  DEFAULT_MAX_BODY_BYTES,
  type OpenApiDocument,
  type Service,
  type ServiceOptions,
} from "./service.ts";
export { z } from "@hono/zod-openapi";
