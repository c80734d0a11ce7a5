/**
 * The Ollama dialect's schemas: what `/api/chat`, `/api/generate` and `/api/show` take, and what
 * every Ollama endpoint answers. Module-private (JSR's slow-types rule); the types the surface
 * builds its answers with come from the same schemas.
 *
 * Requests are checked strictly where a client can be wrong in a way a provider would not
 * notice (a message's `role` and `content`, the prompt, the types of the options the daemon
 * translates), and loosely elsewhere: Ollama fields the daemon does not use (`raw`, `suffix`,
 * `template`, `context`, other `options`) are accepted and ignored.
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import {
  COUNT,
  OLLAMA_SAMPLING,
  PROVIDER_PREFERENCES,
  REQUESTED_MODEL,
  TIER,
  TIME,
} from "../surface/mod.ts";

/** The roles of an Ollama chat message. */
export const OLLAMA_ROLES = ["system", "user", "assistant", "tool"] as const;

const TOOL_CALL_IN = z.looseObject({
  id: z.string().nullable().optional(),
  function: z.looseObject({
    name: z.string().min(1),
    arguments: z.unknown().optional().openapi({
      description: "An object (or its JSON text).",
    }),
  }),
});

/** One message of `/api/chat`. */
export const OLLAMA_MESSAGE = z.looseObject({
  role: z.enum(OLLAMA_ROLES),
  content: z.string().optional(),
  images: z.array(z.string()).nullable().optional().openapi({
    description: "Base64 images (or `data:` URLs).",
  }),
  tool_calls: z.array(TOOL_CALL_IN).nullable().optional(),
  tool_name: z.string().nullable().optional(),
  tool_call_id: z.string().nullable().optional(),
}).openapi("OllamaMessage");

/** A message of `/api/chat`, validated. */
export type OllamaMessage = z.output<typeof OLLAMA_MESSAGE>;

/** The `options` the daemon translates or checks (others are accepted and ignored). */
export const OLLAMA_OPTIONS = z.looseObject(OLLAMA_SAMPLING).openapi("OllamaOptions");

const COMMON = {
  model: REQUESTED_MODEL,
  stream: z.boolean().optional().openapi({ default: true }),
  keep_alive: z.union([z.string(), z.number()]).nullable().optional().openapi({
    description: '`0` (or `"0s"`, …) with an empty prompt or `messages` unloads.',
  }),
  options: z.union([OLLAMA_OPTIONS, z.null()]).optional(),
  provider: PROVIDER_PREFERENCES.optional(),
  format: z.union([z.literal("json"), z.literal(""), z.looseObject({})]).nullable().optional()
    .openapi({ description: '`"json"`, or a JSON schema object.' }),
  think: z.union([z.boolean(), z.enum(["low", "medium", "high"])]).nullable().optional(),
  logprobs: z.boolean().nullable().optional().openapi({
    description: "Log probabilities of the generated tokens, from a model with the `logprobs` " +
      "capability (else a 400).",
  }),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional().openapi({
    description: "How many most likely alternatives to list per token (implies `logprobs`).",
  }),
};

/** The body of `POST /api/chat`. */
export const OLLAMA_CHAT_REQUEST = z.looseObject({
  ...COMMON,
  messages: z.array(OLLAMA_MESSAGE),
  tools: z.array(z.unknown()).nullable().optional(),
}).openapi("OllamaChatRequest", {
  description: "The Ollama request (`options`, `format`, `think`, `tools` are translated).",
  required: ["model", "messages"],
});

/** The body of `POST /api/generate`. */
export const OLLAMA_GENERATE_REQUEST = z.looseObject({
  ...COMMON,
  prompt: z.string().optional(),
  system: z.string().nullable().optional(),
  images: z.array(z.string()).nullable().optional(),
}).openapi("OllamaGenerateRequest", { required: ["model"] });

/** A validated `/api/chat` body. */
export type OllamaChatBody = z.output<typeof OLLAMA_CHAT_REQUEST>;
/** A validated `/api/generate` body. */
export type OllamaGenerateBody = z.output<typeof OLLAMA_GENERATE_REQUEST>;

/** The body of `POST /api/show`. */
export const OLLAMA_SHOW_REQUEST = z.looseObject({
  model: z.string().optional(),
  name: z.string().optional().openapi({ description: "Legacy name of `model`." }),
}).openapi("ShowRequest", { anyOf: [{ required: ["model"] }, { required: ["name"] }] });

/** The body of `POST /api/pull`. */
export const OLLAMA_PULL_REQUEST = z.looseObject({
  model: z.string().optional(),
  name: z.string().optional().openapi({ description: "Legacy name of `model`." }),
  insecure: z.boolean().optional(),
  stream: z.boolean().optional().openapi({ default: true }),
}).openapi("PullRequest", { anyOf: [{ required: ["model"] }, { required: ["name"] }] });

/** A validated `/api/pull` body. */
export type OllamaPullBody = z.output<typeof OLLAMA_PULL_REQUEST>;

/** The answer of `POST /api/pull` (and its one NDJSON line). */
export const OLLAMA_PULL = z.strictObject({ status: z.literal("success") }).openapi("Pull");

/** A validated `/api/show` body. */
export type OllamaShowBody = z.output<typeof OLLAMA_SHOW_REQUEST>;

