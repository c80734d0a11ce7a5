/**
 * The OpenAI dialect: `POST /v1/chat/completions` and the models (`openai.ts`), the Responses API
 * (`responses.ts`), legacy completions (`completions.ts`) and embeddings (`embeddings.ts`), each
 * translated into the one `ChatRequest` (or embeddings request) and answered in OpenAI's
 * shapes; {@linkcode openaiRoutes} declares its routes with their schemas. Uses `core/` and
 * `surface/`.
 *
 * @module
 */

export { openaiRoutes } from "./routes.ts";
