/**
 * The one settings module of the project's programs (indexer, daemon, devnet): each setting
 * declared once with its flag, environment variable, kind of value, default and help line;
 * the parser, the typed values and `--help` all come from the declarations.
 *
 * @module
 */

export {
  defineSettings,
  type ParsedSettings,
  type ProgramText,
  readSetting,
  type Setting,
  SettingError,
  type Settings,
  type SettingSource,
  type SettingValues,
} from "./define.ts";
export {
  address,
  bindAddress,
  blockNumber,
  choice,
  defineKind,
  host,
  integer,
  type IntegerOptions,
  type Kind,
  list,
  rpcUrl,
  text,
  toggle,
  url,
  type UrlOptions,
} from "./kinds.ts";
