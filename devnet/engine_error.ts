/**
 * The one error of the devnet's inference engines (`engine.ts`, `upstream_engine.ts`, the dev
 * models), with the reason the provider turns into a sealed status.
 *
 * @module
 */

import { ReasonError } from "../errors.ts";

/** Why an engine refused or failed a request. */
export type EngineFailure =
  /** The engine does not serve the requested model (the provider answers a sealed 404). */
  | "unknown_model"
  /** The request is not one the engine can run (a sealed 400). */
  | "invalid_request"
  /** The upstream server failed or could not be reached (a sealed 502). */
  | "upstream";

/** Thrown by engines. */
export class EngineError extends ReasonError<EngineFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "EngineError" as const;
}
