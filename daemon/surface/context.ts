/**
 * What the dialects (`openai/`, `ollama/`) share: the backend and the outside world, as
 * resolved by `createDaemonService`.
 *
 * @module
 */

import type { ChatBackend, ErrorLogger } from "../core/mod.ts";

/** The resolved dependencies and limits of one daemon handler. */
export interface SurfaceContext {
  /** The network side. */
  readonly backend: ChatBackend;
  /** Wall clock: `created`, `created_at`, Ollama durations. */
  readonly clock: () => Date;
  /** Random source for completion and tool-call ids. */
  readonly randomBytes: (length: number) => Uint8Array;
  /** Receives unexpected errors. */
  readonly log: ErrorLogger;
  /** Receives one-line notes (a client's cancel): no error, no stack. */
  readonly note: (line: string) => void;
  /** How long to wait for the first chunk of a reply. */
  readonly firstByteTimeoutMs: number;
  /** How long to wait between two chunks of a reply. */
  readonly idleTimeoutMs: number;
  /**
   * Largest reply the surface buffers (UTF-8 bytes of text and tool-call fragments): a whole
   * `stream: false` reply, or the tool calls of a streamed Ollama reply.
   */
  readonly maxReplyBytes: number;
  /** When the handler was created: `modified_at` and `created` of listed models. */
  readonly startedAt: Date;
}

/** Returns `prefix` followed by 24 random hex digits. */
export function randomId(context: SurfaceContext, prefix: string): string {
  const bytes = context.randomBytes(12);
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
