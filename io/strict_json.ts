/**
 * Duplicate object keys in JSON. `JSON.parse` keeps the last of them without a word, and other
 * parsers keep the first, so one text can mean two different documents to two readers — the
 * opening for a parser-differential attack on anything signed or committed (an ad whose
 * `endpoint` differs between the indexer and another client). Everything the project reads
 * from an untrusted peer is therefore refused when a key repeats.
 *
 * @example
 * ```ts
 * import { duplicateKey } from "./strict_json.ts";
 * console.assert(duplicateKey('{"a":1,"b":{"c":2}}') === undefined);
 * console.assert(duplicateKey('{"a":1,"\\u0061":2}') === "a");
 * ```
 *
 * @module
 */

/**
 * Returns the first key that appears twice in one object of `text` (compared after
 * unescaping), or `undefined`. `text` must be valid JSON (call it after `JSON.parse`
 * succeeded); the scan is linear in the length of the text.
 */
export function duplicateKey(text: string): string | undefined {
  // One set of keys per open object; `null` for an open array.
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      const keys = stack.at(-1);
      if (expectKey && keys) {
        const raw = text.slice(start, i + 1);
        const key = escaped ? JSON.parse(raw) as string : raw.slice(1, -1);
        if (keys.has(key)) return key;
        keys.add(key);
        expectKey = false;
      }
    } else if (c === 0x7b /* { */) {
      stack.push(new Set());
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      stack.push(null);
      expectKey = false;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      expectKey = stack.at(-1) !== null && stack.length > 0;
    }
  }
  return undefined;
}
