import assert from "node:assert/strict";
import { DAEMON_HELP, defaultDataDir, parseDaemonConfig } from "../../../daemon/service/config.ts";
import type { DaemonConfig } from "../../../daemon/service/config.ts";
import { DEFAULT_ALLOWED_ORIGINS } from "../../../daemon/service/hygiene.ts";
import { SettingError } from "../../../settings/mod.ts";

const HOME = { HOME: "/home/ada" };

function config(
  args: string[],
  env: Record<string, string> = HOME,
  os: typeof Deno.build.os = "linux",
): DaemonConfig {
  const parsed = parseDaemonConfig(args, env, { os });
  assert.equal(parsed.help, false);
  if (parsed.help) throw new Error("unreachable");
  return parsed.config;
}

function refuses(
  args: string[],
  env: Record<string, string>,
  setting: string,
  fragment: string,
): void {
  assert.throws(
    () => parseDaemonConfig(args, { ...HOME, ...env }, { os: "linux" }),
    (error: unknown) => {
      assert.ok(error instanceof SettingError, String(error));
      assert.equal(error.name, "SettingError");
      assert.equal(error.setting, setting, error.message);
      assert.ok(error.shortMessage.includes(fragment), `${error.shortMessage} ∌ ${fragment}`);
      assert.ok(error.message.includes("--help"), "the message points at --help");
      return true;
    },
    JSON.stringify([args, env]),
  );
}

/** What the built-in devnet profile gives, with no variable set. */
const DEVNET = {
  network: { name: "devnet", source: "built-in" },
  bootstrap: ["http://127.0.0.1:8701", "http://127.0.0.1:8702"],
  evm: {
    rpcUrls: ["http://127.0.0.1:8545"],
    chainId: 31337,
    registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
    escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
  },
  insecureGatewayKeys: false,
  chainGraceSecs: 600,
  consumerKeyFile: null,
  maxSpend: null,
};

const NO_KEY = { required: false, apiKey: null, apiKeyFile: null, apiKeysFile: null };

Deno.test("config: defaults (the devnet profile: trust anchored on its chain, no key on loopback)", () => {
  assert.deepEqual(config([]), {
    bind: { hostname: "127.0.0.1", port: 11435 },
    gateway: null,
    dataDir: "/home/ada/.local/share/net-consumer",
    ...DEVNET,
    auth: NO_KEY,
    measurementsFile: null,
    allowedOrigins: [...DEFAULT_ALLOWED_ORIGINS], // what Ollama allows out of the box
    allowedHosts: [],
    maxBodyBytes: 4 * 1024 * 1024,
    maxQueue: 512,
    queueTimeoutSecs: 120,
    logFormat: "human",
  });
});

Deno.test("config: every flag", () => {
  assert.deepEqual(
    config([
      "--bind",
      "[::1]:0",
      "--gateway",
      "https://gw.example:8443/base/",
      "--data-dir=/var/lib/net",
      "--measurements",
      "approved.json",
      "--allowed-origins",
      "http://localhost:*, app://*",
      "--allowed-hosts",
      "Host.Docker.Internal,[fd00::1]",
      "--max-body-bytes",
      "1048576",
      "--network",
      "devnet",
      "--chain-grace-secs",
      "60",
      "--api-key-file",
      "/etc/net/key",
      "--require-api-key",
      "--max-queue",
      "16",
      "--queue-timeout-secs=30",
      "--log-format",
      "json",
      "--consumer-key-file",
      "/etc/net/consumer-key",
      "--max-spend",
      "0.05/day",
      "--api-keys-file",
      "/etc/net/keys.json",
    ]),
    {
      bind: { hostname: "::1", port: 0 },
      gateway: "https://gw.example:8443/base",
      dataDir: "/var/lib/net",
      ...DEVNET,
      chainGraceSecs: 60,
      auth: {
        required: true,
        apiKey: null,
        apiKeyFile: "/etc/net/key",
        apiKeysFile: "/etc/net/keys.json",
      },
      consumerKeyFile: "/etc/net/consumer-key",
      maxSpend: { amount: 50_000_000_000_000_000n, period: "day" },
      measurementsFile: "approved.json",
      allowedOrigins: ["http://localhost:*", "app://*"],
      allowedHosts: ["host.docker.internal", "[fd00::1]"],
      maxBodyBytes: 1048576,
      maxQueue: 16,
      queueTimeoutSecs: 30,
      logFormat: "json",
    },
  );
});

