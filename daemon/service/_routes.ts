/**
 * The daemon's route table: the Ollama dialect's routes (`ollama/routes.ts`), the OpenAI
 * dialect's (`openai/routes.ts`), the Anthropic dialect's (`anthropic/routes.ts`), then the
 * daemon's own transparency endpoints, each declared
 * once with its request schemas, its answers per status (errors in the dialect of the path) and
 * its handler. The HTTP layer routes, validates and documents from it (`GET /openapi.json`).
 *
 * @module
 */

import { defineRoute, json, type Route } from "../../http/mod.ts";
import { anthropicRoutes } from "../anthropic/mod.ts";
import { ollamaRoutes } from "../ollama/mod.ts";
import { openaiRoutes } from "../openai/mod.ts";
import { answers, type SurfaceContext } from "../surface/mod.ts";
import type { ReceiptLog, VerdictLog } from "../trust/mod.ts";
import { type GatewayLister, serveGateways, serveReceipt, serveVerdicts } from "./transparency.ts";
import { accountRoutes, type DaemonAccount } from "../account/mod.ts";
import {
  GATEWAYS,
  RECEIPT_PATH,
  RECEIPT_RECORD,
  VERDICTS,
  verdictsQuery,
} from "./_transparency_schemas.ts";

/** What the route table is built from. */
export interface RouteTableOptions {
  /** The surfaces' shared dependencies and limits. */
  readonly context: SurfaceContext;
  /** The `X.Y.Z` version `/api/version` serves. */
  readonly version: string;
  /** The known gateways, for `GET /v1/gateways`. */
  readonly gateways: GatewayLister;
  /** The verdict log, for `GET /v1/verdicts`. */
  readonly verdicts: VerdictLog;
  /** The receipts of TEE replies, for `GET /v1/verdicts/{id}`. */
  readonly receipts: ReceiptLog;
  /** The consumer's account, for `GET /v1/account` and `GET /v1/usage` (a daemon that pays). */
  readonly account?: DaemonAccount;
}

function transparencyRoutes(options: RouteTableOptions): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/gateways",
      summary: "The gateways the daemon knows (the gateways' own shape)",
      tags: ["transparency"],
      responses: answers("openai", "local", {
        description: "The known gateway set.",
        content: json(GATEWAYS),
      }),
      handler: () => serveGateways(options.gateways),
    }),
    defineRoute({
      method: "get",
      path: "/v1/verdicts",
      summary: "The latest verification verdicts, newest first",
      tags: ["transparency"],
      query: verdictsQuery(options.verdicts.capacity),
      responses: answers("openai", "local", {
        description: "The verdicts.",
        content: json(VERDICTS),
      }, { 400: "`invalid_request_error`: a bad `limit`." }),
      handler: (_c, { query }) => serveVerdicts(options.verdicts, query.limit),
    }),
    defineRoute({
      method: "get",
      path: "/v1/verdicts/{id}",
      summary: "A TEE reply's verified receipt, with the attestation it names",
      tags: ["transparency"],
      params: RECEIPT_PATH,
      responses: answers("openai", "local", {
        description: "The receipt record; `deno task verify-receipt` re-verifies it offline.",
        content: json(RECEIPT_RECORD),
      }, {
        400: "`invalid_request_error`: the id is not `r` and 32 hex digits.",
        404: "`not_found`: no verified receipt has that id (yet).",
      }),
      handler: (_c, { params }) => serveReceipt(options.receipts, params.id),
    }),
  ];
}

/** Every route of the daemon (`GET /openapi.json` is added by the HTTP layer). */
export function daemonRoutes(options: RouteTableOptions): Route[] {
  return [
    ...ollamaRoutes(options),
    ...openaiRoutes(options.context),
    ...anthropicRoutes(options.context),
    ...transparencyRoutes(options),
    ...(options.account ? accountRoutes(options.account, options.context.clock) : []),
  ];
}

/**
 * The error answers no operation owns (an unknown path, a wrong method), documented once per
 * dialect as `components.responses`.
 */
export const SHARED_ERROR_RESPONSES: Readonly<
  Record<string, { description: string; content: Record<string, { schema: { $ref: string } }> }>
> = {
  OpenAIError: {
    description: "An error under `/v1`, e.g. `not_found` (404) or `method_not_allowed` (405).",
    content: { "application/json": { schema: { $ref: "#/components/schemas/OpenAIError" } } },
  },
  OllamaError: {
    description: "An error outside `/v1`, e.g. `not_found` (404) or `method_not_allowed` (405).",
    content: { "application/json": { schema: { $ref: "#/components/schemas/OllamaError" } } },
  },
  AnthropicError: {
    description: "An error under `/v1/messages`, e.g. `method_not_allowed` (405).",
    content: { "application/json": { schema: { $ref: "#/components/schemas/AnthropicError" } } },
  },
};
