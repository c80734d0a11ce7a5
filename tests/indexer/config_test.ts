import assert from "node:assert/strict";
import { INDEXER_HELP, type IndexerConfig, parseIndexerConfig } from "../../indexer/config.ts";
import { IndexerConfigError } from "../../indexer/errors.ts";

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
      assert.ok(error instanceof IndexerConfigError, String(error));
      assert.equal(error.name, "IndexerConfigError");
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
    contracts: {
      escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
      staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
      emission: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
      registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    },
    multicall: null,
  });
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
  ]);
  const env = config([], {
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
      error instanceof IndexerConfigError &&
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
    [[], { NET_EVM_RPC_URL: "ws://127.0.0.1:8545" }, "NET_EVM_RPC_URL", ["http: or https:"]],
    [[], { NET_EVM_RPC_URL: "localhost:8545" }, "NET_EVM_RPC_URL", ['"localhost:8545"']],
    [["--bind", "8088"], {}, "--bind", ['"8088"', "host:port"]],
    [["--bind", "127.0.0.1:70000"], {}, "--bind", ["above 65535"]],
    [[], { NET_STATS_BIND: "[127.0.0.1]:80" }, "NET_STATS_BIND", ["IPv6"]],
    [["--refresh-secs", "0"], {}, "--refresh-secs", ['"0"', "from 1 to 86400"]],
    [["--refresh-secs", "1.5"], {}, "--refresh-secs", ['"1.5"', "whole number"]],
    [[], { NET_STATS_REFRESH_SECS: "thirty" }, "NET_STATS_REFRESH_SECS", ['"thirty"']],
    [["--refresh-secs", "30", "--stale-after-secs", "20"], {}, "--stale-after-secs", [
      "shorter than the refresh interval",
      "at least 30",
    ]],
    [["--router-timeout-ms", "5"], {}, "--router-timeout-ms", ["from 100 to 600000"]],
    [["--scan-from-block=-1"], {}, "--scan-from-block", ['"-1"', "block number"]],
    [["--scan-from-block", "0x10"], {}, "--scan-from-block", ['"0x10"']],
    [["--confirmations", "10001"], {}, "--confirmations", ["from 0 to 10000"]],
  ];
  for (const [args, env, setting, fragments] of table) refuses(args, env, setting, fragments);
});

Deno.test("config: unknown flags and stray arguments are refused", () => {
  refuses(["--port", "80"], {}, "arguments", ["--port"]);
  refuses(["serve"], {}, "arguments", ["serve"]);
  refuses(["--refresh-secs"], {}, "arguments", ["--refresh-secs"]);
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
});
