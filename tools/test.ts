/**
 * The test runner behind `deno task test`: the unit tests and the documentation examples
 * (`deno task test:doc`, run beside them, their output shown after), always both — a failure in
 * one never hides the other — and a failure in either fails the run. At the end it prints what
 * each half gave and the slowest test files.
 *
 * The unit tests run in one `deno test --parallel` process: each test file runs in its own
 * thread, `NET_TEST_JOBS` files at a time (default 4: most files wait on anvil, PostgreSQL,
 * Chromium or their own child processes more than they compute), the slowest files first so
 * none of them starts last. Test files must therefore own everything they use: free ports,
 * their own temporary directories, no process-wide state (environment, working directory,
 * signal handlers of the test process).
 *
 * @example
 * ```sh
 * deno task test                                  # everything
 * deno run -A tools/test.ts tests/indexer/        # some test files, and the doc tests
 * deno run -A tools/test.ts --no-doc tests/x_test.ts
 * NET_TEST_JOBS=1 deno task test                  # one file at a time
 * ```
 *
 * @module
 */

import { join, relative } from "node:path";

/** Environment variable: how many test files run at a time. */
export const JOBS_ENV = "NET_TEST_JOBS";

/** Test files run at a time when {@linkcode JOBS_ENV} is unset. */
export const DEFAULT_JOBS = 4;

/**
 * The files that take longest (the runner's own list of the slowest files, longest first):
 * started first, so that the run does not wait for one of them at its end. A file missing here
 * only starts in its alphabetical place; a listed file that no longer exists fails the run.
 */
export const SLOW_FIRST: readonly string[] = [
  "tests/indexer/history_kill_test.ts",
  "tests/indexer/history_volume_test.ts",
  "tests/indexer/store/embedded_test.ts",
  "tests/indexer/store/kill_embedded_test.ts",
  "tests/indexer/store/embedded_files_test.ts",
  "tests/indexer/history_test.ts",
  "tests/indexer/main_test.ts",
  "tests/tools/test_test.ts",
  "tests/chain/settlements_test.ts",
  "tests/indexer/refresher_test.ts",
  "tests/tools/contracts_test.ts",
];

const TEST_FILE = /(^|[_.])test\.(ts|tsx|mts|js|mjs|jsx)$/;
const SKIP_DIRS = new Set(["node_modules", ".tools", ".devnet", ".git"]);

/** Every test file under `dir`, relative to `root`, sorted. */
export function findTestFiles(dir: string, root = "."): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    for (const entry of Deno.readDirSync(path)) {
      const child = join(path, entry.name);
      if (entry.isDirectory && !SKIP_DIRS.has(entry.name)) walk(child);
      else if (entry.isFile && TEST_FILE.test(entry.name)) found.push(relative(root, child));
    }
  };
  walk(join(root, dir));
  return found.sort();
}

/**
 * The files in the order they start: {@linkcode SLOW_FIRST} (those present), then the rest.
 * With `all` (the whole suite), every file of `slowFirst` must be among `files`.
 *
 * @throws {Error} when `all` and a file of `slowFirst` is not a test file (the list is stale).
 */
export function runOrder(
  files: readonly string[],
  options: { all?: boolean; slowFirst?: readonly string[] } = {},
): string[] {
  const slowFirst = options.slowFirst ?? SLOW_FIRST;
  const stale = options.all ? slowFirst.filter((file) => !files.includes(file)) : [];
  if (stale.length > 0) {
    throw new Error(
      `tools/test.ts lists ${stale.join(", ")} among the slow test files, but the suite has no ` +
        "such file; expected existing test files (update SLOW_FIRST)",
    );
  }
  const first = slowFirst.filter((file) => files.includes(file));
  return [...first, ...files.filter((file) => !first.includes(file))];
}

/** The number of files run at a time, from {@linkcode JOBS_ENV}. */
export function jobs(env: (name: string) => string | undefined): number {
  const raw = env(JOBS_ENV);
  if (raw === undefined || raw === "") return DEFAULT_JOBS;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1 || value > 64) {
    throw new Error(`Cannot use ${JOBS_ENV}=${JSON.stringify(raw)}: expected a whole number 1–64`);
  }
  return value;
}

