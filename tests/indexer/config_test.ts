/**
 * The indexer's settings: defaults, every flag and variable, precedence, the cross-field rules,
 * a table of good and bad values per kind (each through its flag and its variable), and a
 * `--help` generated from the declarations that lists every flag and variable.
 */

import assert from "node:assert/strict";
import { INDEXER_HELP, type IndexerConfig, parseIndexerConfig } from "../../indexer/config.ts";
import { SettingError } from "../../settings/mod.ts";

const CONTRACTS = {
  NET_EVM_ESCROW: "0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
  NET_EVM_STAKING: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
  NET_EVM_EMISSION: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
  NET_EVM_REGISTRY: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
};

function config(args: string[], env: Record<string, string> = {}): IndexerConfig {
  const parsed = parseIndexerConfig(args, { ...CONTRACTS, ...env });
  if (parsed.help) throw new Error("expected a config, got the help text");
  return parsed.config;
}

function refuses(
  args: string[],
  env: Record<string, string | undefined>,
  setting: string,
  fragments: string[],
): void {
  assert.throws(
    () => parseIndexerConfig(args, { ...CONTRACTS, ...env }),
    (error: unknown) => {
      assert.ok(error instanceof SettingError, String(error));
      assert.equal(error.name, "SettingError");
      assert.equal(error.setting, setting, error.message);
      for (const fragment of fragments) {
        assert.ok(error.shortMessage.includes(fragment), `${error.shortMessage} ∌ ${fragment}`);
      }
      assert.ok(error.message.includes("--help"), "the message points at --help");
      return true;
    },
    JSON.stringify([args, env]),
  );
}

Deno.test("config: the seed's defaults", () => {
  assert.deepEqual(config([]), {
    bind: { hostname: "127.0.0.1", port: 8088 },
    refreshSecs: 30,
    staleAfterSecs: 60,
    routerTimeoutMs: 5000,
    scanFromBlock: 0n,
    confirmations: 12,
    rpcUrl: "http://127.0.0.1:8545",
    rpcUrls: ["http://127.0.0.1:8545"],
    rpcMaxRps: null,
    contracts: {
      escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
      staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
      emission: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
      registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    },
    multicall: null,
    chainId: null,
    network: null,
    dataDir: null,
    databaseUrl: null,
    rebuildHistory: false,
    logFormat: "human",
  });
});

Deno.test("config: a network profile gives the chain, the contracts and the first block", () => {
  const devnet = config(["--network", "devnet"], {});
  assert.deepEqual(devnet.network, { name: "devnet", source: "built-in" });
  assert.equal(devnet.rpcUrl, "http://127.0.0.1:8545");
  assert.equal(devnet.chainId, 31337);
  assert.equal(devnet.scanFromBlock, 1n);
  assert.deepEqual(devnet.contracts, {
    escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
    staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
    emission: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
    registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  });
  // Single variables override single fields; a replaced RPC URL drops the chain id check.
  const escrow = `0x${"e".repeat(40)}`;
  const overridden = config(["--scan-from-block", "9"], {
    NET_NETWORK: "devnet",
    NET_EVM_ESCROW: escrow,
    NET_EVM_RPC_URL: "http://127.0.0.1:9545",
  });
  assert.deepEqual(overridden.contracts, { ...devnet.contracts, escrow });
  assert.equal(overridden.rpcUrl, "http://127.0.0.1:9545");
  assert.equal(overridden.chainId, null);
  assert.equal(overridden.scanFromBlock, 9n);
  assert.throws(
    () => parseIndexerConfig(["--network", "nowhere"], {}),
    (error: unknown) =>
      error instanceof SettingError && error.setting === "--network" &&
      /no built-in network has that name/.test(error.message),
  );
});

