/**
 * Declared settings: flag over variable over default, empty variables unset, required ones
 * refused when missing, every refusal naming the setting, and `--help` listing every flag and
 * variable.
 */

import assert from "node:assert/strict";
import {
  bindAddress,
  defineSettings,
  integer,
  list,
  SettingError,
  toggle,
  url,
} from "../../settings/mod.ts";

const settings = defineSettings({ usage: "Usage: test [options]", summary: "A test program." }, {
  bind: {
    flag: "bind",
    env: "T_BIND",
    kind: bindAddress(),
    default: "127.0.0.1:8088",
    help: "Listen address.",
  },
  rpcUrl: { env: "T_RPC_URL", kind: url(), required: true, help: "The chain." },
  refreshSecs: {
    flag: "refresh-secs",
    env: "T_REFRESH",
    kind: integer({ min: 1 }),
    help: "Interval.",
  },
  verbose: {
    flag: "verbose",
    env: "T_VERBOSE",
    kind: toggle(),
    default: "false",
    help: "Talk more.",
  },
});
const env = { T_RPC_URL: "http://127.0.0.1:8545" };

function values(args: string[], extra: Record<string, string> = {}) {
  const parsed = settings.parse(args, { ...env, ...extra });
  assert.equal(parsed.help, false);
  if (parsed.help) throw new Error("help");
  return parsed;
}

Deno.test("a flag wins over its variable, which wins over the default", () => {
  assert.equal(values([]).values.bind.port, 8088);
  assert.equal(values([], { T_BIND: "127.0.0.1:1" }).values.bind.port, 1);
  const both = values(["--bind", "127.0.0.1:2"], { T_BIND: "127.0.0.1:1" });
  assert.equal(both.values.bind.port, 2);
  assert.deepEqual(both.sources.bind, { from: "flag", name: "--bind" });
  assert.equal(values([], { T_BIND: "" }).values.bind.port, 8088, "an empty variable is unset");
  assert.equal(values([], { T_BIND: "  " }).values.bind.port, 8088, "a blank variable is unset");
  assert.equal(values([]).values.refreshSecs, undefined);
  assert.equal(values([]).values.verbose, false);
  assert.equal(values(["--verbose"]).values.verbose, true);
  assert.equal(values([], { T_VERBOSE: "yes" }).values.verbose, true);
});

Deno.test("every refusal names the setting, the value and what was expected", () => {
  const cases: [string[], Record<string, string>, string, RegExp][] = [
    [
      ["--bind", "nope"],
      {},
      "--bind",
      /Cannot use --bind "nope": not of the form host:port; expected host:port/,
    ],
    [[], { T_BIND: "x:99999" }, "T_BIND", /T_BIND "x:99999": port 99999 is above 65535/],
    [
      [],
      { T_RPC_URL: "ws://127.0.0.1:8545" },
      "T_RPC_URL",
      /scheme ws: is not accepted; expected an http or https URL/,
    ],
    [
      ["--refresh-secs", "0"],
      {},
      "--refresh-secs",
      /out of range; expected a whole number, at least 1/,
    ],
    [["--bind", " "], {}, "--bind", /the value is empty/],
    [["--nope"], {}, "arguments", /Cannot parse the command line/],
    [["extra"], {}, "arguments", /Cannot parse the command line/],
  ];
  for (const [args, extra, setting, message] of cases) {
    assert.throws(() => settings.parse(args, { ...env, ...extra }), (error: unknown) => {
      assert.ok(error instanceof SettingError);
      assert.equal(error.setting, setting);
      assert.match(error.shortMessage, message);
      return true;
    });
  }
  assert.throws(
    () => settings.parse([], {}),
    /T_RPC_URL is required; expected an http or https URL/,
  );
});

Deno.test("--help lists every flag and variable, with defaults", () => {
  const parsed = settings.parse(["--help"], {});
  assert.equal(parsed.help, true);
  const text = parsed.help ? parsed.text : "";
  for (
    const needle of [
      "--bind <host:port>",
      "[T_BIND]",
      "--refresh-secs <n>",
      "[T_REFRESH]",
      "--verbose",
      "T_RPC_URL",
      "Required.",
      "Default: 127.0.0.1:8088",
      "-h, --help",
    ]
  ) {
    assert.ok(text.includes(needle), `--help lacks ${needle}:\n${text}`);
  }
  assert.ok(text.split("\n").every((line) => line.length <= 88), "lines fit 88 columns");
});

Deno.test("allowEmpty: an empty flag value is read by the kind and wins over the variable", () => {
  const lists = defineSettings({ usage: "", summary: "" }, {
    origins: { flag: "origins", env: "T_ORIGINS", kind: list(url()), allowEmpty: true, help: "" },
  });
  const read = (args: string[], env: Record<string, string>) => {
    const parsed = lists.parse(args, env);
    if (parsed.help) throw new Error("help");
    return parsed.values.origins;
  };
  assert.deepEqual(read(["--origins="], { T_ORIGINS: "http://a" }), []);
  assert.deepEqual(read([], { T_ORIGINS: "http://a" }), ["http://a"]);
  assert.equal(read([], { T_ORIGINS: "" }), undefined, "an empty variable is still unset");
});

Deno.test("two settings with one flag or variable are refused", () => {
  assert.throws(() =>
    defineSettings({ usage: "", summary: "" }, {
      a: { flag: "x", kind: url(), help: "" },
      b: { flag: "x", kind: url(), help: "" },
    }), /--x is declared twice/);
});

Deno.test("a repeatable flag joins its values; its variable is a comma list", () => {
  const repeated = defineSettings({ usage: "Usage: test", summary: "Test." }, {
    urls: {
      flag: "rpc-url",
      env: "T_RPC_URLS",
      kind: list(url()),
      repeatable: true,
      help: "Endpoints.",
    },
  });
  const parse = (args: string[], env: Record<string, string> = {}) => {
    const parsed = repeated.parse(args, env);
    if (parsed.help) throw new Error("unexpected help");
    return parsed.values.urls;
  };
  assert.deepEqual(parse(["--rpc-url", "http://a", "--rpc-url", "http://b,http://c"]), [
    "http://a",
    "http://b",
    "http://c",
  ]);
  assert.deepEqual(parse([], { T_RPC_URLS: "http://a, http://b" }), ["http://a", "http://b"]);
  assert.deepEqual(parse(["--rpc-url", "http://x"], { T_RPC_URLS: "http://a" }), ["http://x"]);
  assert.throws(
    () => parse(["--rpc-url", "http://a", "--rpc-url", "ftp://b"]),
    (e: unknown) =>
      e instanceof SettingError && e.setting === "--rpc-url" && /ftp:\/\/b/.test(e.message),
  );
});
