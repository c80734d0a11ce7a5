/**
 * `deno publish --dry-run` (also run by `.ci/run`): it must pass (no slow types, nothing
 * published imports an unpublished file), and the published file set must be the library
 * and its documentation only — no tests, benchmarks, devnet, tools, contract sources,
 * packaging files or local state. The entry points are the ones listed here, each with a
 * documented module, a runnable example, and only documented, public symbols.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { readText } from "./_files.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The public surface, on purpose: each subpath, its file and how many symbols it exports
 * (`deno doc --json <file>`). Changing what an entry exports means changing this table and
 * the docs that list it (`mod.ts`, `docs/crypto.md`, `docs/attestation.md`, `docs/chain.md`).
 * The services' entries are counted by their own tests.
 */
const ENTRIES: Record<string, { file: string; symbols?: number }> = {
  ".": { file: "./mod.ts", symbols: 5 },
  "./hpke": { file: "./crypto/hpke/mod.ts", symbols: 20 },
  "./ohttp": { file: "./crypto/ohttp/mod.ts", symbols: 48 },
  "./bhttp": { file: "./crypto/bhttp/mod.ts", symbols: 25 },
  "./endorsement": { file: "./crypto/endorsement.ts", symbols: 14 },
  "./receipt": { file: "./crypto/receipt.ts", symbols: 15 },
  "./tee": { file: "./crypto/tee/mod.ts", symbols: 83 },
  "./chain": { file: "./chain/mod.ts", symbols: 109 },
  "./indexer": { file: "./indexer/mod.ts" },
  "./daemon": { file: "./daemon/mod.ts" },
};
const LIBRARY_DIRS = ["chain/", "crypto/", "daemon/", "indexer/", "io/", "http/", "settings/"];
const TOP_LEVEL = ["README.md", "deno.json", "mod.ts", "errors.ts", "version.ts"];
const FORBIDDEN = [
  "tests/",
  "bench/",
  "devnet/",
  "tools/",
  "contracts/",
  "packaging/",
  ".ci/",
  ".tools/",
  ".devnet/",
  "node_modules/",
  "Dockerfile",
  "compose.yaml",
  ".dockerignore",
  "deno.lock",
  ".git",
];

/** Every file under `dir` (relative to the root). */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(`${ROOT}${dir}`)) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) out.push(...walk(`${path}/`));
    else out.push(path);
  }
  return out;
}

Deno.test("deno publish --dry-run passes and publishes only the library", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    // Without its type check: `deno check` (`.ci/run`, `deno task ok`) type checks every file;
    // the slow types, the graph (nothing published imports an unpublished file) and the file
    // set are what is checked here.
    args: ["publish", "--dry-run", "--allow-dirty", "--no-check"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.match(text, /Checking for slow types in the public API/);
  assert.match(text, /Success Dry run complete/);
  const published = [...text.matchAll(/^\s+file:\/\/(\S+) \(/gm)].map((m) =>
    m[1].slice(ROOT.length)
  );
  assert.ok(published.length > 50, `only ${published.length} files listed:\n${text}`);
  for (const path of published) {
    assert.ok(
      TOP_LEVEL.includes(path) || [...LIBRARY_DIRS, "docs/"].some((d) => path.startsWith(d)),
      `${path} is published but is not part of the library`,
    );
    assert.ok(!FORBIDDEN.some((f) => path === f || path.startsWith(f)), `${path} is published`);
    assert.doesNotMatch(path, /_test\.ts$|_bench\.ts$/);
  }
  // Complete: every export and every library file is in the package.
  const exports: Record<string, string> = JSON.parse(readText("deno.json")).exports;
  for (const target of Object.values(exports)) {
    assert.ok(published.includes(target.replace(/^\.\//, "")), `export ${target} is missing`);
  }
  for (const file of LIBRARY_DIRS.flatMap(walk)) {
    assert.ok(published.includes(file), `${file} is not published`);
  }
});

/** What `deno doc --json` says about one symbol (the fields these tests read). */
interface DocSymbol {
  name: string;
  declarations: { location: { filename: string }; jsDoc?: { doc?: string } }[];
}

/** What `deno doc --json` says about one module (the fields these tests read). */
interface DocModule {
  module_doc?: { doc?: string; tags?: { kind: string; doc?: string }[] };
  symbols: DocSymbol[];
}

async function docOf(file: string): Promise<DocModule> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", file],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const nodes: Record<string, DocModule> = JSON.parse(new TextDecoder().decode(out.stdout)).nodes;
  const node = nodes[new URL(file, `file://${ROOT}`).href];
  assert.ok(node, `deno doc lists no module for ${file}`);
  return node;
}

Deno.test("every entry point is documented, has a runnable example and exports only public code", async () => {
  const exports: Record<string, string> = JSON.parse(readText("deno.json")).exports;
  assert.deepEqual(
    exports,
    Object.fromEntries(Object.entries(ENTRIES).map(([name, { file }]) => [name, file])),
  );
  for (const [name, { file, symbols }] of Object.entries(ENTRIES)) {
    const doc = await docOf(file);
    assert.ok(doc.module_doc?.doc, `${name} (${file}) has no @module documentation`);
    const examples = (doc.module_doc.tags ?? []).filter((tag) => tag.kind === "example");
    assert.ok(
      examples.some((example) => /```ts\n/.test(example.doc ?? "")),
      `${name} (${file}) has no runnable example (a \`\`\`ts block not marked ignore)`,
    );
    for (const symbol of doc.symbols) {
      for (const declaration of symbol.declarations) {
        const path = declaration.location.filename.slice(`file://${ROOT}`.length);
        assert.ok(declaration.jsDoc?.doc, `${name} exports ${symbol.name} (${path}) without JSDoc`);
        assert.doesNotMatch(path, /(^|\/)_[^/]*$/, `${name} exports ${symbol.name} from ${path}`);
      }
    }
    if (symbols !== undefined) {
      assert.equal(
        doc.symbols.length,
        symbols,
        `${name} exports ${doc.symbols.length} symbols, the table says ${symbols}: ` +
          doc.symbols.map((symbol) => symbol.name).sort().join(", "),
      );
    }
  }
});