Deno.test("config: every flag, and every variable", () => {
  const flags = config([
    "--bind",
    "[::1]:0",
    "--refresh-secs",
    "5",
    "--stale-after-secs",
    "7",
    "--router-timeout-ms",
    "250",
    "--scan-from-block",
    "1234",
    "--confirmations",
    "0",
    "--log-format",
    "json",
  ]);
  const env = config([], {
    NET_STATS_LOG_FORMAT: "json",
    NET_STATS_BIND: "0.0.0.0:9000",
    NET_STATS_REFRESH_SECS: "10",
    NET_STATS_STALE_AFTER_SECS: "45",
    NET_STATS_ROUTER_TIMEOUT_MS: "2000",
    NET_STATS_SCAN_FROM_BLOCK: "99",
    NET_STATS_CONFIRMATIONS: "64",
    NET_EVM_RPC_URL: "https://rpc.example.org/v2/key",
    NET_EVM_MULTICALL: "0xcA11bde05977b3631167028862bE2a173976CA11",
  });
  assert.deepEqual(
    [flags.bind, flags.refreshSecs, flags.staleAfterSecs, flags.routerTimeoutMs],
    [{ hostname: "::1", port: 0 }, 5, 7, 250],
  );
  assert.deepEqual([flags.scanFromBlock, flags.confirmations], [1234n, 0]);
  assert.deepEqual(
    [env.bind, env.refreshSecs, env.staleAfterSecs, env.routerTimeoutMs],
    [{ hostname: "0.0.0.0", port: 9000 }, 10, 45, 2000],
  );
  assert.deepEqual([env.scanFromBlock, env.confirmations], [99n, 64]);
  assert.equal(env.rpcUrl, "https://rpc.example.org/v2/key");
  assert.equal(env.multicall, "0xca11bde05977b3631167028862be2a173976ca11");
  assert.deepEqual([flags.logFormat, env.logFormat], ["json", "json"]);
  assert.throws(
    () => config(["--log-format", "yaml"]),
    /Cannot use --log-format "yaml".*expected one of human, json/,
  );
});

Deno.test("config: flags win over the environment; empty variables count as unset", () => {
  const both = config(["--bind", "127.0.0.1:1", "--refresh-secs", "3"], {
    NET_STATS_BIND: "127.0.0.1:2",
    NET_STATS_REFRESH_SECS: "4",
  });
  assert.deepEqual([both.bind.port, both.refreshSecs, both.staleAfterSecs], [1, 3, 6]);
  const empty = config([], {
    NET_STATS_BIND: "",
    NET_STATS_REFRESH_SECS: " ",
    NET_EVM_RPC_URL: "",
  });
  assert.deepEqual([empty.bind.port, empty.refreshSecs, empty.rpcUrl], [
    8088,
    30,
    "http://127.0.0.1:8545",
  ]);
});

Deno.test("config: a missing contract address stops start-up and names every missing one", () => {
  refuses([], { NET_EVM_REGISTRY: undefined }, "NET_EVM_REGISTRY", [
    "NET_EVM_REGISTRY is not set",
    "registry contract address",
  ]);
  refuses([], { NET_EVM_ESCROW: "", NET_EVM_EMISSION: "  " }, "NET_EVM_ESCROW", [
    "NET_EVM_ESCROW, NET_EVM_EMISSION are not set",
  ]);
  assert.throws(
    () => parseIndexerConfig([], {}),
    (error: unknown) =>
      error instanceof SettingError &&
      error.setting === "NET_EVM_ESCROW" &&
      error.shortMessage.includes(
        "NET_EVM_ESCROW, NET_EVM_STAKING, NET_EVM_EMISSION, NET_EVM_REGISTRY are not set",
      ),
  );
});

Deno.test("config: malformed values are refused with the value and what was expected", () => {
  const table: [string[], Record<string, string>, string, string[]][] = [
    [[], { NET_EVM_STAKING: "0x1234" }, "NET_EVM_STAKING", ['"0x1234"', "40 hex digits"]],
    [[], { NET_EVM_ESCROW: "escrow" }, "NET_EVM_ESCROW", ['"escrow"', "contract address"]],
    [[], { NET_EVM_MULTICALL: "0xzz" }, "NET_EVM_MULTICALL", ['"0xzz"']],
    [[], { NET_EVM_RPC_URL: "ws://127.0.0.1:8545" }, "NET_EVM_RPC_URL", [
      "the scheme ws: is not accepted",
      "an http or https URL",
    ]],
    [[], { NET_EVM_RPC_URL: "localhost:8545" }, "NET_EVM_RPC_URL", ['"localhost:8545"']],
    [["--bind", "8088"], {}, "--bind", ['"8088"', "host:port"]],
    [["--bind", "127.0.0.1:70000"], {}, "--bind", ["above 65535"]],
    [[], { NET_STATS_BIND: "[127.0.0.1]:80" }, "NET_STATS_BIND", ["IPv6"]],
    [["--refresh-secs", "0"], {}, "--refresh-secs", ['"0"', "1 to 86400"]],
    [["--refresh-secs", "1.5"], {}, "--refresh-secs", ['"1.5"', "whole number"]],
    [[], { NET_STATS_REFRESH_SECS: "thirty" }, "NET_STATS_REFRESH_SECS", ['"thirty"']],
    [["--refresh-secs", "30", "--stale-after-secs", "20"], {}, "--stale-after-secs", [
      "shorter than the refresh interval",
      "at least 30",
    ]],
    [["--router-timeout-ms", "5"], {}, "--router-timeout-ms", ["100 to 600000"]],
    [["--scan-from-block=-1"], {}, "--scan-from-block", ['"-1"', "block number"]],
    [["--scan-from-block", "0x10"], {}, "--scan-from-block", ['"0x10"']],
    [["--confirmations", "10001"], {}, "--confirmations", ["0 to 10000"]],
  ];
  for (const [args, env, setting, fragments] of table) refuses(args, env, setting, fragments);
});

