/**
 * The Ollama dialect: `POST /api/chat` and `/api/generate` (`ollama_request.ts`,
 * `ollama_reply.ts`), the model endpoints (`ollama_models.ts`) and embeddings (`embed.ts`), each
 * translated into the one `ChatRequest` (or embeddings request) and answered in
 * Ollama's shapes; {@linkcode ollamaRoutes} declares its routes with their schemas. Uses `core/`
 * and `surface/`.
 *
 * @module
 */

export { ollamaRoutes } from "./routes.ts";
