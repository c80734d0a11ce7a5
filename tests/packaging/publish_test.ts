/**
 * `deno publish --dry-run` (also run by `.ci/run`): it must pass (no slow types, nothing
 * published imports an unpublished file), and the published file set must be the library
 * and its documentation only — no tests, benchmarks, devnet, tools, contract sources,
 * packaging files or local state.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { readText } from "./_files.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
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
    args: ["publish", "--dry-run", "--allow-dirty"],
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