Deno.test("config: unknown flags and stray arguments are refused", () => {
  refuses(["--port", "80"], {}, "arguments", ["--port"]);
  refuses(["serve"], {}, "arguments", ["serve"]);
  refuses(["--refresh-secs"], {}, "arguments", ["--refresh-secs"]);
});

/** Good and bad values of each kind, with the value each good one becomes. */
const KINDS: {
  kind: string;
  flag?: string;
  env: string;
  read: (config: IndexerConfig) => unknown;
  good: [string, unknown][];
  bad: [string, string][];
}[] = [
  {
    kind: "bind address",
    flag: "--bind",
    env: "NET_STATS_BIND",
    read: (c) => c.bind,
    good: [
      ["127.0.0.1:8088", { hostname: "127.0.0.1", port: 8088 }],
      ["[::1]:0", { hostname: "::1", port: 0 }],
      ["0.0.0.0:65535", { hostname: "0.0.0.0", port: 65535 }],
      ["localhost:80", { hostname: "localhost", port: 80 }],
    ],
    bad: [
      ["8088", "host:port"],
      ["127.0.0.1:65536", "above 65535"],
      ["[127.0.0.1]:80", "IPv6"],
      ["127.0.0.1", "host:port"],
    ],
  },
  {
    kind: "seconds, 1 to 86400",
    flag: "--refresh-secs",
    env: "NET_STATS_REFRESH_SECS",
    read: (c) => c.refreshSecs,
    good: [["1", 1], ["30", 30], ["86400", 86400]],
    bad: [["0", "1 to 86400"], ["86401", "1 to 86400"], ["1.5", "whole number"], ["-1", "whole"]],
  },
  {
    kind: "seconds, at least the refresh interval",
    flag: "--stale-after-secs",
    env: "NET_STATS_STALE_AFTER_SECS",
    read: (c) => c.staleAfterSecs,
    good: [["30", 30], ["172800", 172800]],
    bad: [["29", "shorter than the refresh interval"], ["172801", "1 to 172800"], ["x", "whole"]],
  },
  {
    kind: "milliseconds, 100 to 600000",
    flag: "--router-timeout-ms",
    env: "NET_STATS_ROUTER_TIMEOUT_MS",
    read: (c) => c.routerTimeoutMs,
    good: [["100", 100], ["600000", 600000]],
    bad: [["99", "100 to 600000"], ["600001", "100 to 600000"], ["5s", "whole number"]],
  },
  {
    kind: "block number",
    flag: "--scan-from-block",
    env: "NET_STATS_SCAN_FROM_BLOCK",
    read: (c) => c.scanFromBlock,
    good: [["0", 0n], ["1234567", 1234567n], ["99999999999999999999", 99999999999999999999n]],
    bad: [["-1", "block number"], ["0x10", "block number"], ["1e3", "block number"]],
  },
  {
    kind: "blocks, 0 to 10000",
    flag: "--confirmations",
    env: "NET_STATS_CONFIRMATIONS",
    read: (c) => c.confirmations,
    good: [["0", 0], ["10000", 10000]],
    bad: [["10001", "0 to 10000"], ["twelve", "whole number"]],
  },
  {
    kind: "RPC URL (http or https)",
    env: "NET_EVM_RPC_URL",
    read: (c) => c.rpcUrl,
    good: [
      ["http://127.0.0.1:8545", "http://127.0.0.1:8545"],
      ["https://rpc.example.org/v2/key", "https://rpc.example.org/v2/key"],
      // Basic-auth credentials are kept: the chain client's fetch sends them.
      ["https://user:secret@rpc.example.org/", "https://user:secret@rpc.example.org"],
    ],
    bad: [
      ["ws://127.0.0.1:8545", "the scheme ws: is not accepted"],
      ["wss://rpc.example.org", "the scheme wss: is not accepted"],
      ["localhost:8545", "an http or https URL"],
      ["ws://user:secret@rpc.example.org", "the scheme ws: is not accepted"],
      ["not a url", "not an absolute URL"],
    ],
  },
  {
    kind: "contract address",
    env: "NET_EVM_REGISTRY",
    read: (c) => c.contracts.registry,
    good: [
      ["0x5FbDB2315678afecb367f032d93F642f64180aa3", "0x5fbdb2315678afecb367f032d93f642f64180aa3"],
    ],
    bad: [
      ["0x1234", "40 hex digits"],
      ["registry", "contract address"],
      [`0x${"g".repeat(40)}`, "40 hex digits"],
      [`0x${"a".repeat(41)}`, "40 hex digits"],
    ],
  },
  {
    kind: "optional contract address",
    env: "NET_EVM_MULTICALL",
    read: (c) => c.multicall,
    good: [
      ["0xcA11bde05977b3631167028862bE2a173976CA11", "0xca11bde05977b3631167028862be2a173976ca11"],
      ["", null],
    ],
    bad: [["0xzz", "40 hex digits"]],
  },
  {
    kind: "directory",
    flag: "--data-dir",
    env: "NET_STATS_DATA_DIR",
    read: (c) => c.dataDir,
    good: [["/var/lib/net-stats", "/var/lib/net-stats"], ["data", "data"]],
    bad: [],
  },
  {
    kind: "PostgreSQL URL",
    flag: "--database-url",
    env: "NET_STATS_DATABASE_URL",
    read: (c) => c.databaseUrl,
    good: [
      ["postgres://indexer@127.0.0.1:5432/net", "postgres://indexer@127.0.0.1:5432/net"],
      [
        "postgresql://u:p%40ss@db.example/net?sslmode=require",
        "postgresql://u:p%40ss@db.example/net?sslmode=require",
      ],
    ],
    bad: [
      ["http://db.example/net", "the scheme http: is not accepted"],
      ["mysql://u@db/net", "the scheme mysql: is not accepted"],
      ["db.example:5432", "a postgres: or postgresql: URL"],
    ],
  },
];