Deno.test("config: every environment variable", () => {
  assert.deepEqual(
    config([], {
      ...HOME,
      NET_DAEMON_BIND: "localhost:8080",
      NET_GATEWAY: "http://127.0.0.1:9201",
      NET_DATA_DIR: "/srv/net",
      NET_EVM_RPC_URL: "http://127.0.0.1:8545",
      NET_EVM_REGISTRY: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
      NET_EVM_STAKING: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
      NET_MEASUREMENTS: "/etc/net/measurements.json",
      NET_ALLOWED_ORIGINS: "*",
      NET_ALLOWED_HOSTS: "mybox.local",
      NET_DAEMON_MAX_BODY_BYTES: "2048",
      NET_NETWORK: "devnet",
      NET_CHAIN_GRACE_SECS: "0",
      NET_DAEMON_API_KEY: "net_0123456789abcdef",
      NET_DAEMON_REQUIRE_API_KEY: "yes",
      NET_DAEMON_MAX_QUEUE: "0",
      NET_DAEMON_QUEUE_TIMEOUT_SECS: "5",
      NET_DAEMON_LOG_FORMAT: "json",
      NET_EVM_ESCROW: "0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
      NET_CONSUMER_KEY_FILE: "/srv/net/key",
      NET_DAEMON_MAX_SPEND: "2/month",
      NET_DAEMON_API_KEYS_FILE: "/srv/net/keys.json",
    }),
    {
      bind: { hostname: "localhost", port: 8080 },
      gateway: "http://127.0.0.1:9201",
      dataDir: "/srv/net",
      ...DEVNET,
      evm: {
        // NET_EVM_RPC_URL replaces the profile's endpoints: its chain id is not enforced.
        rpcUrls: ["http://127.0.0.1:8545"],
        chainId: null,
        registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
        staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
        escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
      },
      chainGraceSecs: 0,
      auth: {
        required: true,
        apiKey: "net_0123456789abcdef",
        apiKeyFile: null,
        apiKeysFile: "/srv/net/keys.json",
      },
      consumerKeyFile: "/srv/net/key",
      maxSpend: { amount: 2n * 10n ** 18n, period: "month" },
      measurementsFile: "/etc/net/measurements.json",
      allowedOrigins: ["*"],
      allowedHosts: ["mybox.local"],
      maxBodyBytes: 2048,
      maxQueue: 0,
      queueTimeoutSecs: 5,
      logFormat: "json",
    },
  );
});

Deno.test("config: a flag wins over its environment variable; empty variables are unset", () => {
  const env = {
    ...HOME,
    NET_DAEMON_BIND: "127.0.0.1:1111",
    NET_GATEWAY: "http://env.example",
    NET_DATA_DIR: "/env",
    NET_MEASUREMENTS: "env.json",
    NET_ALLOWED_ORIGINS: "http://env.example",
    NET_ALLOWED_HOSTS: "env.local",
    NET_DAEMON_MAX_BODY_BYTES: "4096",
  };
  const parsed = config([
    "--bind=127.0.0.1:2222",
    "--gateway=http://flag.example",
    "--data-dir=/flag",
    "--measurements=flag.json",
    "--allowed-origins=http://flag.example",
    "--allowed-hosts=flag.local",
    "--max-body-bytes=8192",
  ], env);
  assert.equal(parsed.bind.port, 2222);
  assert.equal(parsed.gateway, "http://flag.example");
  assert.equal(parsed.dataDir, "/flag");
  assert.equal(parsed.measurementsFile, "flag.json");
  assert.deepEqual(parsed.allowedOrigins, ["http://flag.example"]);
  assert.deepEqual(parsed.allowedHosts, ["flag.local"]);
  assert.equal(parsed.maxBodyBytes, 8192);
  const empty = config([], { ...HOME, NET_DAEMON_BIND: "", NET_GATEWAY: "", NET_DATA_DIR: "" });
  assert.equal(empty.bind.port, 11435);
  assert.equal(empty.gateway, null);
  assert.equal(empty.dataDir, "/home/ada/.local/share/net-consumer");
  assert.deepEqual(config(["--allowed-origins="]).allowedOrigins, [], "an empty list allows none");
});

