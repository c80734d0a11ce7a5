/**
 * What an `eth_getLogs` error says (private to `chain/`): the words of a refusal, read from
 * the whole cause chain of a viem error (message, details, the JSON-RPC `data`, the HTTP
 * status and `Retry-After`), sorted into a kind, with the range or the limit the provider
 * names when it names one.
 *
 * Providers word their limits in their own way and with their own codes (there is no
 * standard one): Alchemy suggests a range (`this block range should work: [0x…, 0x…]`), Infura
 * too (`Try with this block range [0x…, 0x…]`), reth-based nodes in decimal (`retry with the
 * range 24383075-24383096`); others name a limit (`eth_getLogs is limited to a 10,000 range`,
 * `Max range: 800`, `exceed maximum block range: 50000`, `ranges over 10000 blocks are not
 * supported on freetier`, `(49999 > 2000)`, …) or only say the answer is too much (`query
 * returned more than 10000 results`). The reader splits the range on **any** error; this only
 * tells it how far, whether to wait first, and how to name a failure.
 * `tests/chain/_provider_errors.ts` holds the real messages this is checked against.
 *
 * @module
 */

/** What kind of refusal an `eth_getLogs` error is. */
export type LogsRefusalKind =
  /** The provider limits the block range of one request. */
  | "range"
  /** The answer is too much: a result-count or size limit, or the node timed out on it. */
  | "results"
  /** The endpoint rate-limits us (HTTP 429, a rate or quota message). */
  | "rate"
  /** The endpoint could not be reached or answered with a gateway error (5xx, network). */
  | "unreachable"
  /** Anything else (the reader still splits the range on it). */
  | "other";

/** An `eth_getLogs` error, read. */
export interface LogsRefusal {
  /** Its kind. */
  kind: LogsRefusalKind;
  /** The range the provider suggests instead (when it names one), inclusive. */
  suggested?: { from: bigint; to: bigint };
  /** The largest number of blocks one request may span, when the provider names a limit. */
  maxBlocks?: number;
  /** How long the endpoint asks us to wait (`Retry-After`), milliseconds. */
  retryAfterMs?: number;
  /** The HTTP status, when the error carries one. */
  status?: number;
  /** The JSON-RPC error code, when there is one. */
  code?: number;
  /** The provider's own words, on one line (at most 300 characters). */
  words: string;
}

