import assert from "node:assert/strict";
import { defaultDataDir } from "../../../indexer/store/mod.ts";

Deno.test("defaultDataDir follows each platform's per-user convention", () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  const cases: [typeof Deno.build.os, Record<string, string>, string][] = [
    ["linux", { HOME: "/home/ada" }, "/home/ada/.local/share/net/indexer"],
    ["linux", { HOME: "/home/ada", XDG_DATA_HOME: "/data" }, "/data/net/indexer"],
    ["linux", { HOME: "/home/ada", XDG_DATA_HOME: "" }, "/home/ada/.local/share/net/indexer"],
    ["freebsd", { HOME: "/home/ada" }, "/home/ada/.local/share/net/indexer"],
    ["darwin", { HOME: "/Users/ada" }, "/Users/ada/Library/Application Support/net/indexer"],
    ["linux", {}, ".net-indexer"],
  ];
  for (const [os, vars, expected] of cases) {
    assert.equal(defaultDataDir({ os, env: env(vars) }), expected, `${os} ${JSON.stringify(vars)}`);
  }
  const windows = defaultDataDir({
    os: "windows",
    env: env({ LOCALAPPDATA: "C:/Users/ada/AppData/Local" }),
  });
  assert.match(windows, /^C:\/Users\/ada\/AppData\/Local[\\/]net[\\/]indexer$/);
});
