/**
 * Compiles the Solidity sources in `contracts/` with the pinned `solc` (npm) and writes the
 * artifacts that the project commits:
 *
 * - `contracts/artifacts/<Name>.json`: ABI, creation and runtime bytecode, compiler settings;
 * - `chain/abi.ts`: the ABIs as typed `as const` arrays for viem.
 *
 * The build is reproducible: the compiler version, the EVM version and the optimizer settings
 * are fixed here, and the sources are read in a sorted order. `tests/tools/contracts_test.ts`
 * fails when the committed files differ from what the sources compile to.
 *
 * Run it as `deno task contracts`.
 *
 * @module
 */

import solc from "solc";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

/**
 * The contracts that get artifacts: the four of the network, and an `aggregate3` multicall for
 * chains without Multicall3 (the others are bases and libraries).
 */
export const CONTRACT_NAMES = ["Registry", "Staking", "Emission", "Escrow", "Multicall"] as const;

/** One of {@linkcode CONTRACT_NAMES}. */
export type ContractName = (typeof CONTRACT_NAMES)[number];

/** The exact compiler every build must use. */
export const SOLC_VERSION = "0.8.30+commit.73712a01";

/** Compiler settings, fixed so that the bytecode is reproducible. */
export const COMPILER_SETTINGS = {
  evmVersion: "cancun",
  optimizer: { enabled: true, runs: 200 },
  viaIR: false,
  metadata: { bytecodeHash: "ipfs", appendCBOR: true },
} as const;

/** What `contracts/artifacts/<Name>.json` holds. */
export interface ContractArtifact {
  /** The contract's name. */
  contractName: string;
  /** The source file, relative to `contracts/`. */
  sourceName: string;
  /** The compiler that produced it. */
  compiler: { version: string; settings: typeof COMPILER_SETTINGS };
  /** The JSON ABI. */
  abi: unknown[];
  /** Creation bytecode, `0x` hex. */
  bytecode: string;
  /** Runtime bytecode, `0x` hex. */
  deployedBytecode: string;
}

/** Absolute paths of the inputs and outputs. */
export const PATHS = {
  sources: fileURLToPath(new URL("../contracts/", import.meta.url)),
  artifacts: fileURLToPath(new URL("../contracts/artifacts/", import.meta.url)),
  abi: fileURLToPath(new URL("../chain/abi.ts", import.meta.url)),
} as const;

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<
    string,
    Record<string, {
      abi: unknown[];
      evm: { bytecode: { object: string }; deployedBytecode: { object: string } };
    }>
  >;
}

/** Reads every `*.sol` file in `contracts/`, sorted by name. */
export function readSources(dir: string = PATHS.sources): Record<string, { content: string }> {
  const names = [...Deno.readDirSync(dir)]
    .filter((entry) => entry.isFile && entry.name.endsWith(".sol"))
    .map((entry) => entry.name)
    .sort();
  const sources: Record<string, { content: string }> = {};
  for (const name of names) sources[name] = { content: Deno.readTextFileSync(join(dir, name)) };
  return sources;
}

/**
 * Compiles the sources and returns one artifact per contract of {@linkcode CONTRACT_NAMES}.
 *
 * @throws {Error} when the compiler is not the pinned one, or reports any error or warning.
 */
export function compileContracts(
  sources: Record<string, { content: string }> = readSources(),
): Record<ContractName, ContractArtifact> {
  const version = solc.version();
  if (!version.startsWith(SOLC_VERSION)) {
    throw new Error(`Cannot compile contracts: solc is ${version}, expected ${SOLC_VERSION}`);
  }
  const input = {
    language: "Solidity",
    sources,
    settings: {
      ...COMPILER_SETTINGS,
      outputSelection: {
        "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] },
      },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const problems = (output.errors ?? []).filter((e) => e.severity !== "info");
  if (problems.length > 0) {
    throw new Error(
      `Cannot compile contracts: solc reported ${problems.length} problem(s)\n` +
        problems.map((p) => p.formattedMessage).join("\n"),
    );
  }
  const artifacts = {} as Record<ContractName, ContractArtifact>;
  for (const name of CONTRACT_NAMES) {
    const sourceName = `${name}.sol`;
    const compiled = output.contracts[sourceName]?.[name];
    if (!compiled) {
      throw new Error(`Cannot compile contracts: ${sourceName} has no contract ${name}`);
    }
    artifacts[name] = {
      contractName: name,
      sourceName,
      compiler: { version: SOLC_VERSION, settings: COMPILER_SETTINGS },
      abi: compiled.abi,
      bytecode: `0x${compiled.evm.bytecode.object}`,
      deployedBytecode: `0x${compiled.evm.deployedBytecode.object}`,
    };
  }
  return artifacts;
}

/** The text of `contracts/artifacts/<Name>.json` for an artifact. */
export function artifactText(artifact: ContractArtifact): string {
  return JSON.stringify(artifact, null, 2) + "\n";
}

function constName(name: ContractName): string {
  return `${name[0].toLowerCase()}${name.slice(1)}Abi`;
}

/** The text of `chain/abi.ts` (before `deno fmt`). */
export function abiModuleText(artifacts: Record<ContractName, ContractArtifact>): string {
  const lines = [
    "// Generated by `deno task contracts` (tools/contracts.ts) from contracts/*.sol. Do not edit.",
    "",
    "/**",
    " * Typed ABIs of the network's contracts, generated from the Solidity sources in",
    " * `contracts/`. Use them with viem's `readContract`, `multicall` and `getLogs` for full type",
    " * inference.",
    " *",
    " * @module",
    " */",
    "",
  ];
  for (const name of CONTRACT_NAMES) {
    lines.push(
      `/** ABI of the \`${name}\` contract (\`contracts/${name}.sol\`). */`,
      `export const ${constName(name)} = ${JSON.stringify(artifacts[name].abi)} as const;`,
      "",
    );
  }
  return lines.join("\n");
}

async function formatTypeScript(text: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "ts", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(`Cannot format chain/abi.ts: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Compiles the sources and writes the artifacts and `chain/abi.ts`. */
export async function writeArtifacts(log: (line: string) => void = console.error): Promise<void> {
  const artifacts = compileContracts();
  await Deno.mkdir(PATHS.artifacts, { recursive: true });
  for (const name of CONTRACT_NAMES) {
    const path = join(PATHS.artifacts, `${name}.json`);
    await Deno.writeTextFile(path, artifactText(artifacts[name]));
    log(`contracts: wrote ${path} (${(artifacts[name].deployedBytecode.length - 2) / 2} bytes)`);
  }
  await Deno.writeTextFile(PATHS.abi, await formatTypeScript(abiModuleText(artifacts)));
  log(`contracts: wrote ${PATHS.abi}`);
}

if (import.meta.main) {
  try {
    await writeArtifacts();
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    Deno.exit(1);
  }
}
