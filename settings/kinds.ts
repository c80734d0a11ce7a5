/**
 * One parser per kind of setting value, shared by every program of the project: a listen
 * address, a URL with its allowed schemes, an EVM address, a whole number in a range, a block
 * number, a list, a choice, a path, an on/off switch. Each kind is a zod schema from the raw
 * text to the value, plus the placeholder and the expectation its help and errors show.
 *
 * @example
 * ```ts
 * import { integer, list, url } from "./kinds.ts";
 *
 * console.assert(integer({ min: 1, max: 10 }).schema.parse("7") === 7);
 * console.assert(url().schema.safeParse("ws://127.0.0.1:8545").success === false);
 * console.assert(list(url()).schema.parse("http://a, http://b").length === 2);
 * ```
 *
 * @module
 */

import { z } from "zod";
import { type BindAddress, BindAddressError, parseBindAddress } from "../io/bind_address.ts";

/** A kind of value: how to read it from text, and how help and errors name it. */
export interface Kind<T> {
  /** Reads the raw text (already trimmed); its issues' messages say what is wrong. */
  readonly schema: z.ZodType<T, string>;
  /** How `--help` shows the value, e.g. `<host:port>`. */
  readonly placeholder: string;
  /** What a good value looks like, for errors: `host:port such as 127.0.0.1:8088`. */
  readonly expected: string;
  /** Whether the setting is a switch (`--flag` with no value). */
  readonly isSwitch?: boolean;
}

/**
 * A kind from a function that reads the text or throws an `Error` saying what is wrong with it
 * (`not an address`); the error becomes the issue's message.
 */
export function defineKind<T>(
  placeholder: string,
  expected: string,
  read: (text: string) => T,
): Kind<T> {
  const schema = z.string().transform((text, ctx) => {
    try {
      return read(text);
    } catch (error) {
      ctx.addIssue({
        code: "custom",
        message: error instanceof Error ? error.message : String(error),
      });
      return z.NEVER;
    }
  });
  return { schema, placeholder, expected };
}

/** `host:port`, IPv6 in brackets; port 0 means any free port. */
export function bindAddress(): Kind<BindAddress> {
  return defineKind("<host:port>", "host:port such as 127.0.0.1:8088 or [::1]:8088", (text) => {
    try {
      return parseBindAddress(text);
    } catch (error) {
      throw new Error(error instanceof BindAddressError ? error.shortMessage : String(error));
    }
  });
}

/** Options of {@linkcode url}. */
export interface UrlOptions {
  /** The schemes accepted. @default {["http:", "https:"]} */
  schemes?: readonly string[];
  /** An example for errors. @default {"http://127.0.0.1:8545"} */
  example?: string;
  /** Whether `user:password@` is accepted (sent as basic auth by `fetch`). @default {false} */
  allowCredentials?: boolean;
}

/**
 * An absolute URL with one of the allowed schemes, without credentials. Returned as written
 * (trailing slashes removed).
 */
export function url(options: UrlOptions = {}): Kind<string> {
  const schemes = options.schemes ?? ["http:", "https:"];
  const names = schemes.map((s) => s.replace(/:$/, "")).join(" or ");
  const example = options.example ?? "http://127.0.0.1:8545";
  return defineKind("<url>", `an ${names} URL such as ${example}`, (text) => {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      throw new Error("not an absolute URL");
    }
    if (!schemes.includes(parsed.protocol)) {
      throw new Error(`the scheme ${parsed.protocol} is not accepted`);
    }
    if ((parsed.username || parsed.password) && !options.allowCredentials) {
      throw new Error("credentials are not allowed in it");
    }
    return text.replace(/\/+$/, "");
  });
}

/**
 * An EVM JSON-RPC endpoint: what the chain client (viem's `http` transport) speaks, so
 * `http:` or `https:` only, credentials allowed (sent as basic auth).
 */
export function rpcUrl(): Kind<string> {
  return url({ allowCredentials: true });
}

