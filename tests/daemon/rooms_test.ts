/**
 * `daemon/` keeps its rooms: its import graph, as Deno resolves it, has no circle; an arrow from
 * one room to another goes through that room's `mod.ts` to a room it may use (never back up or
 * sideways); nothing outside a room reaches its private `_name.ts` files (but the room's own
 * tests, `tests/daemon/<room>/`); `tests/daemon/` mirrors the rooms; and `docs/daemon.md`'s map
 * lists the same rooms with the same uses. The rules are declared once, here ({@linkcode ROOMS}).
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  arrows,
  circles,
  type ImportGraph,
  importGraph,
  privateReaches,
  roomViolations,
} from "../../tools/import_graph.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Each room of `daemon/` and the rooms it may use (lower ones only). */
const ROOMS: Readonly<Record<string, readonly string[]>> = {
  core: [],
  gateway: ["core"],
  surface: ["core"],
  trust: ["core", "gateway"],
  sealing: ["core", "gateway"],
  network: ["core", "gateway", "trust", "sealing"],
  openai: ["core", "surface"],
  ollama: ["core", "surface"],
  anthropic: ["core", "surface"],
  account: ["core", "surface"],
  service: [
    "core",
    "gateway",
    "surface",
    "trust",
    "sealing",
    "network",
    "openai",
    "ollama",
    "anthropic",
    "account",
  ],
};

const CONFIG = { config: `${ROOT}deno.json` };
const daemon = await importGraph(`${ROOT}daemon`, CONFIG);

Deno.test("daemon/ has no circle, and every arrow between rooms goes down through a door", () => {
  assert.ok(daemon.files.length > 50, `only ${daemon.files.length} files read`);
  assert.ok(arrows(daemon).length > 100, "the graph has too few arrows to be the real one");
  assert.deepEqual(roomViolations(daemon, { rooms: ROOMS }), []);
});

Deno.test("nothing outside a room of daemon/ reaches its private files but its tests", async () => {
  const repository = await importGraph(ROOT, CONFIG);
  const reaches = privateReaches(repository, "daemon", "tests/daemon");
  assert.deepEqual(reaches.map(([from, to]) => `${from} -> ${to}`), []);
  // The rule sees the tests' own reaches: they are real arrows, allowed.
  assert.ok(
    arrows(repository).some(([from, to]) =>
      from.startsWith("tests/daemon/sealing/") && to === "daemon/sealing/_whole_reply.ts"
    ),
    "the repository's graph lacks a test's arrow into its room's private file",
  );
});

Deno.test("the checks fail on a circle, an arrow back up, sideways, past a door or to the top", () => {
  const graph = (imports: Record<string, string[]>): ImportGraph => ({
    root: "/nowhere",
    files: Object.keys(imports).sort(),
    imports: new Map(Object.entries(imports)),
  });
  const rules = { rooms: { low: [], left: ["low"], right: ["low"], high: ["left", "right"] } };
  const rooms = {
    "low/mod.ts": ["low/a.ts"],
    "low/a.ts": [],
    "left/mod.ts": [],
    "right/mod.ts": [],
    "high/mod.ts": [],
    "mod.ts": ["high/mod.ts"],
  };
  assert.deepEqual(roomViolations(graph(rooms), rules), []);
  assert.deepEqual(
    roomViolations(graph({ ...rooms, "low/a.ts": ["low/b.ts"], "low/b.ts": ["low/a.ts"] }), rules),
    ["circle: low/a.ts -> low/b.ts"],
  );
  assert.deepEqual(roomViolations(graph({ ...rooms, "low/a.ts": ["high/mod.ts"] }), rules), [
    "low may not use high: low/a.ts -> high/mod.ts",
  ]);
  assert.deepEqual(roomViolations(graph({ ...rooms, "left/mod.ts": ["right/mod.ts"] }), rules), [
    "left may not use right: left/mod.ts -> right/mod.ts",
  ]);
  assert.deepEqual(
    roomViolations(
      graph({ ...rooms, "high/mod.ts": ["low/_private.ts"], "low/_private.ts": [] }),
      rules,
    ),
    ["past low's door: high/mod.ts -> low/_private.ts"],
  );
  assert.deepEqual(
    roomViolations(graph({ ...rooms, "main.ts": [], "low/a.ts": ["main.ts"] }), rules),
    ["back up to the top: low/a.ts -> main.ts"],
  );
  assert.deepEqual(
    roomViolations(graph({ ...rooms, "mod.ts": ["high/x.ts"], "high/x.ts": [] }), rules),
    [
      "past high's door: mod.ts -> high/x.ts",
    ],
  );
  assert.deepEqual(roomViolations(graph({ ...rooms, "attic/x.ts": [] }), rules), [
    "attic/ is not a declared room",
  ]);
  assert.deepEqual(
    roomViolations(graph(rooms), { rooms: { ...rules.rooms, low: ["high"] } }),
    ["rules run in a circle: high, left, low, right"],
  );
  assert.deepEqual(
    privateReaches(
      graph({
        "daemon/low/_p.ts": [],
        "daemon/low/a.ts": ["daemon/low/_p.ts"],
        "tests/daemon/low/a_test.ts": ["daemon/low/_p.ts"],
        "tests/daemon/high/b_test.ts": ["daemon/low/_p.ts"],
        "bench/c.ts": ["daemon/low/_p.ts"],
      }),
      "daemon",
      "tests/daemon",
    ),
    [["bench/c.ts", "daemon/low/_p.ts"], ["tests/daemon/high/b_test.ts", "daemon/low/_p.ts"]],
  );
  assert.deepEqual(circles(graph({ "a.ts": ["b.ts"], "b.ts": ["a.ts"] })), [["a.ts", "b.ts"]]);
});

Deno.test("tests/daemon/ mirrors the rooms", () => {
  const folders = [...Deno.readDirSync(`${ROOT}tests/daemon`)]
    .filter((entry) => entry.isDirectory).map((entry) => entry.name).sort();
  assert.deepEqual(folders, Object.keys(ROOMS).sort());
});

Deno.test("docs/daemon.md's map lists every room with the rooms it uses", async () => {
  const doc = await Deno.readTextFile(`${ROOT}docs/daemon.md`);
  const section = doc.slice(
    doc.indexOf("\n## Rooms"),
    doc.indexOf("\n## ", doc.indexOf("\n## Rooms") + 1),
  );
  assert.ok(section.length > 100, "docs/daemon.md has no ## Rooms section");
  const rows = section.split("\n").filter((line) => /^\| `[a-z]+\/` /.test(line))
    .map((line) => line.split("|").map((cell) => cell.trim()));
  const documented = Object.fromEntries(rows.map((cells) => [
    cells[1].slice(1, -2),
    cells[3] === "—" ? [] : [...cells[3].matchAll(/`([a-z]+)`/g)].map((m) => m[1]).sort(),
  ]));
  const declared = Object.fromEntries(
    Object.entries(ROOMS).map(([room, uses]) => [room, [...uses].sort()]),
  );
  assert.deepEqual(documented, declared);
});