Deno.test("config: a specific non-loopback bind address is an allowed Host", () => {
  assert.deepEqual(config(["--bind", "192.168.1.5:11435"]).allowedHosts, ["192.168.1.5"]);
  assert.deepEqual(config(["--bind", "[fd00::5]:11435"]).allowedHosts, ["[fd00::5]"]);
  assert.deepEqual(
    config(["--bind", "192.168.1.5:1", "--allowed-hosts", "192.168.1.5,x"]).allowedHosts,
    ["192.168.1.5", "x"],
  );
  for (const bind of ["0.0.0.0:1", "[::]:1", "127.0.0.1:1", "localhost:1", "[::1]:1"]) {
    assert.deepEqual(config(["--bind", bind]).allowedHosts, [], bind);
  }
});

Deno.test("config: --help and -h return the help text, which names every option", () => {
  for (const flag of ["--help", "-h"]) {
    const parsed = parseDaemonConfig([flag, "--bind", "nonsense"], {}, { os: "linux" });
    assert.equal(parsed.help, true);
    if (parsed.help) assert.equal(parsed.text, DAEMON_HELP);
  }
  for (
    const name of [
      "--bind",
      "NET_DAEMON_BIND",
      "127.0.0.1:11435",
      "--gateway",
      "NET_GATEWAY",
      "--data-dir",
      "NET_DATA_DIR",
      "--measurements",
      "NET_MEASUREMENTS",
      "--allowed-origins",
      "NET_ALLOWED_ORIGINS",
      "--allowed-hosts",
      "NET_ALLOWED_HOSTS",
      "--max-body-bytes",
      "NET_DAEMON_MAX_BODY_BYTES",
      "NET_EVM_RPC_URL",
      "NET_EVM_REGISTRY",
      "NET_EVM_STAKING",
      "OPENAI_BASE_URL=http://127.0.0.1:11435/v1",
      "OLLAMA_HOST=127.0.0.1:11435",
    ]
  ) {
    assert.ok(DAEMON_HELP.includes(name), name);
  }
});

const CHAIN = {
  NET_EVM_RPC_URL: "http://127.0.0.1:8545",
  NET_EVM_REGISTRY: "0x" + "1".repeat(40),
  NET_EVM_STAKING: "0x" + "2".repeat(40),
};

