/**
 * `deno task devnet`: starts the reference network on this machine and keeps it running
 * until Ctrl-C or SIGTERM. See `docs/devnet.md`.
 *
 * @module
 */

import {
  choice,
  defineSettings,
  host,
  integer,
  type Kind,
  SettingError,
  text,
  url,
} from "../settings/mod.ts";
import { ensureAnvil } from "../tools/setup.ts";
import { type Devnet, DEVNET_PORTS, type DevnetOptions, startDevnet } from "./network.ts";

/**
 * A host name or an IP address without a port: the shared kind, refusing what no host is (a
 * name of dots, colons that are no IPv6 address), shown in `--help` as `placeholder`.
 */
function strictHost(placeholder: string): Kind<string> {
  const kind = host();
  return {
    ...kind,
    placeholder,
    schema: kind.schema.refine(isHost, { message: "not a host name or an IP address" }),
  };
}

const HOSTNAME =
  /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A host name, an IPv4 address, or an IPv6 address (bare), without a port. */
function isHost(value: string): boolean {
  if (HOSTNAME.test(value)) return true;
  if (!/^[0-9A-Fa-f:.]+$/.test(value) || !value.includes(":")) return false;
  try {
    return new URL(`http://[${value}]/`).hostname !== "";
  } catch {
    return false;
  }
}

/** The settings of `deno task devnet`: flags, defaults, checks and `--help`. */
export const DEVNET_SETTINGS = defineSettings({
  usage: "Usage: deno task devnet [options]",
  summary: [
    "Starts the reference network on loopback: an anvil chain with the contracts deployed and",
    "registered state, providers of both tiers, routers and gateways. Writes its network",
    "profile to <state-dir>/network.json (for --network) and every NET_* variable to",
    "<state-dir>/devnet.env. Ctrl-C stops it.",
  ].join("\n"),
}, {
  ports: {
    flag: "ports",
    kind: choice(["fixed", "ephemeral"]),
    default: "fixed",
    help: `fixed: anvil ${DEVNET_PORTS.anvil}, routers ${DEVNET_PORTS.routers}…, gateways ` +
      `${DEVNET_PORTS.gateways}… (the daemon's bootstrap list), providers ` +
      `${DEVNET_PORTS.providers}…; ephemeral: free ports.`,
  },
  stateDir: {
    flag: "state-dir",
    kind: text("<dir>"),
    default: ".devnet",
    help: "Where network.json and devnet.env are written.",
  },
  hostname: {
    flag: "host",
    kind: strictHost("<address>"),
    default: "127.0.0.1",
    help: "Listen address of every server and of anvil; 0.0.0.0 serves other hosts, e.g. " +
      "other containers.",
  },
  publicHost: {
    flag: "public-host",
    kind: strictHost("<name>"),
    defaultText: "the --host address, or 127.0.0.1 for 0.0.0.0",
    help: "Host name in every URL the devnet advertises (provider endpoints, router URLs on " +
      "chain, gateways, NET_EVM_RPC_URL), e.g. devnet in compose.",
  },
  rpcUrl: {
    flag: "rpc-url",
    kind: url(),
    help: "Deploy onto this existing dev chain instead of starting anvil (its accounts must " +
      "come from anvil's test mnemonic and hold at least 200000 ether, e.g. anvil --balance " +
      "1000000); it keeps running when the devnet stops.",
  },
  upstream: {
    flag: "upstream",
    kind: url({ example: "http://127.0.0.1:11434" }),
    help: "Forward inference to this OpenAI-compatible server (e.g. a local Ollama at " +
      "http://127.0.0.1:11434) instead of the built-in devnet/echo model.",
  },
  upstreamApiKey: {
    env: "NET_UPSTREAM_API_KEY",
    kind: text("<key>"),
    help: "The API key sent to --upstream.",
  },
  verifiedProviders: {
    flag: "verified",
    kind: integer({ min: 0, max: 64 }),
    default: "2",
    help: "Live providers in the verified tier.",
  },
  teeProviders: {
    flag: "tee",
    kind: integer({ min: 0, max: 64 }),
    default: "1",
    help: "Live providers in the TEE tier, answering mock attestations.",
  },
  gateways: {
    flag: "gateways",
    kind: integer({ min: 1, max: 64 }),
    default: "2",
    help: "Gateways.",
  },
  tokenDelayMs: {
    flag: "token-delay-ms",
    kind: integer({ unit: "ms" }),
    default: "15",
    help: "Pause between tokens of devnet/echo.",
  },
  epochSeconds: {
    flag: "epoch-seconds",
    kind: integer({ min: 5, unit: "seconds" }),
    default: "60",
    help: "Emission epoch length.",
  },
  payments: {
    flag: "payments",
    kind: choice(["vouchers", "settler"]),
    default: "vouchers",
    help: "vouchers: every sealed request must carry a voucher its consumer signed, and " +
      "providers redeem them at the Escrow (fund a consumer with devnet/deposit.ts); settler: " +
      "requests are free and a trusted settler charges the devnet's consumer account.",
  },
});

/**
 * Parses the command line and environment into devnet options, or returns the help text.
 *
 * @throws {SettingError} naming the flag or variable, the value and what was expected.
 */
export function parseDevnetArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): DevnetOptions | { help: string } {
  const parsed = DEVNET_SETTINGS.parse(args, env);
  if (parsed.help) return { help: parsed.text };
  return parsed.values;
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
  if (devnet.profilePath) {
    lines.push(
      "",
      `Network profile: ${devnet.profilePath}`,
      `  deno task daemon --network ${devnet.profilePath}`,
      `  deno task indexer --network ${devnet.profilePath}`,
    );
  }
  if (stateDir) {
    lines.push(`Environment for the indexer and the daemon: ${stateDir}/devnet.env`);
  }
  return lines.join("\n");
}

/** Runs `deno task devnet` until SIGINT or SIGTERM; exits 2 on bad settings, 1 on a failed start. */
async function main(args: readonly string[], env: Record<string, string>): Promise<void> {
  let options: DevnetOptions;
  try {
    const parsed = parseDevnetArgs(args, env);
    if ("help" in parsed) {
      console.log(parsed.help);
      Deno.exit(0);
    }
    options = parsed;
  } catch (error) {
    if (!(error instanceof SettingError)) throw error;
    console.error(`devnet: ${error.message}`);
    Deno.exit(2);
  }
  const log = (line: string) => console.log(`devnet: ${line}`);
  // The signals are handled from the start: the chain runs in its own process group, so a
  // Ctrl-C during the start must stop it too (the unload handler kills it on exit).
  let devnet: Devnet | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log("devnet: stopping…");
    await devnet?.stop();
    console.log("devnet: stopped");
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  if (Deno.build.os !== "windows") {
    Deno.addSignalListener("SIGTERM", stop);
    // A closed terminal: the chain is in its own process group and would outlive it.
    Deno.addSignalListener("SIGHUP", stop);
  }
  try {
    // An existing chain needs no anvil here (nor an install of one).
    if (!options.rpcUrl) await ensureAnvil(log);
    devnet = await startDevnet({ ...options, detachChain: true, log });
  } catch (error) {
    console.error(`devnet: cannot start: ${(error as Error).message}`);
    Deno.exit(1);
  }
  console.log(describeDevnet(devnet, options.stateDir));
  console.log("\ndevnet: ready (Ctrl-C to stop)");
}

if (import.meta.main) await main(Deno.args, Deno.env.toObject());