/** Seconds per test file, from a JUnit report of `deno test` (the sum of its tests). */
export function fileSeconds(junit: string): Map<string, number> {
  const seconds = new Map<string, number>();
  // Steps are reported inside their test's time: count top-level test cases only, which are
  // the ones whose name has no " > ".
  for (
    const match of junit.matchAll(/<testcase name="([^"]*)" classname="([^"]*)" time="([\d.]+)"/g)
  ) {
    if (match[1].includes(" &gt; ")) continue;
    const file = match[2].replace(/^\.\//, "");
    seconds.set(file, (seconds.get(file) ?? 0) + Number(match[3]));
  }
  return seconds;
}

/** A finished half: its exit code, how long it took, and its output when it was held back. */
interface Half {
  code: number;
  seconds: number;
  output?: Uint8Array;
}

/**
 * Runs `deno <args>`; its output goes straight through, or is held (both streams, in the order
 * they came) and returned, to be shown after the other half's.
 */
async function run(
  args: string[],
  options: { env?: Record<string, string>; hold?: boolean } = {},
): Promise<Half> {
  const started = performance.now();
  const stream = options.hold ? "piped" : "inherit";
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: options.env ?? {},
    stdin: "null",
    stdout: stream,
    stderr: stream,
  }).spawn();
  const chunks: Uint8Array[] = [];
  const collect = async (readable: ReadableStream<Uint8Array>) => {
    for await (const chunk of readable) chunks.push(chunk);
  };
  const reading = options.hold
    ? Promise.all([collect(child.stdout), collect(child.stderr)])
    : Promise.resolve();
  const { code } = await child.status;
  await reading;
  const seconds = (performance.now() - started) / 1000;
  if (!options.hold) return { code, seconds };
  const output = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    output.set(chunk, at);
    at += chunk.length;
  }
  return { code, seconds, output };
}

/**
 * Runs the tests of the project in the working directory (all of `tests/`, or the files and
 * directories in `args`; `--no-doc` skips the doc tests); returns the exit code, 0 when both
 * halves passed. The doc tests run beside the unit tests (mostly type checking, while the unit
 * tests mostly wait on their servers); their output is shown after the unit tests'.
 */
export async function main(args: readonly string[]): Promise<number> {
  const doc = !args.includes("--no-doc");
  const paths = args.filter((a) => a !== "--no-doc");
  const files = (paths.length > 0 ? paths : ["tests"]).flatMap((path) =>
    Deno.statSync(path).isDirectory ? findTestFiles(path) : [path]
  );
  const order = runOrder(files, { all: paths.length === 0 });
  const parallel = jobs((name) => Deno.env.get(name));
  const report = await Deno.makeTempFile({ prefix: "net-test-", suffix: ".xml" });
  try {
    const docs = doc ? run(["task", "test:doc"], { hold: true }) : undefined;
    const unit = await run(
      ["test", "-A", "--parallel", `--junit-path=${report}`, ...order],
      { env: { DENO_JOBS: String(parallel) } },
    );
    const docHalf = await docs;
    if (docHalf?.output) {
      console.log("\n--- doc tests (deno task test:doc) ---");
      await Deno.stdout.write(docHalf.output);
    }
    const slowest = [...fileSeconds(await Deno.readTextFile(report).catch(() => ""))]
      .sort((a, b) => b[1] - a[1]).slice(0, 10);
    console.log(`\nslowest test files (${order.length} files, ${parallel} at a time):`);
    for (const [file, secs] of slowest) console.log(`  ${secs.toFixed(1).padStart(7)} s  ${file}`);
    const verdict = (half: Half) =>
      `${half.code === 0 ? "passed" : `FAILED (exit code ${half.code})`} in ${
        half.seconds.toFixed(0)
      } s`;
    console.log(`unit tests: ${verdict(unit)}`);
    console.log(docHalf ? `doc tests: ${verdict(docHalf)}` : "doc tests: not run");
    return unit.code === 0 && (docHalf?.code ?? 0) === 0 ? 0 : 1;
  } finally {
    await Deno.remove(report).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