Deno.test("config: the history store's settings; a database URL's password is never shown", () => {
  const on = config(["--rebuild-history"], {});
  assert.equal(on.rebuildHistory, true);
  assert.equal(config([], { NET_STATS_REBUILD_HISTORY: "yes" }).rebuildHistory, true);
  assert.equal(config([], { NET_STATS_REBUILD_HISTORY: "0" }).rebuildHistory, false);
  refuses([], { NET_STATS_REBUILD_HISTORY: "maybe" }, "NET_STATS_REBUILD_HISTORY", ["maybe"]);
  // Both stores named: the database wins (the data directory is then unused).
  const both = config(["--data-dir", "/x"], { NET_STATS_DATABASE_URL: "postgres://db/net" });
  assert.deepEqual([both.dataDir, both.databaseUrl], ["/x", "postgres://db/net"]);
  for (
    const [args, env, setting] of [
      [["--database-url", "mysql://indexer:hunter2@db/net"], {}, "--database-url"],
      [[], { NET_STATS_DATABASE_URL: "http://indexer:hunter2@db/net" }, "NET_STATS_DATABASE_URL"],
    ] as const
  ) {
    assert.throws(
      () => parseIndexerConfig([...args], { ...CONTRACTS, ...env }),
      (error: unknown) => {
        assert.ok(error instanceof SettingError);
        assert.equal(error.setting, setting);
        assert.equal(error.message.includes("hunter2"), false, error.message);
        assert.match(error.message, /indexer:\*\*\*@db/);
        return true;
      },
    );
  }
});

