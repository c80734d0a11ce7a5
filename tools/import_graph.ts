/**
 * The import graph of a folder as Deno itself resolves it (`deno info --json`, value and type
 * imports alike, not the examples in comments), and the figures a reader of its shape wants:
 * files and lines per folder, floors, arrows, arrows back up and circles. The rules a folder
 * keeps are checked by its own test (`tests/daemon/rooms_test.ts` for `daemon/`).
 *
 * ```sh
 * deno run -A tools/import_graph.ts daemon   # print the figures of daemon/
 * ```
 *
 * - An **arrow** is one file importing another, both under the folder (counted once per pair).
 * - A **circle** is a set of two or more files that reach each other through arrows.
 * - **Floors**: the longest chain of arrows, counted in files (a file importing nothing of the
 *   folder is on floor 1; a circle counts as one floor).
 * - **Arrows back up**: walking the files depth first in import order, from the files nothing
 *   imports, the arrows to a file still on the walk; each one closes a circle, so there are none
 *   exactly when there is no circle.
 *
 * @module
 */

import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** The import graph of one folder. */
export interface ImportGraph {
  /** The folder, absolute. */
  readonly root: string;
  /** Every `.ts` file under it, relative to it, sorted. */
  readonly files: readonly string[];
  /** Each file's imports of other files under the folder, in source order (relative paths). */
  readonly imports: ReadonlyMap<string, readonly string[]>;
}

/** Options of {@linkcode importGraph}. */
export interface ImportGraphOptions {
  /** The `deno.json` whose import map resolves bare specifiers. @default {the root's parent's} */
  config?: string;
}

/** Every `.ts` file under `dir`, relative to it, sorted (not in `node_modules/` or dot folders). */
function tsFiles(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(join(dir, prefix))) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory) {
      if (entry.name !== "node_modules" && !entry.name.startsWith(".")) {
        out.push(...tsFiles(dir, path));
      }
    } else if (entry.isFile && entry.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
}

/**
 * Reads the import graph of `dir` with `deno info --json` on one module that imports every
 * `.ts` file under it.
 *
 * @throws {Error} when `deno info` fails (a file that does not resolve), with its output.
 */
export async function importGraph(
  dir: string,
  options: ImportGraphOptions = {},
): Promise<ImportGraph> {
  const root = resolve(dir);
  const files = tsFiles(root);
  const temp = await Deno.makeTempDir({ prefix: "import-graph-" });
  try {
    const entry = join(temp, "all.ts");
    await Deno.writeTextFile(
      entry,
      files.map((file) => `import "${pathToFileURL(join(root, file)).href}";\n`).join(""),
    );
    const config = options.config ?? join(dirname(root), "deno.json");
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", config, entry],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const text = new TextDecoder().decode(stdout);
    if (code !== 0) {
      throw new Error(
        `Cannot read the import graph of ${root}: deno info exited with ${code}: ` +
          new TextDecoder().decode(stderr).slice(0, 2000),
      );
    }
    const modules: InfoModule[] = JSON.parse(text).modules;
    const base = pathToFileURL(root).href + "/";
    const imports = new Map<string, string[]>(files.map((file) => [file, []]));
    for (const module of modules) {
      if (!module.specifier.startsWith(base)) continue;
      const from = decodeURIComponent(module.specifier.slice(base.length));
      const list = imports.get(from);
      if (!list) continue;
      for (const dependency of module.dependencies ?? []) {
        for (const resolved of [dependency.code?.specifier, dependency.type?.specifier]) {
          if (!resolved?.startsWith(base)) continue;
          const to = decodeURIComponent(resolved.slice(base.length));
          if (to !== from && imports.has(to) && !list.includes(to)) list.push(to);
        }
      }
    }
    return { root, files, imports };
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
}

/** Every arrow of the graph, `[from, to]`, sorted. */
export function arrows(graph: ImportGraph): [string, string][] {
  const out: [string, string][] = [];
  for (const [from, list] of graph.imports) for (const to of list) out.push([from, to]);
  return out.sort((a, b) => (a[0] + "\0" + a[1]).localeCompare(b[0] + "\0" + b[1]));
}

/** The circles of the graph (Tarjan's strongly connected components of 2+ files), sorted. */
export function circles(graph: ImportGraph): string[][] {
  return components(graph).filter((c) => c.length > 1).map((c) => c.sort()).sort();
}

function components(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let counter = 0;
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.imports.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      out.push(component);
    }
  };
  for (const file of graph.files) if (!index.has(file)) visit(file);
  return out;
}

