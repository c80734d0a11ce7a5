/**
 * The Ollama dialect's routes: `/` and everything under `/api`, each declared once with its
 * schemas, its answers (errors in Ollama's shape) and its handler.
 *
 * | method | path              | what                                   |
 * | ------ | ----------------- | -------------------------------------- |
 * | GET    | `/`               | liveness, as Ollama answers it         |
 * | GET    | `/api/version`    | the daemon's version                   |
 * | GET    | `/api/tags`       | the network's models                   |
 * | GET    | `/api/ps`         | loaded models (none)                   |
 * | POST   | `/api/show`       | one model's details                    |
 * | POST   | `/api/chat`       | chat                                   |
 * | POST   | `/api/generate`   | generate                               |
 * | POST   | `/api/embed`      | embeddings                             |
 * | POST   | `/api/embeddings` | one embedding (the older endpoint)     |
 * | POST   | `/api/pull`       | pull (nothing to download)             |
 *
 * @module
 */

import { defineRoute, json, type Route, z } from "../../http/mod.ts";
import {
  answers,
  EMBEDDINGS_DESCRIPTION,
  OLLAMA_ERROR,
  SERVED_HEADERS,
  type SurfaceContext,
  wholeOrStreamed,
} from "../surface/mod.ts";
import { serveOllamaEmbed, serveOllamaEmbeddings } from "./embed.ts";
import {
  OLLAMA_EMBED,
  OLLAMA_EMBED_REQUEST,
  OLLAMA_EMBEDDINGS,
  OLLAMA_EMBEDDINGS_REQUEST,
} from "./_embed_schemas.ts";
import {
  serveOllamaPs,
  serveOllamaPull,
  serveOllamaShow,
  serveOllamaTags,
  serveOllamaVersion,
} from "./ollama_models.ts";
import { serveOllamaChat, serveOllamaLoad } from "./ollama_reply.ts";
import { ollamaCall } from "./ollama_request.ts";
import {
  OLLAMA_CHAT_LINE,
  OLLAMA_CHAT_REQUEST,
  OLLAMA_GENERATE_LINE,
  OLLAMA_GENERATE_REQUEST,
  OLLAMA_PS,
  OLLAMA_PULL,
  OLLAMA_PULL_REQUEST,
  OLLAMA_SHOW,
  OLLAMA_SHOW_REQUEST,
  OLLAMA_TAGS,
  OLLAMA_VERSION,
  type OllamaChatBody,
  type OllamaGenerateBody,
} from "./_ollama_schemas.ts";

/** What the Ollama routes are built from. */
export interface OllamaRoutesOptions {
  /** The surfaces' shared dependencies and limits. */
  readonly context: SurfaceContext;
  /** The `X.Y.Z` version `/api/version` serves. */
  readonly version: string;
}

const LIVENESS = "Ollama is running";

/** Ollama's streams: NDJSON. */
const NDJSON_LINES = "One JSON object per line.";

function ollamaChatRoute(context: SurfaceContext, endpoint: "chat" | "generate"): Route {
  const chat = endpoint === "chat";
  const lineSchema = chat ? OLLAMA_CHAT_LINE : OLLAMA_GENERATE_LINE;
  return defineRoute({
    method: "post",
    path: `/api/${endpoint}`,
    summary: chat ? "Chat (Ollama)" : "Generate (Ollama)",
    description:
      "Streams NDJSON by default (`stream` defaults to true): pieces with `done: false`, then " +
      "one line with `done: true`, `done_reason` and the counters. `stream: false` answers one " +
      "object shaped like the last line with the whole content. An error after the stream " +
      'started is one `{"error": …}` line. An empty ' +
      (chat ? "`messages` array" : "`prompt`") +
      " loads (`done_reason: load`; with `keep_alive: 0`, `unload`) without calling the network.",
    tags: ["ollama"],
    body: {
      schema: (chat ? OLLAMA_CHAT_REQUEST : OLLAMA_GENERATE_REQUEST) as z.ZodType<
        OllamaChatBody | OllamaGenerateBody
      >,
    },
    responses: answers("ollama", "chat", {
      description: "The reply, whole or streamed. Loads and unloads have no served-by headers.",
      content: wholeOrStreamed(lineSchema, {
        type: "application/x-ndjson",
        text: NDJSON_LINES,
        item: z.union([lineSchema, OLLAMA_ERROR]),
      }),
    }),
    handler: (c, { body }) => {
      const parsed = ollamaCall(endpoint, body);
      return parsed.kind === "load"
        ? serveOllamaLoad(context, parsed.call)
        : serveOllamaChat(context, { call: parsed.call, request: c.req.raw });
    },
  });
}