/** A 20-byte EVM address, `0x` and 40 hex digits; returned in lower case. */
export function address(): Kind<`0x${string}`> {
  return defineKind("<address>", "a 20-byte address, 0x and 40 hex digits", (text) => {
    if (!/^0x[0-9a-fA-F]{40}$/.test(text)) throw new Error("not an address");
    return text.toLowerCase() as `0x${string}`;
  });
}

/** Options of {@linkcode integer}. */
export interface IntegerOptions {
  /** The smallest value. @default {0} */
  min?: number;
  /** The largest value. @default {Number.MAX_SAFE_INTEGER} */
  max?: number;
  /** The unit, for help and errors, e.g. `seconds`. @default {undefined} */
  unit?: string;
}

/** A whole number (digits only) in `[min, max]`. */
export function integer(options: IntegerOptions = {}): Kind<number> {
  const min = options.min ?? 0;
  const max = options.max ?? Number.MAX_SAFE_INTEGER;
  const unit = options.unit ? ` of ${options.unit}` : "";
  const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `${min} to ${max}`;
  return defineKind("<n>", `a whole number${unit}, ${range}`, (text) => {
    if (!/^\d{1,16}$/.test(text)) throw new Error("not a whole number");
    const value = Number(text);
    if (value < min || value > max) throw new Error(`out of range`);
    return value;
  });
}

/** A block number: a whole number of any size, as a `bigint`. */
export function blockNumber(): Kind<bigint> {
  return defineKind("<block>", "a block number (a whole number)", (text) => {
    if (!/^\d{1,78}$/.test(text)) throw new Error("not a whole number");
    return BigInt(text);
  });
}

/** One of a fixed set of words. */
export function choice<const T extends string>(values: readonly T[]): Kind<T> {
  return defineKind(values.join("|"), `one of ${values.join(", ")}`, (text) => {
    if (!(values as readonly string[]).includes(text)) throw new Error("not one of the choices");
    return text as T;
  });
}

/** Any non-empty text (a path, a name). */
export function text(placeholder = "<text>"): Kind<string> {
  return defineKind(placeholder, "a non-empty value", (value) => value);
}

/** A host name or IP address without a port (IPv6 may be bracketed; returned bare, lower case). */
export function host(): Kind<string> {
  const name =
    /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  return defineKind("<host>", "a host name or an IP address without a port", (value) => {
    const bare = value.replace(/^\[(.*)\]$/, "$1");
    if (!name.test(bare) && !isIpv6(bare)) throw new Error("not a host");
    return bare.toLowerCase();
  });
}

function isIpv6(value: string): boolean {
  if (!value.includes(":") || !/^[0-9A-Fa-f:.]+$/.test(value)) return false;
  try {
    new URL(`http://[${value}]/`);
    return true;
  } catch {
    return false;
  }
}

/** A comma-separated list of values of one kind (blanks around items and empty items ignored). */
export function list<T>(item: Kind<T>): Kind<T[]> {
  return defineKind(
    `${item.placeholder},…`,
    `a comma-separated list of ${item.expected}`,
    (value) =>
      value.split(",").map((part) => part.trim()).filter((part) => part !== "").map((part) => {
        const result = item.schema.safeParse(part);
        if (!result.success) {
          throw new Error(`${JSON.stringify(part)} is ${result.error.issues[0].message}`);
        }
        return result.data;
      }),
  );
}

/** An on/off switch: `--flag` on the command line; `1`, `true`, `yes` or `0`, `false`, `no` in the environment. */
export function toggle(): Kind<boolean> {
  const words: Record<string, boolean> = {
    1: true,
    true: true,
    yes: true,
    0: false,
    false: false,
    no: false,
  };
  const base = defineKind("", "1, true, yes, 0, false or no", (value) => {
    const found = words[value.toLowerCase()];
    if (found === undefined) throw new Error("not an on/off value");
    return found;
  });
  return { ...base, isSwitch: true };
}