/** The number of floors: the longest chain of arrows in files, a circle counting as one. */
export function floors(graph: ImportGraph): number {
  const componentOf = new Map<string, number>();
  const list = components(graph);
  list.forEach((members, i) => members.forEach((file) => componentOf.set(file, i)));
  // Tarjan's order is reverse topological: a component's imports come before it.
  const floorOf: number[] = [];
  list.forEach((members, i) => {
    let below = 0;
    for (const file of members) {
      for (const next of graph.imports.get(file) ?? []) {
        const j = componentOf.get(next)!;
        if (j !== i) below = Math.max(below, floorOf[j]);
      }
    }
    floorOf[i] = below + 1;
  });
  return Math.max(0, ...floorOf);
}

/**
 * The arrows back up: walking depth first in import order from the files nothing imports (then
 * any file not reached), the arrows to a file still on the walk.
 */
export function arrowsBackUp(graph: ImportGraph): [string, string][] {
  const imported = new Set(arrows(graph).map(([, to]) => to));
  const starts = [...graph.files.filter((f) => !imported.has(f)), ...graph.files];
  const state = new Map<string, "open" | "done">();
  const out: [string, string][] = [];
  const walk = (file: string) => {
    state.set(file, "open");
    for (const next of graph.imports.get(file) ?? []) {
      if (state.get(next) === "open") out.push([file, next]);
      else if (!state.has(next)) walk(next);
    }
    state.set(file, "done");
  };
  for (const file of starts) if (!state.has(file)) walk(file);
  return out;
}

/** `import`/`export … from` statements with named items, at the start of a line. */
const NAMED = /^(?:import|export)(?:\s+type)?\s*\{([^}]*)\}\s*from\s*"([^"]+)";/gm;

/** The named items each relative specifier of `source` is imported or re-exported with. */
function namedItems(source: string): { names: string[]; specifier: string }[] {
  return [...source.matchAll(NAMED)].map((match) => ({
    specifier: match[2],
    names: match[1].split(",").map((item) =>
      item.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]
    )
      .filter((name) => name !== ""),
  }));
}

/**
 * The graph with the doors walked through: each `mod.ts` in a sub-folder (a room's door) is
 * removed, and an arrow to it becomes arrows to the files that define the names imported through
 * it (read from both files' `import`/`export { … } from` lines; all of the door's files when they
 * cannot be read). Its floors are those of the work itself, without the floor each door adds.
 */
export function throughDoors(graph: ImportGraph): ImportGraph {
  const isDoor = (file: string) => file.endsWith("/mod.ts");
  const resolveFrom = (file: string, specifier: string) =>
    relative(graph.root, resolve(graph.root, dirname(file), specifier));
  const definers = (door: string, name: string, seen: Set<string>): string[] => {
    if (seen.has(door)) return [];
    seen.add(door);
    const source = Deno.readTextFileSync(join(graph.root, door));
    for (const { names, specifier } of namedItems(source)) {
      if (!names.includes(name)) continue;
      const target = resolveFrom(door, specifier);
      return isDoor(target) ? definers(target, name, seen) : [target];
    }
    return (graph.imports.get(door) ?? []).filter((file) => !isDoor(file));
  };
  const imports = new Map<string, string[]>();
  for (const file of graph.files) {
    if (isDoor(file)) continue;
    const source = Deno.readTextFileSync(join(graph.root, file));
    const items = namedItems(source);
    const list: string[] = [];
    for (const next of graph.imports.get(file) ?? []) {
      if (!isDoor(next)) {
        list.push(next);
        continue;
      }
      const names = items.filter((item) => resolveFrom(file, item.specifier) === next)
        .flatMap((item) => item.names);
      if (names.length === 0) list.push(...definers(next, "", new Set()));
      for (const name of names) list.push(...definers(next, name, new Set()));
    }
    imports.set(
      file,
      [...new Set(list)].filter((next) => next !== file && graph.imports.has(next)),
    );
  }
  return { root: graph.root, files: graph.files.filter((f) => !isDoor(f)), imports };
}

/** The rooms of a folder: each sub-folder, and the rooms its files may import. */
export interface RoomRules {
  /**
   * Each room and the rooms it may use, lower ones only: an arrow to any other room runs back up
   * or sideways. Files at the folder's top (its entry files: `mod.ts`, `main.ts`) may use every
   * room, and no room may import them.
   */
  readonly rooms: Readonly<Record<string, readonly string[]>>;
}

/** The room of a file (its first folder), or `null` for a file at the top. */
export function roomOf(file: string): string | null {
  const slash = file.indexOf("/");
  return slash < 0 ? null : file.slice(0, slash);
}

/**
 * What breaks the rules of rooms in `graph`, one line each (none when it keeps them): a circle;
 * a sub-folder that is not a declared room, or a room without its `mod.ts` (its door); an arrow
 * from a room to the top; an arrow into a room from outside it (the top included) that is not to
 * its door (so no file reaches another room's private `_name.ts`); an arrow to a room the rules
 * do not let it use (back up or sideways); and rules that themselves run in a circle.
 */