Deno.test("config: bad values are refused with the value shown", () => {
  const cases: [string[], Record<string, string>, string, string][] = [
    [["--bind", "11435"], {}, "--bind", '"11435": not of the form host:port'],
    [["--bind", "127.0.0.1:99999"], {}, "--bind", "port 99999 is above 65535"],
    [["--bind", "[127.0.0.1]:80"], {}, "--bind", "brackets are for IPv6"],
    [["--bind", ":80"], {}, "--bind", "not of the form host:port"],
    [["--bind=-x:80"], {}, "--bind", "malformed"],
    [["--bind="], {}, "--bind", "the value is empty"],
    [[], { NET_DAEMON_BIND: "127.0.0.1" }, "NET_DAEMON_BIND", '"127.0.0.1"'],
    [["--gateway", "ftp://gw.example"], {}, "--gateway", "scheme ftp:"],
    [["--gateway", "http://user:pw@gw.example"], {}, "--gateway", "credentials"],
    [["--gateway", "http://gw.example/?a=1"], {}, "--gateway", "a query"],
    [["--gateway", "http://gw.example/#top"], {}, "--gateway", "a fragment"],
    [[], { NET_GATEWAY: "gw.example" }, "NET_GATEWAY", "not an absolute URL"],
    [["--gateway", `http://x/${"a".repeat(2048)}`], {}, "--gateway", "longer than 2048"],
    [["--network", "mainnet"], {}, "--network", "no built-in network has that name"],
    [[], { NET_NETWORK: "/nowhere/net.json" }, "NET_NETWORK", "no such file"],
    [
      ["--insecure-gateway-keys"],
      { NET_EVM_REGISTRY: "0x" + "1".repeat(40) },
      "NET_EVM_REGISTRY",
      "Cannot use --insecure-gateway-keys with NET_EVM_REGISTRY: it runs without any chain",
    ],
    [["--chain-grace-secs=-1"], {}, "--chain-grace-secs", '"-1"'],
    [[], { NET_DAEMON_API_KEY: "short" }, "NET_DAEMON_API_KEY", "it is 5 characters"],
    [[], { NET_DAEMON_API_KEY: "a key with spaces!" }, "NET_DAEMON_API_KEY", "printable ASCII"],
    [
      [],
      { ...CHAIN, NET_EVM_REGISTRY: "0x1234" },
      "NET_EVM_REGISTRY",
      '"0x1234": not an address; expected a 20-byte address',
    ],
    [[], { ...CHAIN, NET_EVM_STAKING: "0xzz" }, "NET_EVM_STAKING", '"0xzz"'],
    [[], { ...CHAIN, NET_EVM_RPC_URL: "127.0.0.1:8545" }, "NET_EVM_RPC_URL", '"127.0.0.1:8545"'],
    // The chain client speaks http and https only: a ws: URL would fail at every request.
    [[], { ...CHAIN, NET_EVM_RPC_URL: "ws://127.0.0.1:8545" }, "NET_EVM_RPC_URL", "scheme ws:"],
    [[], { ...CHAIN, NET_EVM_RPC_URL: "wss://rpc.example" }, "NET_EVM_RPC_URL", "scheme wss:"],
    [["--allowed-origins", "http://localhost:3000/app"], {}, "--allowed-origins", "without a path"],
    [[], { NET_ALLOWED_ORIGINS: "localhost" }, "NET_ALLOWED_ORIGINS", '"localhost"'],
    [["--allowed-hosts", "host:80"], {}, "--allowed-hosts", '"host:80" is not a hostname'],
    [[], { NET_ALLOWED_HOSTS: "a/b" }, "NET_ALLOWED_HOSTS", '"a/b"'],
    [["--allowed-hosts", "::1"], {}, "--allowed-hosts", "IPv6 in brackets"],
    [["--max-body-bytes", "4MiB"], {}, "--max-body-bytes", '"4MiB"'],
    [["--max-body-bytes", "100"], {}, "--max-body-bytes", "at least 1024"],
    [["--max-queue=-1"], {}, "--max-queue", "a whole number of requests"],
    [[], { NET_DAEMON_MAX_QUEUE: "lots" }, "NET_DAEMON_MAX_QUEUE", '"lots"'],
    [["--queue-timeout-secs", "0"], {}, "--queue-timeout-secs", "1 to 86400"],
    [[], { NET_DAEMON_QUEUE_TIMEOUT_SECS: "2m" }, "NET_DAEMON_QUEUE_TIMEOUT_SECS", '"2m"'],
    [["--port", "1"], {}, "arguments", "--port"],
    [["serve"], {}, "arguments", "serve"],
    [["--bind"], {}, "arguments", "--bind"],
    [["--help=yes"], {}, "arguments", "--help"],
  ];
  for (const [args, env, setting, fragment] of cases) refuses(args, env, setting, fragment);
});

Deno.test("config: the per-user data directory follows each platform's convention", () => {
  assert.equal(
    defaultDataDir({ HOME: "/home/ada", XDG_DATA_HOME: "/data/ada" }, "linux"),
    "/data/ada/net-consumer",
  );
  assert.equal(
    defaultDataDir({ HOME: "/home/ada/", XDG_DATA_HOME: "relative/dir" }, "linux"),
    "/home/ada/.local/share/net-consumer",
    "a relative XDG_DATA_HOME is ignored",
  );
  assert.equal(
    defaultDataDir({ HOME: "/home/ada", XDG_DATA_HOME: "/x" }, "freebsd"),
    "/x/net-consumer",
  );
  assert.equal(
    defaultDataDir({ HOME: "/Users/ada", XDG_DATA_HOME: "/ignored" }, "darwin"),
    "/Users/ada/Library/Application Support/net-consumer",
  );
  assert.equal(
    defaultDataDir({ APPDATA: "C:\\Users\\ada\\AppData\\Roaming" }, "windows"),
    "C:\\Users\\ada\\AppData\\Roaming\\net-consumer",
  );
  const missing: [Record<string, string>, typeof Deno.build.os, string][] = [
    [{}, "linux", "HOME (or XDG_DATA_HOME)"],
    [{ HOME: "relative" }, "linux", "HOME (or XDG_DATA_HOME)"],
    [{}, "darwin", "HOME"],
    [{ HOME: "/home/ada" }, "windows", "APPDATA"],
  ];
  for (const [env, os, name] of missing) {
    assert.throws(
      () => defaultDataDir(env, os),
      (error: unknown) =>
        error instanceof SettingError &&
        error.shortMessage.includes(`${name} is not set to an absolute path`) &&
        error.shortMessage.includes("--data-dir"),
    );
  }
  assert.equal(config(["--data-dir", "D:\\net"], {}, "windows").dataDir, "D:\\net");
});

