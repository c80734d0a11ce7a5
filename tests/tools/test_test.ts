/**
 * `tools/test.ts`, the runner of `deno task test`: both halves always run and report, a failure
 * in either fails the run; the slow files start first; the list of slow files stays true.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_JOBS,
  fileSeconds,
  findTestFiles,
  jobs,
  JOBS_ENV,
  runOrder,
  SLOW_FIRST,
} from "../../tools/test.ts";
import { CHROMIUM_ENV } from "../_browser.ts";
import { CLAUDE_CODE_BIN_ENV } from "../_claude_code.ts";
import { POSTGRES_BIN_ENV } from "../_postgres.ts";

const RUNNER = fileURLToPath(new URL("../../tools/test.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A small project: one unit test file and one module with a documented example, each passing
 * or failing as asked; `test:doc` runs the example.
 */
async function project(unitPasses: boolean, docPasses: boolean): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "net-runner-" });
  await Deno.writeTextFile(
    `${dir}/deno.json`,
    JSON.stringify({ tasks: { "test:doc": "deno test --doc lib.ts" } }),
  );
  await Deno.mkdir(`${dir}/tests`);
  await Deno.writeTextFile(
    `${dir}/tests/unit_test.ts`,
    `Deno.test("the unit", () => { if (${!unitPasses}) throw new Error("unit broke"); });\n`,
  );
  await Deno.writeTextFile(
    `${dir}/lib.ts`,
    [
      "/**",
      " * The answer.",
      " *",
      " * @example",
      " * ```ts",
      ' * import { answer } from "./lib.ts";',
      ` * if (answer() !== ${docPasses ? 42 : 41}) throw new Error("doc broke");`,
      " * ```",
      " */",
      "export function answer(): number {",
      "  return 42;",
      "}",
      "",
    ].join("\n"),
  );
  return dir;
}

async function runner(dir: string): Promise<{ code: number; out: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", RUNNER, "tests"],
    cwd: dir,
    env: { NO_COLOR: "1" },
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, out: decode(output.stdout) + decode(output.stderr) };
}

Deno.test("deno task test: both halves always run, and either one failing fails the run", async () => {
  const cases = [
    [true, true, 0, /unit tests: passed/, /doc tests: passed/],
    [false, true, 1, /unit tests: FAILED \(exit code 1\)/, /doc tests: passed/],
    [true, false, 1, /unit tests: passed/, /doc tests: FAILED \(exit code 1\)/],
    [false, false, 1, /unit tests: FAILED/, /doc tests: FAILED/],
  ] as const;
  // The four projects side by side: each is two small `deno test` runs.
  await Promise.all(cases.map(async ([unit, doc, code, unitLine, docLine]) => {
    const label = `unit ${unit ? "passing" : "failing"}, doc ${doc ? "passing" : "failing"}`;
    const dir = await project(unit, doc);
    try {
      const result = await runner(dir);
      assert.equal(result.code, code, `${label}:\n${result.out}`);
      assert.match(result.out, unitLine, label);
      assert.match(result.out, docLine, label);
      if (!unit) assert.match(result.out, /unit broke/, label);
      if (!doc) assert.match(result.out, /doc broke/, label);
      assert.match(
        result.out,
        /slowest test files \(1 files, \d+ at a time\):\n\s+[\d.]+ s {2}tests\/unit_test\.ts/,
        label,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }));
});

Deno.test("the slow files start first; every file listed as slow is a test file of the suite", () => {
  const files = findTestFiles("tests", ROOT);
  assert.ok(files.length > 100, `found only ${files.length} test files`);
  const order = runOrder(files, { all: true });
  assert.deepEqual(order.slice(0, SLOW_FIRST.length), [...SLOW_FIRST]);
  assert.deepEqual(order.toSorted(), files);
  assert.throws(
    () => runOrder(files, { all: true, slowFirst: ["tests/gone_test.ts"] }),
    /lists tests\/gone_test\.ts among the slow test files, but the suite has no such file/,
  );
  // A partial run only starts its own files.
  assert.deepEqual(runOrder(["tests/b_test.ts", SLOW_FIRST[1]]), [
    SLOW_FIRST[1],
    "tests/b_test.ts",
  ]);
});

Deno.test("NET_TEST_JOBS: a whole number from 1 to 64, else a clear error", () => {
  assert.equal(jobs(() => undefined), DEFAULT_JOBS);
  assert.equal(jobs(() => "2"), 2);
  for (const bad of ["0", "65", "two", "1.5", "-1"]) {
    assert.throws(
      () => jobs((name) => name === JOBS_ENV ? bad : undefined),
      new RegExp(
        `Cannot use NET_TEST_JOBS=${
          JSON.stringify(bad).replace(".", "\\.")
        }: expected a whole number 1–64`,
      ),
    );
  }
});

Deno.test("the slowest files are summed from the JUnit report, steps counted once", () => {
  const junit = `<testsuites>
    <testsuite name="./tests/a_test.ts">
      <testcase name="one" classname="./tests/a_test.ts" time="1.500" line="1" col="1"></testcase>
      <testcase name="two" classname="./tests/a_test.ts" time="2.000" line="2" col="1"></testcase>
      <testcase name="two &gt; a step" classname="./tests/a_test.ts" time="1.900" line="3" col="1"></testcase>
    </testsuite>
    <testsuite name="./tests/b_test.ts">
      <testcase name="&quot;quoted&quot;" classname="./tests/b_test.ts" time="0.250" line="1" col="1"></testcase>
    </testsuite>
  </testsuites>`;
  assert.deepEqual([...fileSeconds(junit)], [["tests/a_test.ts", 3.5], ["tests/b_test.ts", 0.25]]);
});

Deno.test("docs/testing.md: its table of variables is the runner's and the fixtures'", async () => {
  const text = await Deno.readTextFile(`${ROOT}docs/testing.md`);
  const rows = [...text.matchAll(/^\| `(NET_[A-Z_]+)` +\| ([^|]*)\|/gm)].map((m) => [
    m[1],
    m[2].trim().replaceAll("`", ""),
  ]);
  assert.deepEqual(rows, [
    [JOBS_ENV, String(DEFAULT_JOBS)],
    [POSTGRES_BIN_ENV, ""],
    [CHROMIUM_ENV, ""],
    [CLAUDE_CODE_BIN_ENV, ""],
  ]);
});
