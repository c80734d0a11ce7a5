/**
 * Checks that the addresses a program was given are the network's contracts and belong
 * together, before it reads anything from them: a typo or a swapped pair must stop a program
 * at start, not yield numbers from the wrong contracts.
 *
 * For every address given, at one block:
 *
 * 1. it has code (an account without code answers every call with nothing);
 * 2. it answers the interface of the role it was given for: the view functions the project's
 *    readers call on that contract (Registry: its set counts, `TIER_TEE`, and the network
 *    links; Staking: `totalStaked`, `minProviderBond`, …; Emission: the schedule and totals;
 *    Escrow: `emission`, `isSettler`);
 * 3. the cross-references the contracts hold agree with the other addresses given: the
 *    Registry's `staking()`, `emission()` and `escrow()` (set by `setNetworkContracts`), and
 *    the Escrow's `emission()`.
 *
 * Every address is also tried against the other roles' interfaces, so a refusal can say what
 * the address is instead ("it answers as the Emission contract": two addresses were swapped).
 * All the calls go out as one multicall (viem's deployless mode unless the client knows a
 * Multicall3), plus one `eth_getCode` per address.
 *
 * @example
 * ```ts ignore
 * import { checkNetworkContracts, createChainClient } from "@net/consumer/chain";
 *
 * const client = await createChainClient("http://127.0.0.1:8545");
 * await checkNetworkContracts(client, {
 *   registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 *   staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
 * }, { labels: { registry: "NET_EVM_REGISTRY", staking: "NET_EVM_STAKING" } });
 * ```
 *
 * @module
 */