Deno.test("config: docs/daemon.md shows --help as the daemon prints it", async () => {
  const doc = await Deno.readTextFile(new URL("../../../docs/daemon.md", import.meta.url));
  assert.ok(doc.includes("```\n" + DAEMON_HELP + "```\n"), "regenerate the block from --help");
});

Deno.test("config: a profile file selects the network; single variables override single fields", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/other.json`;
    await Deno.writeTextFile(
      path,
      JSON.stringify({
        version: 1,
        network: "other",
        chain_id: 7,
        rpc_urls: ["https://rpc-a.example", "https://rpc-b.example/key"],
        contracts: {
          registry: "0x" + "a".repeat(40),
          staking: "0x" + "b".repeat(40),
          emission: "0x" + "c".repeat(40),
          escrow: "0x" + "d".repeat(40),
        },
        deployed_at_block: 100,
        gateways: ["https://gw.example/"],
      }),
    );
    const parsed = config(["--network", path]);
    assert.deepEqual(parsed.network, { name: "other", source: path });
    assert.deepEqual(parsed.bootstrap, ["https://gw.example"]);
    assert.deepEqual(parsed.evm, {
      rpcUrls: ["https://rpc-a.example", "https://rpc-b.example/key"],
      chainId: 7,
      registry: "0x" + "a".repeat(40),
      staking: "0x" + "b".repeat(40),
      escrow: "0x" + "d".repeat(40),
    });
    const staking = "0x" + "e".repeat(40);
    const overridden = config([], { ...HOME, NET_NETWORK: path, NET_EVM_STAKING: staking });
    assert.deepEqual(overridden.evm, { ...parsed.evm, staking }, "only the Staking field changed");
    // A profile whose gateway can never be one is refused, naming the setting.
    await Deno.writeTextFile(
      `${dir}/bad.json`,
      (await Deno.readTextFile(path)).replace("https://gw.example/", "http://169.254.169.254"),
    );
    refuses(["--network", `${dir}/bad.json`], {}, "--network", "link-local");
    await Deno.writeTextFile(`${dir}/broken.json`, '{"version":1,"network":"x","extra":1}');
    refuses([], { NET_NETWORK: `${dir}/broken.json` }, "NET_NETWORK", 'unknown field "extra"');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("config: running without a chain is explicit, and keeps the profile's gateways", () => {
  const insecure = config(["--insecure-gateway-keys"]);
  assert.equal(insecure.evm, null);
  assert.equal(insecure.network, null);
  assert.equal(insecure.insecureGatewayKeys, true);
  assert.deepEqual(insecure.bootstrap, DEVNET.bootstrap);
  assert.equal(config([], { ...HOME, NET_INSECURE_GATEWAY_KEYS: "1" }).evm, null);
  assert.notEqual(config([], { ...HOME, NET_INSECURE_GATEWAY_KEYS: "0" }).evm, null);
});

Deno.test("config: the API key is required beyond loopback, optional on it", () => {
  for (const bind of ["0.0.0.0:11435", "[::]:11435", "192.0.2.2:11435", "[fd00::2]:11435"]) {
    assert.equal(config(["--bind", bind]).auth.required, true, bind);
  }
  for (const bind of ["127.0.0.1:11435", "127.0.0.2:1", "localhost:11435", "[::1]:11435"]) {
    assert.deepEqual(config(["--bind", bind]).auth, NO_KEY, bind);
    assert.equal(config(["--bind", bind, "--require-api-key"]).auth.required, true, bind);
  }
  for (
    const name of [
      "--network",
      "NET_NETWORK",
      "--insecure-gateway-keys",
      "--chain-grace-secs",
      "--api-key-file",
      "NET_DAEMON_API_KEY",
      "--require-api-key",
    ]
  ) {
    assert.ok(DAEMON_HELP.includes(name), name);
  }
});