/** Explicit ranges a provider suggests: hex (Alchemy, Infura, thirdweb) or decimal (reth). */
const SUGGESTED: readonly RegExp[] = [
  /block range should work: \[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i,
  /try with this block range \[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i,
  /retry with the range (\d+)\s*-\s*(\d+)/i,
];

/**
 * Limits a provider names, each phrasing with the group that holds the number. A limit is
 * read as a number of blocks; the reader asks one block less, so it fits whether the provider
 * counts blocks or `toBlock − fromBlock`.
 */
const LIMITS: readonly RegExp[] = [
  /limited to (?:a |an )?(?:0 ?- ?)?(\d[\d,.]*k?) ?(?:blocks? )?range/i, // QuickNode, Blast, 1rpc
  /up to an? (\d[\d,.]*k?)[ -]block range/i, // Alchemy
  /max range: ?(\d[\d,]*)/i, // Cloudflare
  /maximum block range:? (\d[\d,]*)/i, // PublicNode
  /max(?:imum)? block range(?: =|:)? ?(\d[\d,]*)/i, // reth, Morph
  /maximum allowed number of requested blocks is (\d[\d,]*)/i, // thirdweb
  /ranges over (\d[\d,]*) blocks/i, // dRPC
  /range allowed for your plan \(\d+ > (\d+)\)/i, // Blast (paid)
  /exceeds limit of (\d[\d,]*)/i, // Infura (range)
  /bigger than range limit (\d[\d,]*)/i, // Tenderly
  /at most (\d[\d,]*) blocks/i, // Coinbase
  /block range is too wide \(maximum (\d[\d,]*)\)/i, // Moonbeam (Frontier)
  /maximum allowed is (\d[\d,]*) blocks/i, // Sei
  /limited to (\d[\d,]*) blocks?/i, // BlockPI
];

const RANGE_WORDS =
  /block range|blocks range|range (?:is )?too (?:large|wide|big|high)|range limit|ranges over|range allowed|max(?:imum)? range|requested blocks|exceed(?:s|ed)? (?:the )?max(?:imum)? block/i;
const RESULT_WORDS =
  /more than [\d,]+ (?:results|logs)|max(?:imum)? results|too many (?:results|logs)|response size|response (?:is )?too (?:large|big)|body exceeded|log response|logs matched by query exceeds|query timeout|timed? ?out|took too long|query returned more|\blimit exceeded\b/i;
const RATE_WORDS =
  /rate.?limit|too many requests|request limit reached|requests per second|exceeded (?:the|your) (?:quota|capacity|daily)|quota exceeded|capacity limit|cu limit|compute units|throughput/i;
const RATE_CODES: ReadonlySet<number> = new Set([-32029, -32016, -32007, 429]);
const TOO_MUCH_NAMES: ReadonlySet<string> = new Set(["ResponseBodyTooLargeError", "TimeoutError"]);

/** A number in a provider's words: `10,000`, `10.000`, `2K`. */
function count(text: string): number | undefined {
  const thousands = /k$/i.test(text);
  const digits = text.replace(/k$/i, "").replace(/[,.]/g, "");
  if (!/^\d{1,12}$/.test(digits)) return undefined;
  const value = Number(digits) * (thousands ? 1000 : 1);
  return value >= 1 ? value : undefined;
}

/** `Retry-After` (seconds or an HTTP date) as milliseconds from `now`. */
export function retryAfterMs(
  value: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

interface Gathered {
  texts: string[];
  names: Set<string>;
  status?: number;
  code?: number;
  retryAfter?: number;
}

/** Everything the cause chain says: texts, error names, the HTTP status, the RPC code. */
function gather(error: unknown): Gathered {
  const found: Gathered = { texts: [], names: new Set() };
  const seen = new Set<unknown>();
  for (
    let current = error as Record<string, unknown> | undefined;
    current && typeof current === "object" && !seen.has(current);
    current = current.cause as Record<string, unknown> | undefined
  ) {
    seen.add(current);
    for (const key of ["shortMessage", "details", "message"]) {
      const value = current[key];
      if (typeof value === "string" && value !== "") found.texts.push(value);
    }
    if (current.data !== undefined) {
      found.texts.push(
        typeof current.data === "string" ? current.data : safeJson(current.data),
      );
    }
    if (typeof current.name === "string") found.names.add(current.name);
    if (typeof current.status === "number" && found.status === undefined) {
      found.status = current.status;
    }
    if (typeof current.code === "number" && found.code === undefined) found.code = current.code;
    const headers = current.headers;
    if (found.retryAfter === undefined && headers instanceof Headers) {
      found.retryAfter = retryAfterMs(headers.get("retry-after"));
    }
  }
  if (found.code === undefined) found.code = codeInText(found.texts.join(" "));
  return found;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return String(value);
  }
}

/** A JSON-RPC code inside a body quoted in the details (`{"code":-32614,…}`). */
function codeInText(text: string): number | undefined {
  const match = /"code"\s*:\s*(-?\d{1,6})\b/.exec(text);
  return match ? Number(match[1]) : undefined;
}

/** The provider's own words: the most specific text of the chain, on one line. */
function wordsOf(found: Gathered): string {
  const generic =
    /^(HTTP request failed\.?|RPC Request failed\.?|An internal error was received\.?|Request exceeds defined limit\.?|Missing or invalid parameters\.?.*|Invalid parameters were provided to the RPC method\.?.*)$/i;
  const specific = found.texts.map((t) => t.split("\n")[0].trim()).filter((t) =>
    t && !generic.test(t)
  );
  const text =
    (specific.sort((a, b) => b.length - a.length)[0] ?? found.texts[0] ?? "unknown error")
      .replace(/\s+/g, " ");
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

/**
 * Reads an `eth_getLogs` error for the range `from`–`to`: its kind, the range or the limit it
 * names, how long to wait. A suggestion is kept only when it starts at `from` and is shorter
 * than the range asked (a provider that suggests the range it refused is not followed).
 */
export function readLogsRefusal(error: unknown, from: bigint, to: bigint): LogsRefusal {
  const found = gather(error);
  const text = found.texts.join(" \u2029 ");
  const refusal: LogsRefusal = { kind: "other", words: wordsOf(found) };
  if (found.status !== undefined) refusal.status = found.status;
  if (found.code !== undefined) refusal.code = found.code;
  if (found.retryAfter !== undefined) refusal.retryAfterMs = found.retryAfter;
  for (const pattern of SUGGESTED) {
    const match = pattern.exec(text);
    if (!match) continue;
    const a = BigInt(match[1]);
    const b = BigInt(match[2]);
    if (a === from && b >= a && b < to) refusal.suggested = { from: a, to: b };
    refusal.kind = "range";
    break;
  }
  for (const pattern of LIMITS) {
    const match = pattern.exec(text);
    const limit = match ? count(match[1]) : undefined;
    if (limit !== undefined) {
      refusal.maxBlocks = limit;
      refusal.kind = "range";
      break;
    }
  }
  if (refusal.kind === "range") return refusal;
  if (found.status === 429 || RATE_CODES.has(found.code ?? 0) || RATE_WORDS.test(text)) {
    return { ...refusal, kind: "rate" };
  }
  if (RANGE_WORDS.test(text)) return { ...refusal, kind: "range" };
  if (
    found.status === 413 || found.status === 408 || RESULT_WORDS.test(text) ||
    [...found.names].some((name) => TOO_MUCH_NAMES.has(name))
  ) {
    return { ...refusal, kind: "results" };
  }
  if (
    (found.status !== undefined && found.status >= 500) ||
    (found.names.has("HttpRequestError") && found.status === undefined && found.code === undefined)
  ) {
    return { ...refusal, kind: "unreachable" };
  }
  return refusal;
}
