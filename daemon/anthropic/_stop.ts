/**
 * Stop sequences applied by the daemon to a reply's text as it streams: the text up to the
 * first occurrence of any sequence is passed on, the sequence and what follows are not, and the
 * sequence is reported (Anthropic's `stop_reason: "stop_sequence"` names it). Text that might be
 * the start of a sequence is held back until it is known not to be, so a sequence split across
 * two tokens is found all the same.
 *
 * @module
 */

/** What {@linkcode StopScanner.push} found: text that can go out, and the sequence, if one ended it. */
export interface StopStep {
  /** Text to pass on now. */
  readonly text: string;
  /** The stop sequence that ended the text, when one did (nothing more is to be passed on). */
  readonly stop?: string;
}

/** Finds the first of a set of stop sequences in text that arrives in pieces. */
export class StopScanner {
  readonly #sequences: readonly string[];
  readonly #hold: number;
  #pending = "";
  #stopped = false;

  /** A scanner for `sequences` (non-empty strings). */
  constructor(sequences: readonly string[]) {
    this.#sequences = sequences.filter((s) => s.length > 0);
    this.#hold = Math.max(0, ...this.#sequences.map((s) => s.length - 1));
  }

  /** Whether a sequence has been found (later pieces are ignored). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Takes the next piece of text. */
  push(piece: string): StopStep {
    if (this.#stopped) return { text: "" };
    if (this.#sequences.length === 0) return { text: piece };
    const text = this.#pending + piece;
    let at = -1;
    let found: string | undefined;
    for (const sequence of this.#sequences) {
      const index = text.indexOf(sequence);
      if (index >= 0 && (at < 0 || index < at)) {
        at = index;
        found = sequence;
      }
    }
    if (found !== undefined) {
      this.#stopped = true;
      this.#pending = "";
      return { text: text.slice(0, at), stop: found };
    }
    // Keep back the longest tail that could still begin a sequence.
    let keep = Math.min(this.#hold, text.length);
    while (keep > 0 && !this.#sequences.some((s) => s.startsWith(text.slice(text.length - keep)))) {
      keep--;
    }
    this.#pending = text.slice(text.length - keep);
    return { text: text.slice(0, text.length - keep) };
  }

  /** The text held back, at the end of the reply (no sequence can complete any more). */
  flush(): string {
    const rest = this.#stopped ? "" : this.#pending;
    this.#pending = "";
    return rest;
  }
}
