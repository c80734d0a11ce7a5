/**
 * Splits text that arrives in pieces into lines ending in CR, LF or CRLF (the line rule of the
 * WHATWG event stream format, HTML §9.2.5), examining every character exactly once.
 *
 * The pending part of an unfinished line is kept as a list of pieces and joined once, when the
 * line ends: a long line that arrives in small pieces costs time linear in its length, not
 * quadratic (no re-scan and no re-concatenation of the whole pending text per piece). A CR at
 * the end of a piece ends the line at once; an LF at the start of the next piece is then the
 * second half of that CRLF and is skipped.
 *
 * @module
 */

/** Thrown through {@linkcode LineSplitter.push} when an unfinished line passes its limit. */
export type LineTooLong = (length: number) => Error;

/** An incremental line splitter. */
export class LineSplitter {
  readonly #maxLineLength: number;
  readonly #tooLong: LineTooLong;
  #parts: string[] = [];
  #pending = 0;
  #skipLf = false;
  #scanned = 0;

  /**
   * Creates a splitter that refuses an unfinished line longer than `maxLineLength` UTF-16 code
   * units, with the error `tooLong` builds.
   */
  constructor(maxLineLength: number, tooLong: LineTooLong) {
    this.#maxLineLength = maxLineLength;
    this.#tooLong = tooLong;
  }

  /** Characters examined so far: equal to the number of characters pushed (linear work). */
  get scanned(): number {
    return this.#scanned;
  }

  /** Length of the unfinished line held, in UTF-16 code units. */
  get pending(): number {
    return this.#pending;
  }

  /**
   * Feeds the next piece of text and returns the lines it completes, without their endings.
   *
   * @throws the `tooLong` error when the unfinished line passes the limit.
   */
  push(text: string): string[] {
    const lines: string[] = [];
    let start = 0;
    let i = 0;
    if (this.#skipLf && text.length > 0) {
      this.#skipLf = false;
      if (text.charCodeAt(0) === 10) {
        start = i = 1;
        this.#scanned++;
      }
    }
    for (; i < text.length; i++) {
      this.#scanned++;
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      lines.push(this.#finish(text.slice(start, i)));
      if (c === 13) {
        if (i + 1 === text.length) this.#skipLf = true;
        else if (text.charCodeAt(i + 1) === 10) {
          i++;
          this.#scanned++;
        }
      }
      start = i + 1;
    }
    if (start < text.length) {
      const rest = text.slice(start);
      this.#pending += rest.length;
      if (this.#pending > this.#maxLineLength) throw this.#tooLong(this.#pending);
      this.#parts.push(rest);
    }
    return lines;
  }

  #finish(tail: string): string {
    if (this.#parts.length === 0) return tail;
    this.#parts.push(tail);
    const line = this.#parts.join("");
    this.#parts = [];
    this.#pending = 0;
    return line;
  }
}
