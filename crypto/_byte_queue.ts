/**
 * A FIFO of bytes fed by stream chunks, for incremental parsers (private). Bytes are copied
 * only when a read spans chunks.
 *
 * @module
 */

/** Bytes received but not yet consumed. */
export class ByteQueue {
  #chunks: Uint8Array[] = [];
  #offset = 0; // consumed bytes of #chunks[0]
  #length = 0;

  /** Number of bytes queued. */
  get length(): number {
    return this.#length;
  }

  /** Appends a chunk (kept by reference; callers must not modify it afterwards). */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  /** The byte at `index` from the front, or `undefined` past the end. */
  peek(index: number): number | undefined {
    if (index >= this.#length) return undefined;
    let i = index + this.#offset;
    const chunks = this.#chunks;
    for (let c = 0; c < chunks.length; c++) {
      const chunk = chunks[c];
      if (i < chunk.length) return chunk[i];
      i -= chunk.length;
    }
    return undefined;
  }

  /** Removes and returns the first `count` bytes; `count` must not exceed `length`. */
  take(count: number): Uint8Array {
    if (count > this.#length) throw new RangeError(`ByteQueue: take(${count}) of ${this.#length}`);
    const first = this.#chunks[0];
    if (count === 0) return new Uint8Array(0);
    if (first.length - this.#offset >= count) {
      const out = first.subarray(this.#offset, this.#offset + count);
      this.#advance(count);
      return out;
    }
    const out = new Uint8Array(count);
    let filled = 0;
    while (filled < count) {
      const chunk = this.#chunks[0];
      const available = chunk.length - this.#offset;
      const n = Math.min(available, count - filled);
      out.set(chunk.subarray(this.#offset, this.#offset + n), filled);
      filled += n;
      this.#advance(n);
    }
    return out;
  }

  /** Removes and returns everything queued. */
  takeAll(): Uint8Array {
    return this.take(this.#length);
  }

  /** Removes and returns up to `max` bytes from the first chunk only (no copy). */
  takeSome(max: number): Uint8Array {
    if (this.#length === 0 || max <= 0) return new Uint8Array(0);
    const first = this.#chunks[0];
    const n = Math.min(max, first.length - this.#offset);
    const out = first.subarray(this.#offset, this.#offset + n);
    this.#advance(n);
    return out;
  }

  #advance(count: number): void {
    this.#length -= count;
    this.#offset += count;
    while (this.#chunks.length > 0 && this.#offset >= this.#chunks[0].length) {
      this.#offset -= this.#chunks[0].length;
      this.#chunks.shift();
    }
  }
}
