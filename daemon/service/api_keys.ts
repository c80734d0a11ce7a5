/**
 * Named API keys (`--api-keys-file` / `NET_DAEMON_API_KEYS_FILE`): several keys, each with a
 * name the ledger and `GET /v1/usage` count spend under and, optionally, its own spend cap —
 * one key per agent or per tool, each with its budget. The file is JSON:
 *
 * ```json
 * {"keys": [
 *   {"name": "agent", "key": "net_…", "max_spend": "0.05/day"},
 *   {"name": "editor", "key": "net_…"}
 * ]}
 * ```
 *
 * A name is 1–64 of `a-z`, `0-9`, `_`, `-` (`default` and `local` are the daemon's own: its
 * single key, and a request without a key); keys follow `checkApiKey`'s rules and are unique;
 * `max_spend` is `AMOUNT/PERIOD` (`account/spend_cap.ts`). Any of these keys is accepted where
 * a key is required; a request that presents one is paid under its name (on loopback too).
 *
 * @module
 */

import { SettingError } from "../../settings/mod.ts";
import { parseSpendCap, type SpendCap, SpendCapError } from "../account/mod.ts";
import { checkApiKey } from "./auth.ts";

/** One named key. */
export interface NamedApiKey {
  /** Its name. */
  readonly name: string;
  /** The key. */
  readonly key: string;
  /** Its own spend cap, or `null`. */
  readonly maxSpend: SpendCap | null;
}

/** The name of the daemon's single key (`NET_DAEMON_API_KEY`, `--api-key-file`, generated). */
export const DEFAULT_KEY_NAME = "default";

const NAME = /^[a-z0-9_-]{1,64}$/;
const SETTING = "--api-keys-file";

/**
 * Reads the named keys of `path`.
 *
 * @throws {SettingError} naming the file and the entry at fault (never a key).
 */
export async function readApiKeysFile(path: string): Promise<NamedApiKey[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new SettingError(
      SETTING,
      `Cannot read the API keys file ${path}: ${(error as Error).message}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SettingError(SETTING, `Cannot read the API keys file ${path}: it is not JSON`);
  }
  const list = (json as { keys?: unknown })?.keys;
  if (!Array.isArray(list) || Object.keys(json as object).some((k) => k !== "keys")) {
    throw new SettingError(
      SETTING,
      `Cannot read the API keys file ${path}: expected {"keys": [{"name", "key", "max_spend"?}, …]}`,
    );
  }
  const names = new Set<string>();
  const keys = new Set<string>();
  return list.map((entry, i): NamedApiKey => {
    const where = `Cannot use the API keys file ${path}: entry ${i}`;
    const fields = entry as Record<string, unknown>;
    const extra = typeof entry === "object" && entry !== null
      ? Object.keys(fields).find((k) => !["name", "key", "max_spend"].includes(k))
      : "(not an object)";
    if (extra !== undefined) {
      throw new SettingError(SETTING, `${where} has ${extra}; expected name, key, max_spend`);
    }
    const name = fields.name;
    if (
      typeof name !== "string" || !NAME.test(name) || name === "local" || name === DEFAULT_KEY_NAME
    ) {
      throw new SettingError(
        SETTING,
        `${where}: name ${JSON.stringify(String(name).slice(0, 70))} must be 1–64 of a-z, 0-9, _ ` +
          "and -, and not default or local",
      );
    }
    if (names.has(name)) throw new SettingError(SETTING, `${where}: name ${name} is used twice`);
    names.add(name);
    if (typeof fields.key !== "string") {
      throw new SettingError(SETTING, `${where} (${name}) has no key`);
    }
    const key = checkApiKey(fields.key, `${path} (${name})`);
    if (keys.has(key)) throw new SettingError(SETTING, `${where} (${name}): its key is used twice`);
    keys.add(key);
    let maxSpend: SpendCap | null = null;
    if (fields.max_spend !== undefined) {
      try {
        maxSpend = parseSpendCap(String(fields.max_spend));
      } catch (error) {
        if (!(error instanceof SpendCapError)) throw error;
        throw new SettingError(SETTING, `${where} (${name}): ${error.shortMessage}`);
      }
    }
    return { name, key, maxSpend };
  });
}
