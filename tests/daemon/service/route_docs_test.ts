/**
 * The route lists people read are checked against the route table: the endpoint table of
 * `docs/daemon.md` and the tables in the module docs of the dialects' `routes.ts` (`openai/`,
 * `ollama/`, `anthropic/`) list exactly the operations the daemon's service declares (as its
 * generated document has them), so a route added or removed without its row fails here.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { DaemonAccount } from "../../../daemon/account/mod.ts";
import { createDaemonService } from "../../../daemon/service/handler.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

const service = createDaemonService({
  backend: {
    listModels: () => Promise.resolve([]),
    chat: () => Promise.reject(new Error("not used")),
  },
  gateways: () => [],
  verdicts: new VerdictLog(),
  version: "0.1.0",
  port: 11435,
  log: () => {},
  // A daemon that pays serves its account's routes too; nothing here loads the account.
  account: new DaemonAccount({
    dataDir: "/nonexistent",
    consumerKeyFile: null,
    escrow: `0x${"e".repeat(40)}`,
    chainId: 31337,
    getClient: () => Promise.reject(new Error("not used")),
    caps: () => Promise.reject(new Error("not used")),
    lookup: () => Promise.reject(new Error("not used")),
  }),
});

/** Every operation of the generated document as `METHOD /path`, with its tags. */
const OPERATIONS: { operation: string; tags: string[] }[] = Object.entries(
  service.document().paths as Record<string, Record<string, { tags?: string[] }>>,
).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({
    operation: `${method.toUpperCase()} ${path}`,
    tags: operation.tags ?? [],
  }))
);

/** The `METHOD /path` rows of a markdown table whose first two columns are method and path. */
function tableRows(text: string): string[] {
  const rows: string[] = [];
  for (const line of text.split("\n")) {
    const cells = line.replace(/^\s*\*?\s*/, "").split("|").map((cell) => cell.trim());
    if (cells.length < 4 || !/^`\/[^`]*`$/.test(cells[2])) continue;
    const path = cells[2].slice(1, -1);
    for (const method of cells[1].split(",").map((m) => m.trim())) {
      // HEAD is answered for every GET; the document lists the GET.
      if (method !== "HEAD") rows.push(`${method} ${path}`);
    }
  }
  return rows.sort();
}

/** The module doc (the first JSDoc block) of a source file. */
async function moduleDoc(path: string): Promise<string> {
  const text = await Deno.readTextFile(`${ROOT}${path}`);
  return text.slice(0, text.indexOf("*/"));
}

Deno.test("route docs: the document has the operations the checks below compare against", () => {
  assert.ok(OPERATIONS.length >= 20, `${OPERATIONS.length} operations`);
  assert.ok(OPERATIONS.some((o) => o.operation === "POST /v1/chat/completions"));
});

Deno.test("route docs: docs/daemon.md's endpoint table lists every operation, and only those", async () => {
  const doc = await Deno.readTextFile(`${ROOT}docs/daemon.md`);
  const start = doc.indexOf("\n## Endpoints");
  const section = doc.slice(start, doc.indexOf("\n## ", start + 1));
  assert.deepEqual(tableRows(section), OPERATIONS.map((o) => o.operation).sort());
});

const DIALECTS = [
  ["openai", "daemon/openai/routes.ts"],
  ["ollama", "daemon/ollama/routes.ts"],
  ["anthropic", "daemon/anthropic/routes.ts"],
];

for (const [dialect, file] of DIALECTS) {
  Deno.test(`route docs: ${file}'s table lists the ${dialect} dialect's operations`, async () => {
    const declared = OPERATIONS.filter((o) => o.tags.includes(dialect)).map((o) => o.operation);
    assert.ok(declared.length > 0, `no operation tagged ${dialect}`);
    assert.deepEqual(tableRows(await moduleDoc(file)), declared.sort());
  });
}
