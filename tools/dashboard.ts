/**
 * Builds the indexer's dashboard page: bundles `indexer/dashboard/src/main.ts` with uPlot for
 * the browser (`deno bundle`, minified), adds uPlot's stylesheet to ours, and writes every
 * asset, with its media type and strong ETag, into `indexer/dashboard/_assets.ts` — a module,
 * so serving the page needs no build, no file access and no network. The output is committed.
 *
 * ```sh
 * deno task dashboard           # rebuild indexer/dashboard/_assets.ts
 * deno task dashboard --check   # exit 1 when the committed assets are not those of the sources
 * ```
 *
 * `_assets.ts` records a SHA-256 of the build's inputs (the sources, the uPlot version, this
 * script); `tests/indexer/dashboard/assets_test.ts` recomputes it, so sources changed without a
 * rebuild fail the tests (without depending on the bundler's exact bytes, which vary between
 * Deno versions).
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const SOURCE_DIR = new URL("indexer/dashboard/src/", ROOT);
const OUTPUT = new URL("indexer/dashboard/_assets.ts", ROOT);
const UPLOT_DIR = new URL("node_modules/uplot/", ROOT);

/** One built asset. */
export interface BuiltAsset {
  /** The path it is served at. */
  path: string;
  /** Its media type. */
  contentType: string;
  /** Its content. */
  text: string;
}

/** The files whose content decides the build's output, relative to the repository. */
export function inputFiles(): string[] {
  const sources = [...Deno.readDirSync(SOURCE_DIR)]
    .filter((entry) => entry.isFile)
    .map((entry) => `indexer/dashboard/src/${entry.name}`);
  return [...sources, "tools/dashboard.ts"].sort();
}