const TOKEN_LOGPROB = z.strictObject({
  token: z.string(),
  logprob: z.number(),
  bytes: z.array(z.number().int()).nullable().optional(),
});

/** The log probabilities of a line's tokens (with `logprobs` or `top_logprobs` asked). */
const LOGPROBS = z.array(TOKEN_LOGPROB.extend({ top_logprobs: z.array(TOKEN_LOGPROB) }))
  .optional();

const TOOL_CALL = z.strictObject({
  id: z.string(),
  function: z.strictObject({ name: z.string(), arguments: z.record(z.string(), z.unknown()) }),
}).openapi("OllamaToolCall");

/**
 * An answer line: a piece (`done: false`), or the last one (`done: true` with `done_reason`
 * and, for a generated reply, the counters; a load or unload has none).
 */
function line<T extends z.ZodRawShape>(body: T) {
  const head = { model: z.string(), created_at: TIME };
  return z.union([
    z.strictObject({ ...head, ...body, done: z.literal(false) }),
    z.strictObject({
      ...head,
      ...body,
      done: z.literal(true),
      done_reason: z.string(),
      total_duration: COUNT.optional().openapi({
        description: "Nanoseconds, measured by the daemon.",
      }),
      load_duration: COUNT.optional(),
      prompt_eval_count: COUNT.optional(),
      prompt_eval_duration: COUNT.optional(),
      eval_count: COUNT.optional(),
      eval_duration: COUNT.optional(),
    }),
  ]);
}

/** A line (or the whole answer) of `/api/chat`. */
export const OLLAMA_CHAT_LINE = line({
  message: z.strictObject({
    role: z.literal("assistant"),
    content: z.string(),
    thinking: z.string().optional(),
    tool_calls: z.array(TOOL_CALL).optional(),
  }),
  logprobs: LOGPROBS,
}).openapi("OllamaChatLine");

/** A line (or the whole answer) of `/api/generate`. */
export const OLLAMA_GENERATE_LINE = line({
  response: z.string(),
  thinking: z.string().optional(),
  logprobs: LOGPROBS,
}).openapi("OllamaGenerateLine");

/** A line of either endpoint, as the surface builds it. */
export type OllamaLine = z.input<typeof OLLAMA_CHAT_LINE> | z.input<typeof OLLAMA_GENERATE_LINE>;

const DETAILS = z.strictObject({
  parent_model: z.string(),
  format: z.literal("remote"),
  family: z.string(),
  families: z.array(z.string()),
  parameter_size: z.string(),
  quantization_level: z.string(),
}).openapi("Details");

/** The `details` of a listed model. */
export type OllamaDetails = z.input<typeof DETAILS>;

/** One entry of `GET /api/tags`. */
const TAG = z.strictObject({
  name: z.string().regex(/^net\/(verified|tee)\/[^/]+\/[^/]+:latest$/).openapi({
    description: "`net/<tier>/<maker>/<model>:latest` (Continue keys on it).",
  }),
  model: z.string().openapi({ description: "The same (Open WebUI keys on it)." }),
  modified_at: TIME,
  size: z.literal(0),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  details: DETAILS,
  capabilities: z.array(z.string()).openapi({
    description: "As `POST /api/show` reports them: `completion` (+ `tools`, `vision`) or " +
      "`embedding`.",
  }),
});

/** One entry of `GET /api/tags`, as the surface builds it. */
export type OllamaTag = z.input<typeof TAG>;

/** The answer of `GET /api/tags`. */
export const OLLAMA_TAGS = z.strictObject({ models: z.array(TAG) }).openapi("Tags");

/** The answer of `POST /api/show`. */
export const OLLAMA_SHOW = z.strictObject({
  license: z.string(),
  modelfile: z.string(),
  parameters: z.string(),
  template: z.string(),
  system: z.string(),
  details: DETAILS,
  model_info: z.strictObject({
    "general.architecture": z.literal("net"),
    "general.basename": z.string(),
    "net.context_length": z.number().int().min(1),
    "net.tier": TIER,
    "net.providers": COUNT,
    "net.kind": z.enum(["chat", "embedding"]),
    "net.capabilities": z.array(z.string()).openapi({
      description: "What every provider supports, as ads say it (`docs/protocol.md` §1).",
    }),
    "net.embedding_length": z.number().int().min(1).optional().openapi({
      description: "An embedding model's vector length.",
    }),
    "net.weights_digests": z.array(z.string()).optional().openapi({
      description: "The digests of the weights its providers' ads name; in the TEE tier each " +
        "provider's enclave attests the one its ad names.",
    }),
  }),
  capabilities: z.array(z.string()).openapi({
    description: "`completion` (+ `tools`, `vision` when every provider supports them) for a " +
      "chat model, `embedding` for an embedding model.",
  }),
  modified_at: TIME,
}).openapi("Show");

/** The answer of `POST /api/show`, as the surface builds it. */
export type OllamaShow = z.input<typeof OLLAMA_SHOW>;

/** The answer of `GET /api/ps`: nothing runs locally. */
export const OLLAMA_PS = z.strictObject({ models: z.array(z.unknown()).max(0) }).openapi("Ps");

/** The answer of `GET /api/version`. */
export const OLLAMA_VERSION = z.strictObject({
  version: z.string().regex(/^\d+\.\d+\.\d+$/),
}).openapi("Version");