import type { Abi, Address } from "viem";
import { abbreviate } from "../errors.ts";
import { emissionAbi, escrowAbi, registryAbi, stakingAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { ChainReadError, ContractCheckError, type ContractCheckProblem } from "./errors.ts";
import { checkAddress, lower, pinBlock } from "./_pinned.ts";
import type { BlockSelector, ChainContracts } from "./types.ts";

/** One of the network's four contracts. */
export type ContractRole = keyof ChainContracts;

/** What {@linkcode checkNetworkContracts} checks: the Registry, and any of the others. */
export type ContractsToCheck = Pick<ChainContracts, "registry"> & Partial<ChainContracts>;

/** Options of {@linkcode checkNetworkContracts}. */
export interface CheckNetworkContractsOptions {
  /**
   * How each role is named in messages, e.g. `{ staking: "NET_EVM_STAKING" }`.
   *
   * @default {"the Registry", "the Staking contract", …}
   */
  labels?: Partial<Record<ContractRole, string>>;
  /** The block to check at. @default {"latest"} */
  block?: BlockSelector;
  /**
   * A Multicall3-compatible contract.
   *
   * @default {the client's chain's `multicall3`, else viem's deployless multicall}
   */
  multicallAddress?: Address;
}

const NAMES: Readonly<Record<ContractRole, string>> = {
  registry: "Registry",
  staking: "Staking",
  emission: "Emission",
  escrow: "Escrow",
};

const ZERO = "0x0000000000000000000000000000000000000000";

interface Probe {
  functionName: string;
  args?: readonly unknown[];
}

/** The view functions each role must answer: what the project's readers call on it. */
const INTERFACES: Readonly<Record<ContractRole, { abi: Abi; probes: readonly Probe[] }>> = {
  registry: {
    abi: registryAbi,
    probes: [
      { functionName: "providerCount" },
      { functionName: "validatorCount" },
      { functionName: "routerCount" },
      { functionName: "measurementCount" },
      { functionName: "TIER_TEE" },
      { functionName: "staking" },
      { functionName: "emission" },
      { functionName: "escrow" },
    ],
  },
  staking: {
    abi: stakingAbi,
    probes: [
      { functionName: "totalStaked" },
      { functionName: "minProviderBond" },
      { functionName: "unbondingPeriod" },
      { functionName: "stakeOf", args: [ZERO] },
    ],
  },
  emission: {
    abi: emissionAbi,
    probes: [
      { functionName: "cap" },
      { functionName: "totalEmitted" },
      { functionName: "emittedEpochs" },
      { functionName: "currentEpoch" },
      { functionName: "genesisTime" },
      { functionName: "epochLength" },
      { functionName: "halvingInterval" },
    ],
  },
  escrow: {
    abi: escrowAbi,
    probes: [{ functionName: "emission" }, { functionName: "isSettler", args: [ZERO] }],
  },
};

const ROLES = Object.keys(INTERFACES) as ContractRole[];

/** What one address answered to one role's probes. */
interface RoleAnswer {
  /** Every probe succeeded. */
  ok: boolean;
  /** The first failing probe, in words. */
  failure?: string;
  /** Each probe's result, by function name. */
  results: Record<string, unknown>;
}

function label(role: ContractRole, options: CheckNetworkContractsOptions): string {
  return options.labels?.[role] ?? `the ${NAMES[role]}${role === "registry" ? "" : " contract"}`;
}

function article(word: string): string {
  return `${/^[AEIOU]/.test(word) ? "an" : "a"} ${word}`;
}

function probeText(probe: Probe): string {
  return `${probe.functionName}(${probe.args ? probe.args.map(() => "…").join(", ") : ""})`;
}

/**
 * Checks that the given addresses are the network's contracts and belong together.
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed address.
 * @throws {ChainReadError} when the chain cannot be read (nothing could be checked).
 * @throws {ContractCheckError} naming every address that has no code (`no_code`), answers
 * another interface than its role's (`wrong_interface`), or disagrees with the cross-references
 * (`mismatch`); `problems` lists them all.
 */
export async function checkNetworkContracts(
  client: ChainClient,
  contracts: ContractsToCheck,
  options: CheckNetworkContractsOptions = {},
): Promise<void> {
  const operation = "check the network's contracts";
  const given = ROLES.filter((role) => contracts[role] !== undefined).map((role) => ({
    role,
    address: lower(checkAddress(operation, role, contracts[role])),
  }));
  const multicallAddress = options.multicallAddress ?? client.chain.contracts?.multicall3?.address;
  const block = await pinBlock(client, options.block ?? "latest", operation);
  const answers = await probeAll(client, given.map((g) => g.address), {
    blockNumber: block.number,
    multicallAddress,
    operation,
  });
  const problems: ContractCheckProblem[] = [];
  for (const { role, address } of given) {
    const answer = answers.get(address)!;
    const name = `${label(role, options)} ${address}`;
    if (!answer.hasCode) {
      problems.push({
        role,
        address,
        kind: "no_code",
        message: `${name} has no code: it is an account, not a contract`,
      });
      continue;
    }
    const own = answer.roles[role];
    if (own.ok) continue;
    const others = ROLES.filter((r) => r !== role && answer.roles[r].ok);
    problems.push({
      role,
      address,
      kind: "wrong_interface",
      message: `${name} is not ${article(NAMES[role])} contract: ${own.failure}; ${
        others.length > 0
          ? `it answers as ${others.map((r) => `the ${NAMES[r]}`).join(" and ")} contract`
          : "it answers none of the network's interfaces"
      }`,
    });
  }
  if (problems.length === 0) problems.push(...crossReferences(given, answers, options));
  if (problems.length === 0) return;
  const kind = (["no_code", "wrong_interface", "mismatch"] as const).find((k) =>
    problems.some((p) => p.kind === k)
  )!;
  throw new ContractCheckError(kind, `Cannot use the network's contracts: ${problems[0].message}`, {
    problems,
    details: problems.length > 1 ? problems.slice(1).map((p) => p.message).join("; ") : undefined,
    hints: [
      "Check the contract addresses (or the network profile) against the network's deployment.",
    ],
  });
}

/** The cross-references of the Registry and the Escrow, against the addresses given. */
function crossReferences(
  given: readonly { role: ContractRole; address: Address }[],
  answers: ReadonlyMap<Address, AddressAnswer>,
  options: CheckNetworkContractsOptions,
): ContractCheckProblem[] {
  const of = (role: ContractRole) => given.find((g) => g.role === role);
  const problems: ContractCheckProblem[] = [];
  const registry = of("registry")!;
  const links = answers.get(registry.address)!.roles.registry.results;
  for (const role of ["staking", "emission", "escrow"] as const) {
    const other = of(role);
    if (!other) continue;
    const named = lower(String(links[role]));
    if (named === other.address) continue;
    problems.push(
      named === ZERO
        ? {
          role: "registry",
          address: registry.address,
          kind: "mismatch",
          message:
            `${label("registry", options)} ${registry.address} names no ${
              NAMES[role]
            } contract: ${role}() is the zero address (its owner has not called ` +
            "setNetworkContracts)",
        }
        : {
          role,
          address: other.address,
          kind: "mismatch",
          message: `${label(role, options)} ${other.address} is not the ${
            NAMES[role]
          } contract of ${
            label("registry", options)
          } ${registry.address}, whose ${role}() is ${named}`,
        },
    );
  }
  const escrow = of("escrow");
  const emission = of("emission");
  if (escrow && emission) {
    const named = lower(String(answers.get(escrow.address)!.roles.escrow.results.emission));
    if (named !== emission.address) {
      problems.push({
        role: "emission",
        address: emission.address,
        kind: "mismatch",
        message: `${label("emission", options)} ${emission.address} is not the Emission ` +
          `contract of ${label("escrow", options)} ${escrow.address}, whose emission() is ${named}`,
      });
    }
  }
  return problems;
}

interface AddressAnswer {
  hasCode: boolean;
  roles: Record<ContractRole, RoleAnswer>;
}

/** Every role's probes against every address, in one multicall, plus each address's code. */
async function probeAll(
  client: ChainClient,
  addresses: readonly Address[],
  how: { blockNumber: bigint; multicallAddress: Address | undefined; operation: string },
): Promise<Map<Address, AddressAnswer>> {
  const unique = [...new Set(addresses)];
  const calls = unique.flatMap((address) =>
    ROLES.flatMap((role) =>
      INTERFACES[role].probes.map((probe) => ({ address, role, probe, abi: INTERFACES[role].abi }))
    )
  );
  let codes: (string | undefined)[];
  let results;
  try {
    [codes, results] = await Promise.all([
      Promise.all(
        unique.map((address) => client.getCode({ address, blockNumber: how.blockNumber })),
      ),
      client.multicall({
        contracts: calls.map(({ address, abi, probe }) => ({
          address,
          abi,
          functionName: probe.functionName,
          args: probe.args,
        })),
        allowFailure: true,
        batchSize: 0,
        blockNumber: how.blockNumber,
        ...(how.multicallAddress
          ? { multicallAddress: how.multicallAddress }
          : { deployless: true }),
      }),
    ]);
  } catch (cause) {
    throw new ChainReadError(
      "rpc",
      `Cannot ${how.operation}: the RPC request failed: ${
        abbreviate(cause instanceof Error ? cause.message.split("\n")[0] : String(cause), 200)
      }`,
      { cause },
    );
  }
  const out = new Map<Address, AddressAnswer>();
  unique.forEach((address, i) => {
    const roles = {} as Record<ContractRole, RoleAnswer>;
    for (const role of ROLES) roles[role] = { ok: true, results: {} };
    out.set(address, { hasCode: (codes[i] ?? "0x") !== "0x", roles });
  });
  calls.forEach((call, i) => {
    const answer = out.get(call.address)!.roles[call.role];
    const result = results[i] as { status: string; result?: unknown; error?: unknown };
    if (result.status === "success") {
      answer.results[call.probe.functionName] = result.result;
    } else if (answer.ok) {
      answer.ok = false;
      answer.failure = `${probeText(call.probe)} ${describeFailure(result.error)}`;
    }
  });
  return out;
}

/** A failed probe in words: reverted, or answered something that does not decode. */
function describeFailure(error: unknown): string {
  const name = (error as { name?: string } | undefined)?.name ?? "";
  if (/ZeroData|Decod|DataSize|PositionOutOfBounds/.test(name)) {
    return "answered data that is not its result";
  }
  return "reverted";
}
