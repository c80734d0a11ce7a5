/**
 * The one error base of the project. Every module defines one subclass per operation
 * (`SealError`, `AttestationError`, `ChainReadError`, ...) with a literal `name`, so callers
 * can tell failures apart without parsing messages, and the services map them to HTTP in one
 * place each.
 *
 * A message says what failed, what was found and what was expected, in plain words:
 *
 * ```
 * Cannot verify attestation: measurement 0x91eb… is not in the approved set (3 approved)
 * ```
 *
 * @example Define and throw an operation's error
 * ```ts
 * import { NetError } from "@net/consumer";
 *
 * class ExampleError extends NetError {
 *   override readonly name = "ExampleError" as const;
 * }
 *
 * const error = new ExampleError("Cannot read the example: file is empty", {
 *   details: "expected at least 1 byte, found 0",
 *   hints: ["Run `example init` first."],
 * });
 * console.assert(error.shortMessage === "Cannot read the example: file is empty");
 * ```
 *
 * @module
 */

/** Options of {@linkcode NetError}. */
export interface NetErrorOptions {
  /** More detail on what was found and what was expected. Shown after the short message. */
  details?: string;
  /** Lines that tell the reader what to do next. Shown last. */
  hints?: readonly string[];
  /** The underlying error, kept as the standard `cause`. */
  cause?: unknown;
}

/**
 * The base of every error the project throws on purpose.
 *
 * `message` is the short message followed by the details and hints, each on its own line;
 * `shortMessage` is the first line alone, suitable for an API error body.
 */
export class NetError extends Error {
  /** The error's name; each subclass overrides it with a literal. */
  override readonly name: string = "NetError";
  /** One line: what failed, what was found, what was expected. */
  readonly shortMessage: string;
  /** Further detail, if any. */
  readonly details: string | undefined;
  /** What to do next, if anything. */
  readonly hints: readonly string[];

  /** Creates an error with a short message and optional details, hints and cause. */
  constructor(shortMessage: string, options: NetErrorOptions = {}) {
    const lines = [shortMessage];
    if (options.details) lines.push(`Details: ${options.details}`);
    if (options.hints) lines.push(...options.hints);
    super(lines.join("\n"), options.cause === undefined ? undefined : { cause: options.cause });
    this.shortMessage = shortMessage;
    this.details = options.details;
    this.hints = options.hints ?? [];
  }

  /**
   * Walks the `cause` chain (this error first) and returns the first error for which `match`
   * is true, or `undefined`.
   */
  walk(match: (error: unknown) => boolean): unknown {
    return findCause(this, match);
  }
}

/**
 * The one pattern for an operation's error with a machine-readable reason: the constructor,
 * the `reason` field and their documentation live here once, so each operation's class is
 * only its literal `name` over its own union of reasons.
 *
 * @example
 * ```ts
 * import { ReasonError } from "@net/consumer";
 *
 * type ParseFailure = "empty" | "malformed";
 * class ParseError extends ReasonError<ParseFailure> {
 *   override readonly name = "ParseError" as const;
 * }
 *
 * const error = new ParseError("empty", "Cannot parse the file: it is empty");
 * console.assert(error.reason === "empty" && error instanceof ReasonError);
 * ```
 */
export class ReasonError<Reason extends string> extends NetError {
  /** Machine-readable reason, one of the operation's own union. */
  readonly reason: Reason;

  /** Creates the error with its reason, a short message and optional details, hints, cause. */
  constructor(reason: Reason, shortMessage: string, options: NetErrorOptions = {}) {
    super(shortMessage, options);
    this.reason = reason;
  }
}

/**
 * Walks the `cause` chain of any value (the value itself first) and returns the first link for
 * which `match` is true, or `undefined`. Cycles end the walk.
 */
export function findCause(error: unknown, match: (error: unknown) => boolean): unknown {
  const seen = new Set<unknown>();
  for (let current = error; current != null && !seen.has(current);) {
    if (match(current)) return current;
    seen.add(current);
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Shortens a long value for an error message: hex strings and other long text keep their
 * first `keep` characters followed by `…`.
 *
 * @example
 * ```ts
 * import { abbreviate } from "@net/consumer";
 * console.assert(abbreviate("0x91eb2b44d141d4ece09f", 6) === "0x91eb…");
 * ```
 */
export function abbreviate(value: string, keep = 10): string {
  return value.length <= keep ? value : `${value.slice(0, keep)}…`;
}
