/**
 * `deno task devnet`: starts the reference network on this machine and keeps it running
 * until Ctrl-C or SIGTERM. See `docs/devnet.md`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ensureAnvil } from "../tools/setup.ts";
import { type Devnet, DEVNET_PORTS, type DevnetOptions, startDevnet } from "./network.ts";

/** The `--help` text. */
export const DEVNET_HELP = `Usage: deno task devnet [options]

Starts the reference network on loopback: an anvil chain with the contracts deployed and
registered state, providers of both tiers, routers and gateways. Writes every NET_*
variable the indexer and the daemon need to <state-dir>/devnet.env. Ctrl-C stops it.

Options:
  --ports fixed|ephemeral   fixed: anvil ${DEVNET_PORTS.anvil}, routers ${DEVNET_PORTS.routers}…,
                            gateways ${DEVNET_PORTS.gateways}… (the daemon's bootstrap list),
                            providers ${DEVNET_PORTS.providers}…; ephemeral: free ports
                            (default: fixed)
  --state-dir <dir>         where devnet.env is written (default: .devnet)
  --host <address>          listen address of every server and of anvil; 0.0.0.0 serves
                            other hosts, e.g. other containers (default: 127.0.0.1)
  --public-host <name>      host name in every URL the devnet advertises (provider
                            endpoints, router URLs on chain, gateways, NET_EVM_RPC_URL),
                            e.g. devnet in compose (default: the --host address, or
                            127.0.0.1 for 0.0.0.0)
  --rpc-url <url>           deploy onto this existing dev chain instead of starting anvil
                            (its accounts must come from anvil's test mnemonic and hold at
                            least 200000 ether, e.g. anvil --balance 1000000); it keeps
                            running when the devnet stops
  --upstream <url>          forward inference to this OpenAI-compatible server (e.g. a local
                            Ollama at http://127.0.0.1:11434) instead of the built-in
                            devnet/echo model; its key comes from NET_UPSTREAM_API_KEY
  --verified <n>            live providers in the verified tier (default: 2)
  --tee <n>                 live providers in the TEE tier, answering mock attestations
                            (default: 1)
  --gateways <n>            gateways (default: 2)
  --token-delay-ms <n>      pause between tokens of devnet/echo (default: 15)
  --epoch-seconds <n>       emission epoch length (default: 60)
  -h, --help                show this text
`;

/** Parses the command line into devnet options, or returns the help text. */
export function parseDevnetArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): DevnetOptions | { help: string } {
  const { values } = parseArgs({
    args: [...args],
    options: {
      ports: { type: "string", default: "fixed" },
      "state-dir": { type: "string", default: ".devnet" },
      upstream: { type: "string" },
      verified: { type: "string" },
      tee: { type: "string" },
      gateways: { type: "string" },
      "token-delay-ms": { type: "string" },
      "epoch-seconds": { type: "string" },
      host: { type: "string" },
      "public-host": { type: "string" },
      "rpc-url": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return { help: DEVNET_HELP };
  if (values.ports !== "fixed" && values.ports !== "ephemeral") {
    throw new Error(`--ports must be fixed or ephemeral, found ${JSON.stringify(values.ports)}`);
  }
  const count = (name: string, value: string | undefined, min: number) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > 64) {
      throw new Error(
        `--${name} must be an integer from ${min} to 64, found ${JSON.stringify(value)}`,
      );
    }
    return n;
  };
  if (values.upstream !== undefined) {
    try {
      const url = new URL(values.upstream);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
    } catch {
      throw new Error(
        `--upstream must be an http(s) URL, found ${JSON.stringify(values.upstream)}`,
      );
    }
  }
  const host = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    if (!isHost(value)) {
      throw new Error(
        `--${name} must be a host name or an IP address without a port, found ${
          JSON.stringify(value)
        }`,
      );
    }
    return value.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  };
  const rpcUrl = values["rpc-url"];
  if (rpcUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(rpcUrl);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw new Error(`--rpc-url must be an http(s) URL, found ${JSON.stringify(rpcUrl)}`);
    }
  }
  const delay = values["token-delay-ms"];
  if (delay !== undefined && !(Number.isInteger(Number(delay)) && Number(delay) >= 0)) {
    throw new Error(
      `--token-delay-ms must be a non-negative integer, found ${JSON.stringify(delay)}`,
    );
  }
  const epoch = values["epoch-seconds"];
  if (epoch !== undefined && !(Number.isInteger(Number(epoch)) && Number(epoch) >= 5)) {
    throw new Error(`--epoch-seconds must be an integer ≥ 5, found ${JSON.stringify(epoch)}`);
  }
  return {
    ports: values.ports,
    stateDir: values["state-dir"],
    upstream: values.upstream,
    upstreamApiKey: env.NET_UPSTREAM_API_KEY || undefined,
    verifiedProviders: count("verified", values.verified, 0),
    teeProviders: count("tee", values.tee, 0),
    gateways: count("gateways", values.gateways, 1),
    tokenDelayMs: delay === undefined ? undefined : Number(delay),
    epochSeconds: epoch === undefined ? undefined : Number(epoch),
    hostname: host("host", values.host),
    publicHost: host("public-host", values["public-host"]),
    rpcUrl,
  };
}

