/**
 * Reading a body into memory without trusting its sender about its size.
 *
 * @module
 */

/**
 * Reads `stream` to its end into one array, or stops as soon as more than `maxBytes` have
 * arrived: then the rest of the stream is cancelled (never buffered) and `null` is returned,
 * so each caller can raise its own error. A `null` stream reads as empty.
 */
export async function readAllLimited(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer> | null> {
  if (!stream) return new Uint8Array();
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        return null;
      }
      parts.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
