import assert from "node:assert/strict";
import { join } from "node:path";
import * as abis from "../../chain/abi.ts";
import {
  artifactText,
  compileContracts,
  CONTRACT_NAMES,
  PATHS,
  readSources,
} from "../../tools/contracts.ts";

Deno.test("committed artifacts and chain/abi.ts match what the sources compile to", () => {
  const artifacts = compileContracts();
  const stale: string[] = [];
  for (const name of CONTRACT_NAMES) {
    const path = join(PATHS.artifacts, `${name}.json`);
    let committed = "";
    try {
      committed = Deno.readTextFileSync(path);
    } catch {
      // missing counts as stale
    }
    if (committed !== artifactText(artifacts[name])) stale.push(`contracts/artifacts/${name}.json`);
    const exported =
      (abis as Record<string, unknown>)[`${name[0].toLowerCase()}${name.slice(1)}Abi`];
    if (JSON.stringify(exported) !== JSON.stringify(artifacts[name].abi)) {
      stale.push(`chain/abi.ts (${name})`);
    }
  }
  assert.deepEqual(stale, [], `stale: ${stale.join(", ")}. Run \`deno task contracts\`.`);
});

Deno.test("a changed source is detected as a different artifact", () => {
  const sources = readSources();
  const changed = {
    ...sources,
    "Registry.sol": {
      content: sources["Registry.sol"].content.replace(
        "MAX_URL_LENGTH = 2048",
        "MAX_URL_LENGTH = 2049",
      ),
    },
  };
  assert.notEqual(changed["Registry.sol"].content, sources["Registry.sol"].content);
  const registry = compileContracts(changed).Registry;
  const committed = Deno.readTextFileSync(join(PATHS.artifacts, "Registry.json"));
  assert.notEqual(artifactText(registry), committed);
});

Deno.test("compiler problems fail the build with solc's message", () => {
  const sources = readSources();
  assert.throws(
    () =>
      compileContracts({
        ...sources,
        "Staking.sol": {
          content: sources["Staking.sol"].content.replace(
            "totalStaked +=",
            "totalStaked =+ missing",
          ),
        },
      }),
    /Cannot compile contracts: solc reported/,
  );
});