export function roomViolations(graph: ImportGraph, rules: RoomRules): string[] {
  const out: string[] = [];
  const rooms = Object.keys(rules.rooms);
  for (const circle of circles(graph)) out.push(`circle: ${circle.join(" -> ")}`);
  for (const [room, uses] of Object.entries(rules.rooms)) {
    for (const used of uses) {
      if (!(used in rules.rooms)) out.push(`rules: ${room} uses ${used}, which is not a room`);
    }
  }
  const ruleGraph: ImportGraph = {
    root: graph.root,
    files: rooms,
    imports: new Map(Object.entries(rules.rooms)),
  };
  for (const circle of circles(ruleGraph)) out.push(`rules run in a circle: ${circle.join(", ")}`);
  const present = new Set(graph.files.map(roomOf).filter((room) => room !== null));
  for (const room of present) {
    if (!(room in rules.rooms)) out.push(`${room}/ is not a declared room`);
  }
  for (const room of rooms) {
    if (!graph.files.includes(`${room}/mod.ts`)) out.push(`${room}/ has no mod.ts`);
  }
  for (const [from, to] of arrows(graph)) {
    const a = roomOf(from);
    const b = roomOf(to);
    if (a === b) continue;
    if (b === null) out.push(`back up to the top: ${from} -> ${to}`);
    else if (to !== `${b}/mod.ts`) out.push(`past ${b}'s door: ${from} -> ${to}`);
    else if (a !== null && !(rules.rooms[a] ?? []).includes(b)) {
      out.push(`${a} may not use ${b}: ${from} -> ${to}`);
    }
  }
  return out;
}

/**
 * The arrows of `graph` (a repository) into a private file (`_name.ts`) under `folder` from
 * outside that file's own folder, except from the same folder under `mirror` (the tests of a
 * folder mirror it: `tests/daemon/network/` may test `daemon/network/_failover.ts`).
 */
export function privateReaches(
  graph: ImportGraph,
  folder: string,
  mirror: string,
): [string, string][] {
  return arrows(graph).filter(([from, to]) => {
    if (!to.startsWith(`${folder}/`) || !to.slice(to.lastIndexOf("/") + 1).startsWith("_")) {
      return false;
    }
    const home = to.slice(0, to.lastIndexOf("/"));
    const fromHome = from.slice(0, Math.max(0, from.lastIndexOf("/")));
    return fromHome !== home && fromHome !== mirror + home.slice(folder.length);
  });
}

/** The figures of a graph. */
export interface GraphFigures {
  /** Files and lines per folder (`.` for the root). */
  folders: Record<string, { files: number; lines: number }>;
  /** Files in all. */
  files: number;
  /** Lines in all. */
  lines: number;
  /** See {@linkcode floors}. */
  floors: number;
  /** The number of arrows. */
  arrows: number;
  /** See {@linkcode arrowsBackUp}. */
  arrowsBackUp: [string, string][];
  /** See {@linkcode circles}. */
  circles: string[][];
}

/** Computes the figures of `graph` (reads each file to count its lines). */
export function graphFigures(graph: ImportGraph): GraphFigures {
  const folders: Record<string, { files: number; lines: number }> = {};
  let lines = 0;
  for (const file of graph.files) {
    const folder = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : ".";
    const text = Deno.readTextFileSync(join(graph.root, file));
    const count = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    folders[folder] ??= { files: 0, lines: 0 };
    folders[folder].files++;
    folders[folder].lines += count;
    lines += count;
  }
  return {
    folders,
    files: graph.files.length,
    lines,
    floors: floors(graph),
    arrows: arrows(graph).length,
    arrowsBackUp: arrowsBackUp(graph),
    circles: circles(graph),
  };
}

/** The figures as lines of text. */
export function formatFigures(name: string, figures: GraphFigures): string {
  const rows = Object.entries(figures.folders).sort(([a], [b]) => a.localeCompare(b));
  return [
    `${name}: ${figures.files} files, ${figures.lines} lines; ${figures.floors} floors, ` +
    `${figures.arrows} arrows, ${figures.arrowsBackUp.length} back up, ` +
    `${figures.circles.length} circles`,
    ...rows.map(([folder, f]) => `  ${folder}/: ${f.files} files, ${f.lines} lines`),
    ...figures.arrowsBackUp.map(([from, to]) => `  back up: ${from} -> ${to}`),
    ...figures.circles.map((circle) => `  circle: ${circle.join(", ")}`),
  ].join("\n");
}

if (import.meta.main) {
  const dir = Deno.args[0];
  if (!dir) {
    console.error("Usage: deno run -A tools/import_graph.ts <folder>");
    Deno.exit(2);
  }
  const graph = await importGraph(dir);
  console.log(formatFigures(relative(Deno.cwd(), graph.root) || ".", graphFigures(graph)));
  console.log(`  floors with the doors walked through: ${floors(throughDoors(graph))}`);
}