/** The Ollama dialect's routes, in the order the document lists them. */
export function ollamaRoutes(options: OllamaRoutesOptions): Route[] {
  const { context } = options;
  return [
    defineRoute({
      method: "get",
      path: "/",
      summary: "Liveness, as Ollama answers it",
      tags: ["ollama"],
      responses: answers("ollama", "local", {
        description: "The daemon is running.",
        content: { "text/plain": { schema: z.literal(LIVENESS) } },
      }),
      handler: () =>
        new Response(LIVENESS, { headers: { "content-type": "text/plain; charset=utf-8" } }),
    }),
    defineRoute({
      method: "get",
      path: "/api/version",
      summary: "The daemon's version",
      tags: ["ollama"],
      responses: answers("ollama", "local", {
        description: "Plain dotted integers.",
        content: json(OLLAMA_VERSION),
      }),
      handler: () => serveOllamaVersion(options.version),
    }),
    defineRoute({
      method: "get",
      path: "/api/tags",
      summary: "Models of the network",
      tags: ["ollama"],
      responses: answers("ollama", "list", {
        description: "Every model, listed with `:latest`.",
        content: json(OLLAMA_TAGS),
      }),
      handler: (c) => serveOllamaTags(context, c.req.raw),
    }),
    defineRoute({
      method: "get",
      path: "/api/ps",
      summary: "Loaded models (none: nothing runs locally)",
      tags: ["ollama"],
      responses: answers("ollama", "local", { description: "None.", content: json(OLLAMA_PS) }),
      handler: () => serveOllamaPs(),
    }),
    defineRoute({
      method: "post",
      path: "/api/show",
      summary: "One model's details",
      tags: ["ollama"],
      body: { schema: OLLAMA_SHOW_REQUEST },
      responses: answers("ollama", "post", {
        description: "The model.",
        content: json(OLLAMA_SHOW),
      }),
      handler: (c, { body }) => serveOllamaShow(context, { body, request: c.req.raw }),
    }),
    ollamaChatRoute(context, "chat"),
    ollamaChatRoute(context, "generate"),
    defineRoute({
      method: "post",
      path: "/api/embed",
      summary: "Embeddings (Ollama)",
      description: EMBEDDINGS_DESCRIPTION,
      tags: ["ollama"],
      body: { schema: OLLAMA_EMBED_REQUEST },
      responses: answers("ollama", "chat", {
        description: "One vector per input, in order.",
        headers: SERVED_HEADERS,
        content: json(OLLAMA_EMBED),
      }),
      handler: (c, { body }) => serveOllamaEmbed(context, { body, request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/api/embeddings",
      summary: "One embedding (Ollama's older endpoint)",
      description: EMBEDDINGS_DESCRIPTION,
      tags: ["ollama"],
      body: { schema: OLLAMA_EMBEDDINGS_REQUEST },
      responses: answers("ollama", "chat", {
        description: "The prompt's vector.",
        headers: SERVED_HEADERS,
        content: json(OLLAMA_EMBEDDINGS),
      }),
      handler: (c, { body }) => serveOllamaEmbeddings(context, { body, request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/api/pull",
      summary: "Pull a model (nothing to download: success at once)",
      description: "A model the network offers needs no download: the answer is " +
        '`{"status":"success"}` at once, as one NDJSON line unless `stream: false`.',
      tags: ["ollama"],
      body: { schema: OLLAMA_PULL_REQUEST },
      responses: answers("ollama", "post", {
        description: "Pulled.",
        content: wholeOrStreamed(OLLAMA_PULL, {
          type: "application/x-ndjson",
          text: NDJSON_LINES,
          item: OLLAMA_PULL,
        }),
      }),
      handler: (c, { body }) => serveOllamaPull(context, { body, request: c.req.raw }),
    }),
  ];
}
