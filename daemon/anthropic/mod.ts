/**
 * The Anthropic dialect: `POST /v1/messages` and `POST /v1/messages/count_tokens`
 * (`messages.ts`), translated into the one `ChatRequest` (`request.ts`) and answered in
 * Anthropic's shapes (`reply.ts`), stop sequences applied by the daemon (`_stop.ts`);
 * {@linkcode anthropicRoutes} declares its routes with their schemas. Uses `core/` and
 * `surface/`.
 *
 * @module
 */

export { anthropicRoutes } from "./routes.ts";