const HOSTNAME =
  /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A host name, an IPv4 address, or an IPv6 address (bare or in brackets), without a port. */
function isHost(value: string): boolean {
  if (HOSTNAME.test(value)) return true;
  const ipv6 = value.replace(/^\[(.*)\]$/, "$1");
  if (!/^[0-9A-Fa-f:.]+$/.test(ipv6) || !ipv6.includes(":")) return false;
  try {
    return new URL(`http://[${ipv6}]/`).hostname !== "";
  } catch {
    return false;
  }
}

/** The summary printed once the devnet is up. */
export function describeDevnet(devnet: Devnet, stateDir: string | undefined): string {
  const lines = [
    "",
    "The reference network is running:",
    `  chain      ${devnet.rpcUrl} (chain id ${devnet.chainId})`,
    `  registry   ${devnet.contracts.registry}`,
    `  staking    ${devnet.contracts.staking}`,
    `  emission   ${devnet.contracts.emission}`,
    `  escrow     ${devnet.contracts.escrow}`,
    ...devnet.routers.map((url, i) => `  router ${i}   ${url}`),
    ...devnet.gateways.map((url, i) => `  gateway ${i}  ${url}`),
    ...devnet.providers.map((p) =>
      `  provider   ${p.url}  ${p.address} ${p.tier} [${
        p.provider.ad.models.map((m) => m.id).join(", ")
      }]`
    ),
  ];
  if (stateDir) {
    lines.push("", `Environment for the indexer and the daemon: ${stateDir}/devnet.env`);
  }
  return lines.join("\n");
}

if (import.meta.main) {
  let options: DevnetOptions;
  try {
    const parsed = parseDevnetArgs(Deno.args, Deno.env.toObject());
    if ("help" in parsed) {
      console.log(parsed.help);
      Deno.exit(0);
    }
    options = parsed;
  } catch (error) {
    console.error(`devnet: ${(error as Error).message}\nRun with --help for the options.`);
    Deno.exit(2);
  }
  const log = (line: string) => console.log(`devnet: ${line}`);
  let devnet: Devnet;
  try {
    // An existing chain needs no anvil here (nor an install of one).
    if (!options.rpcUrl) await ensureAnvil(log);
    devnet = await startDevnet({ ...options, log });
  } catch (error) {
    console.error(`devnet: cannot start: ${(error as Error).message}`);
    Deno.exit(1);
  }
  console.log(describeDevnet(devnet, options.stateDir));
  console.log("\ndevnet: ready (Ctrl-C to stop)");
  const stop = async () => {
    console.log("devnet: stopping…");
    await devnet.stop();
    console.log("devnet: stopped");
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  if (Deno.build.os !== "windows") Deno.addSignalListener("SIGTERM", stop);
}