/** SHA-256 (hex) of the inputs: each file's path and content, and uPlot's version. */
export async function inputsHash(): Promise<string> {
  const imports: Record<string, string> = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ).imports;
  const parts = [`uplot=${imports.uplot}`];
  for (const file of inputFiles()) {
    parts.push(`${file}\n${await Deno.readTextFile(new URL(file, ROOT))}`);
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\0")));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A strong ETag of `text`: its SHA-256, base64url, quoted. */
export async function etagOf(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const base64 = btoa(String.fromCharCode(...new Uint8Array(digest)));
  return `"${base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}"`;
}

async function bundle(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dashboard-build-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform=browser",
        "--format=esm",
        "--minify",
        "-o",
        `${dir}/dashboard.js`,
        new URL("main.ts", SOURCE_DIR).pathname,
      ],
      cwd: ROOT.pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(
        `Cannot bundle the dashboard: deno bundle exited with ${out.code}:\n` +
          new TextDecoder().decode(out.stderr),
      );
    }
    return await Deno.readTextFile(`${dir}/dashboard.js`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Builds every asset (bundling the script with `deno bundle`). */
export async function buildAssets(): Promise<BuiltAsset[]> {
  const script = await bundle();
  const read = (name: string) => Deno.readTextFile(new URL(name, SOURCE_DIR));
  const uplotLicense = await Deno.readTextFile(new URL("LICENSE", UPLOT_DIR));
  const uplotVersion = JSON.parse(await Deno.readTextFile(new URL("package.json", UPLOT_DIR)))
    .version;
  const uplotCss = await Deno.readTextFile(new URL("dist/uPlot.min.css", UPLOT_DIR));
  const banner = `/*! The indexer's dashboard (indexer/dashboard/src/), bundled with uPlot ` +
    `${uplotVersion} (https://github.com/leeoniya/uPlot), MIT License, ` +
    `Copyright (c) 2025 Leon Sorokin: see dashboard-licenses.txt */\n`;
  const licenses = `The dashboard bundles third-party code under these licenses.\n\n` +
    `uPlot ${uplotVersion} (https://github.com/leeoniya/uPlot), in dashboard.js and ` +
    `dashboard.css:\n\n${uplotLicense.trim()}\n`;
  const assets: BuiltAsset[] = [
    {
      path: "/dashboard.js",
      contentType: "text/javascript; charset=utf-8",
      text: banner + script,
    },
    {
      path: "/dashboard.css",
      contentType: "text/css; charset=utf-8",
      text: `/*! uPlot ${uplotVersion}, MIT License: see dashboard-licenses.txt */\n${uplotCss}\n` +
        await read("dashboard.css"),
    },
    { path: "/dashboard.svg", contentType: "image/svg+xml", text: await read("favicon.svg") },
    {
      path: "/dashboard-licenses.txt",
      contentType: "text/plain; charset=utf-8",
      text: licenses,
    },
  ];
  // The page names its script, stylesheet and icon with their version (`?v=`), so they can be
  // cached for good (`immutable`) while the page itself is revalidated on every load.
  let html = await read("index.html");
  for (const asset of assets.slice(0, 3)) {
    const name = asset.path.slice(1);
    const reference = `"${name}"`;
    if (!html.includes(reference)) throw new Error(`index.html does not reference ${name}`);
    html = html.replace(reference, `"${name}?v=${versionOf(await etagOf(asset.text))}"`);
  }
  return [{ path: "/", contentType: "text/html; charset=utf-8", text: html }, ...assets];
}

/** The version of an asset in its URL (`?v=`): the first 16 characters of its ETag. */
export function versionOf(etag: string): string {
  return etag.slice(1, 17);
}

/** The text of `_assets.ts` for `assets` built from inputs hashing to `hash`. */
export async function assetsModule(assets: readonly BuiltAsset[], hash: string): Promise<string> {
  const entries = [];
  for (const asset of assets) {
    entries.push(
      `  {\n    path: ${JSON.stringify(asset.path)},\n` +
        `    contentType: ${JSON.stringify(asset.contentType)},\n` +
        `    etag: ${JSON.stringify(await etagOf(asset.text))},\n` +
        `    text: ${JSON.stringify(asset.text)},\n  },`,
    );
  }
  return `// Generated by \`deno task dashboard\` (tools/dashboard.ts) from indexer/dashboard/src/.
// Do not edit: change the sources and rebuild.

/**
 * The dashboard's built assets (generated, committed): served by \`mod.ts\`.
 *
 * @module
 */

/** One built asset. */
export interface GeneratedAsset {
  /** The path it is served at. */
  readonly path: string;
  /** Its media type. */
  readonly contentType: string;
  /** Its strong ETag (quoted base64url SHA-256 of its text). */
  readonly etag: string;
  /** Its content. */
  readonly text: string;
}

/** SHA-256 of the build's inputs (\`tools/dashboard.ts\`'s \`inputsHash\`). */
export const INPUTS_SHA256: string = ${JSON.stringify(hash)};

/** Every asset. */
export const ASSETS: readonly GeneratedAsset[] = [
${entries.join("\n")}
];
`;
}

async function formatted(text: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=ts", "-"],
    cwd: ROOT.pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(`Cannot format _assets.ts: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

async function main(args: string[]): Promise<number> {
  const check = args.includes("--check");
  const hash = await inputsHash();
  if (check) {
    const committed = await Deno.readTextFile(OUTPUT).catch(() => "");
    if (/INPUTS_SHA256: string =\s*"([0-9a-f]{64})"/.exec(committed)?.[1] === hash) {
      console.log("dashboard: the committed assets are up to date");
      return 0;
    }
    console.error(
      "dashboard: indexer/dashboard/_assets.ts was not built from the current sources; " +
        "run `deno task dashboard` and commit the result",
    );
    return 1;
  }
  const assets = await buildAssets();
  await Deno.writeTextFile(OUTPUT, await formatted(await assetsModule(assets, hash)));
  for (const asset of assets) {
    console.log(`dashboard: ${asset.path} ${new TextEncoder().encode(asset.text).length} bytes`);
  }
  console.log(`dashboard: wrote ${OUTPUT.pathname.slice(ROOT.pathname.length)}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
