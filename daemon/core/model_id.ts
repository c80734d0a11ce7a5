/**
 * Model ids of the daemon: `net/<tier>/<maker>/<model>`, where `<tier>` is `verified` or `tee`
 * and `<maker>/<model>` is the network's model id (`docs/protocol.md` §1: each segment
 * `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`). The Ollama surface lists ids with `:latest`, because Open
 * WebUI appends it to any name without a colon; every id is accepted with or without `:latest`.
 * Any other `:tag` is refused with a message that states the expected format.
 *
 * @example
 * ```ts
 * import { formatModelId, parseModelId } from "./model_id.ts";
 *
 * const id = parseModelId("net/tee/devnet/tiny-chat:latest");
 * console.assert(id.tier === "tee" && id.model === "devnet/tiny-chat");
 * console.assert(formatModelId(id) === "net/tee/devnet/tiny-chat");
 * console.assert(formatModelId(id, { latest: true }) === "net/tee/devnet/tiny-chat:latest");
 * ```
 *
 * @module
 */

import { abbreviate, ReasonError } from "../../errors.ts";
import type { Tier } from "./backend.ts";

/** The format every error message names. */
export const MODEL_ID_FORMAT: string =
  "net/<tier>/<maker>/<model> (tier verified or tee), optionally " +
  "followed by :latest";

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const LATEST = ":latest";

/** A parsed model id. */
export interface ModelId {
  /** The tier the request must be served in. */
  readonly tier: Tier;
  /** The network's model id, `maker/model`. */
  readonly model: string;
}

/** Why a model id was refused. */
export type ModelIdFailure = "not_a_string" | "format" | "tier" | "segment" | "tag";

/** Thrown by {@linkcode parseModelId}; the daemon answers it with a 400 naming the format. */
export class ModelIdError extends ReasonError<ModelIdFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ModelIdError" as const;
}

/**
 * Parses `net/<tier>/<maker>/<model>` with or without `:latest`.
 *
 * @throws {ModelIdError} naming what was found and the expected format.
 */
export function parseModelId(value: unknown): ModelId {
  if (typeof value !== "string") {
    throw new ModelIdError(
      "not_a_string",
      `Cannot use model id: found ${describe(value)}; expected a string ${MODEL_ID_FORMAT}`,
    );
  }
  const shown = JSON.stringify(abbreviate(value, 120));
  const fail = (reason: ModelIdFailure, what: string): never => {
    throw new ModelIdError(
      reason,
      `Cannot use model id ${shown}: ${what}; expected ${MODEL_ID_FORMAT}`,
    );
  };
  let id = value;
  const colon = id.indexOf(":");
  if (colon !== -1) {
    const tag = id.slice(colon);
    if (tag !== LATEST) fail("tag", `the tag ${JSON.stringify(abbreviate(tag, 40))} is not known`);
    id = id.slice(0, colon);
  }
  const parts = id.split("/");
  if (parts[0] !== "net") fail("format", 'it does not start with "net/"');
  if (parts.length !== 4) fail("format", `found ${parts.length} segments, expected 4`);
  const [, tier, maker, model] = parts;
  if (tier !== "verified" && tier !== "tee") {
    fail("tier", `the tier ${JSON.stringify(abbreviate(tier, 40))} is not verified or tee`);
  }
  for (const [label, segment] of [["maker", maker], ["model", model]] as const) {
    if (!SEGMENT.test(segment)) {
      fail(
        "segment",
        `the ${label} ${
          JSON.stringify(abbreviate(segment, 70))
        } must be 1 to 64 of A-Z a-z 0-9 . _ - starting with a letter or digit`,
      );
    }
  }
  return { tier: tier as Tier, model: `${maker}/${model}` };
}

/** Options of {@linkcode formatModelId}. */
export interface FormatModelIdOptions {
  /** Append `:latest` (the Ollama surface's listing form). @default {false} */
  latest?: boolean;
}

/**
 * Formats a model id: `net/<tier>/<maker>/<model>`, with `:latest` when asked.
 *
 * @throws {ModelIdError} when the tier or the `maker/model` id is malformed.
 */
export function formatModelId(id: ModelId, options: FormatModelIdOptions = {}): string {
  const text = `net/${id.tier}/${id.model}`;
  parseModelId(text);
  return options.latest ? text + LATEST : text;
}

/**
 * Whether `model` is a well-formed network model id `maker/model` (`docs/protocol.md` §1).
 */
export function isNetworkModelId(model: unknown): model is string {
  if (typeof model !== "string") return false;
  const parts = model.split("/");
  return parts.length === 2 && SEGMENT.test(parts[0]) && SEGMENT.test(parts[1]);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `the ${typeof value} ${String(value)}`;
}