Deno.test("config: a table of good and bad values per kind, through flags and variables", () => {
  for (const { kind, flag, env, read, good, bad } of KINDS) {
    for (const [value, expected] of good) {
      assert.deepEqual(read(config([], { [env]: value })), expected, `${kind}: ${env}=${value}`);
      if (flag) {
        assert.deepEqual(read(config([flag, value])), expected, `${kind}: ${flag} ${value}`);
      }
    }
    for (const [value, fragment] of bad) {
      // --stale-after-secs is checked against the default refresh interval (30 s).
      refuses([], { [env]: value }, env, [JSON.stringify(value).slice(0, 20), fragment]);
      if (flag) refuses([`${flag}=${value}`], {}, flag, [fragment]);
    }
  }
});

Deno.test("config: --help wins and documents every option", () => {
  const parsed = parseIndexerConfig(["--help"], {});
  assert.deepEqual(parsed, { help: true, text: INDEXER_HELP });
  assert.deepEqual(parseIndexerConfig(["-h", "--bind", "nonsense"], {}).help, true);
  for (
    const name of [
      "--bind",
      "NET_STATS_BIND",
      "127.0.0.1:8088",
      "--refresh-secs",
      "NET_STATS_REFRESH_SECS",
      "--stale-after-secs",
      "NET_STATS_STALE_AFTER_SECS",
      "--router-timeout-ms",
      "NET_STATS_ROUTER_TIMEOUT_MS",
      "--scan-from-block",
      "NET_STATS_SCAN_FROM_BLOCK",
      "--confirmations",
      "NET_STATS_CONFIRMATIONS",
      "NET_EVM_RPC_URL",
      "http://127.0.0.1:8545",
      "NET_EVM_ESCROW",
      "NET_EVM_STAKING",
      "NET_EVM_EMISSION",
      "NET_EVM_REGISTRY",
      "NET_EVM_MULTICALL",
    ]
  ) {
    assert.ok(INDEXER_HELP.includes(name), `--help mentions ${name}`);
  }
  // Every flag and variable of the table, and the endpoints the program serves.
  for (const { flag, env } of KINDS) {
    if (flag) assert.match(INDEXER_HELP, new RegExp(`^  ${flag} <`, "m"), `--help lists ${flag}`);
    assert.ok(INDEXER_HELP.includes(env), `--help lists ${env}`);
  }
  assert.match(INDEXER_HELP, /^ {2}-h, --help/m);
  // docs/indexer.md lists the settings as --help prints them.
  const docs = Deno.readTextFileSync(new URL("../../docs/indexer.md", import.meta.url));
  assert.ok(
    docs.includes(`\`\`\`\n${INDEXER_HELP.trimEnd()}\n\`\`\``),
    "docs/indexer.md shows --help",
  );
  assert.match(
    INDEXER_HELP,
    /GET \/stats, \/models, \/providers,\n\/providers\/\{address\}, \/epochs, \/health, and \/openapi\.json/,
  );
});

Deno.test("config: several RPC endpoints and a budget per endpoint", () => {
  const a = "https://eth.example/v2/KEY";
  const b = "http://127.0.0.1:8545";
  const fromEnv = config([], { NET_EVM_RPC_URL: `${a}, ${b}`, NET_EVM_RPC_MAX_RPS: "10" });
  assert.deepEqual(fromEnv.rpcUrls, [a, b]);
  assert.equal(fromEnv.rpcUrl, a);
  assert.equal(fromEnv.rpcMaxRps, 10);
  const fromFlags = config(["--rpc-url", b, "--rpc-url", a, "--rpc-max-rps", "3"], {
    NET_EVM_RPC_URL: "http://ignored.example",
  });
  assert.deepEqual(fromFlags.rpcUrls, [b, a]);
  assert.equal(fromFlags.rpcMaxRps, 3);
  // A single URL keeps working as before.
  assert.deepEqual(config([], { NET_EVM_RPC_URL: b }).rpcUrls, [b]);
  // The same endpoint twice, a bad one, a budget of 0: refused, naming the setting (never a key).
  assert.throws(
    () => config([], { NET_EVM_RPC_URL: `${a},${a}` }),
    (e: unknown) =>
      e instanceof SettingError && e.setting === "NET_EVM_RPC_URL" &&
      e.message.includes("https://eth.example/… is listed twice") && !e.message.includes("KEY"),
  );
  assert.throws(
    () => config(["--rpc-url", "ws://127.0.0.1:8546"]),
    (e: unknown) => e instanceof SettingError && e.setting === "--rpc-url",
  );
  assert.throws(
    () => config(["--rpc-max-rps", "0"]),
    (e: unknown) => e instanceof SettingError && e.setting === "--rpc-max-rps",
  );
});
