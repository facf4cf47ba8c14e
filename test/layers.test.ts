/**
 * The layers of src/: each room (a folder, or a few top-level files) may
 * import only from itself and from the rooms listed for it below, so that
 * every arrow runs down. docs/layout.md describes the rooms; this list is
 * the rule, and this test fails when an import runs against it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { posix } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

/** The rooms of src/, each a list of folders (ending in "/") and files; a file belongs to the room of its longest match. */
const roomPaths = {
  base: [
    "errors.ts",
    "types.ts",
    "clock.ts",
    "deferred.ts",
    "cap-gate.ts",
    "option-checks.ts",
    "closest-name.ts",
    "compiled-validators.ts",
    "optional-packages.ts",
  ],
  tools: ["tools/"],
  contracts: ["contracts/"],
  options: ["options.ts"],
  events: ["events.ts"],
  tracing: ["tracing/"],
  wire: ["workers/protocol.ts", "workers/repeated-strings.ts"],
  "worker-thread": ["workers/thread/"],
  workers: ["workers/"],
  fleet: ["fleet/"],
  validation: ["coordinator/validation/"],
  coordinator: ["coordinator/"],
  runtime: ["runtime.ts", "runtime/"],
  "tool-sets": ["builtin-tools.ts", "coding-tools.ts"],
  http: ["http/"],
  "live-view": ["server/live-view/"],
  server: ["server/"],
  mcp: ["mcp/"],
  "pi-extension": ["pi-extension/"],
  ui: ["ui/"],
  entry: ["index.ts"],
  cli: ["cli/"],
} as const satisfies Record<string, readonly string[]>;

type Room = keyof typeof roomPaths;

/** The allowed directions: the rooms each room may import from, besides itself. */
const allowedImports: Record<Room, readonly Room[]> = {
  base: [],
  tools: ["base"],
  contracts: ["base"],
  options: ["base", "contracts"],
  events: ["base"],
  tracing: ["base", "contracts"],
  wire: ["base"],
  "worker-thread": ["base", "tracing", "wire"],
  // Not tools: a tool set's needs of the threads come as hooks (contracts/thread-hooks.ts).
  workers: ["base", "contracts", "options", "wire", "worker-thread"],
  fleet: ["base", "contracts", "options", "events", "wire", "workers"],
  validation: ["base"],
  coordinator: ["base", "contracts", "options", "events", "tracing", "validation"],
  runtime: ["base", "contracts", "options", "events", "tracing", "workers", "fleet", "coordinator"],
  "tool-sets": ["base", "contracts", "tools"],
  http: ["base"],
  "live-view": ["base", "contracts", "events", "runtime", "http"],
  server: ["base", "contracts", "options", "events", "runtime", "http", "live-view"],
  mcp: ["base", "contracts", "events", "runtime", "http"],
  "pi-extension": ["base", "runtime", "tool-sets"],
  ui: [],
  entry: ["base", "contracts", "options", "events", "runtime", "tool-sets", "fleet", "server"],
  cli: ["base", "options", "entry", "tool-sets", "server", "mcp", "http"],
};

const srcRoot = fileURLToPath(new URL("../src/", import.meta.url));

/** The room of a file, by its path under src/; `undefined` for a file in no room. */
function roomOf(file: string): Room | undefined {
  let best: { room: Room; length: number } | undefined;
  for (const [room, paths] of Object.entries(roomPaths) as [Room, readonly string[]][]) {
    for (const path of paths) {
      const isMatch = path.endsWith("/") ? file.startsWith(path) : file === path;
      if (isMatch && (best === undefined || path.length > best.length)) best = { room, length: path.length };
    }
  }
  return best?.room;
}

/**
 * The relative module specifiers a source text imports: `import … from`,
 * `export … from`, side-effect `import "…"`, dynamic `import("…")`, and
 * `new URL("….js", import.meta.url)` (a module loaded by its URL, such as a
 * worker's entry). Comments are removed first, so that an example in TSDoc
 * is no import.
 */
function findImports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
    /\bnew URL\(\s*["']([^"']+\.c?js)["']\s*,\s*import\.meta\.url\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((match) => match[1]!)).filter((specifier) => specifier.startsWith("."));
}

/**
 * Where a relative specifier of `file` points under src/ (`.js` written for
 * `.ts`; `.cjs` for a module the build bundles from its `.ts`), or
 * `undefined` outside src/.
 */
function resolveImport(file: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  const target = posix.normalize(posix.join(posix.dirname(file), specifier));
  if (target.startsWith("../")) return undefined;
  if (files.has(target)) return target;
  const typescript = target.replace(/\.c?js$/, ".ts");
  return files.has(typescript) ? typescript : target;
}

/** Why `from` may not import `to`, or `undefined` when it may. */
function checkImport(from: string, to: string): string | undefined {
  const fromRoom = roomOf(from);
  const toRoom = roomOf(to);
  if (fromRoom === undefined) return `${from} is in no room`;
  if (toRoom === undefined) return `${to} (imported by ${from}) is in no room`;
  if (fromRoom === toRoom || allowedImports[fromRoom].includes(toRoom)) return undefined;
  return `${from} (${fromRoom}) imports ${to} (${toRoom}), which ${fromRoom} may not`;
}

function listSourceFiles(dir = srcRoot, prefix = ""): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return listSourceFiles(`${dir}${entry.name}/`, `${prefix}${entry.name}/`);
    return /\.(ts|js|mjs)$/.test(entry.name) ? [`${prefix}${entry.name}`] : [];
  });
}

describe("layers", () => {
  const files = listSourceFiles();
  const fileSet = new Set(files);
  const edges = files.flatMap((from) =>
    findImports(readFileSync(`${srcRoot}${from}`, "utf8")).flatMap((specifier) => {
      const to = resolveImport(from, specifier, fileSet);
      return to === undefined ? [] : [{ from, to, specifier }];
    }),
  );

  it("puts every source file in a room", () => {
    expect(files.filter((file) => roomOf(file) === undefined)).toEqual([]);
  });

  it("lists directions that run one way (no cycle among the rooms)", () => {
    const rooms = Object.keys(allowedImports) as Room[];
    const placed = new Set<Room>();
    while (placed.size < rooms.length) {
      const next = rooms.filter((room) => !placed.has(room) && allowedImports[room].every((below) => placed.has(below)));
      expect(next, `rooms left in a cycle: ${rooms.filter((room) => !placed.has(room)).join(", ")}`).not.toEqual([]);
      for (const room of next) placed.add(room);
    }
  });

  it("finds the imports of the source (the check reads what it checks)", () => {
    // Sanity bounds: the source has hundreds of imports, and each resolves to a file of src/ or outside it.
    expect(edges.length).toBeGreaterThan(300);
    const unresolved = edges.filter(({ to, specifier }) => !fileSet.has(to) && /\.c?js$/.test(specifier) && !to.startsWith("vendor/"));
    expect(unresolved).toEqual([]);
  });

  it("has no import that runs back up the layers", () => {
    // A file the build writes (dist/vendor/) is in no room; the check above lists those.
    const violations = edges
      .filter(({ to }) => fileSet.has(to))
      .map(({ from, to }) => checkImport(from, to))
      .filter((violation) => violation !== undefined);
    expect(violations).toEqual([]);
  });

  it("rejects an import that runs back up, by the same check", () => {
    expect(checkImport("contracts/pool-contract.ts", "workers/worker-pool.ts")).toMatch(/contracts may not/);
    expect(checkImport("workers/worker-pool.ts", "runtime.ts")).toMatch(/workers may not/);
    expect(checkImport("workers/piscina-host.ts", "tools/coding/process-tree.ts")).toMatch(/workers may not/);
    expect(checkImport("workers/thread/worker-entry.ts", "tools/coding/path-lock-table.ts")).toMatch(/worker-thread may not/);
    expect(checkImport("mcp/mcp-server.ts", "server/create-server.ts")).toMatch(/mcp may not/);
    expect(checkImport("workers/worker-pool.ts", "contracts/pool-contract.ts")).toBeUndefined();
    expect(checkImport("workers/worker-pool.ts", "workers/call-queue.ts")).toBeUndefined();
  });

  it("has no file over 500 lines without the reason at its top, in the source, the tests, the benches and the scripts", () => {
    // The reason reads "Longer than the house's ~400 lines: …" in the file's first comment.
    const roots = ["src/", "test/", "bench/", "scripts/"].map((room) => fileURLToPath(new URL(`../${room}`, import.meta.url)));
    const unexplained = roots.flatMap((root) =>
      listSourceFiles(root)
        .map((file) => `${root}${file}`)
        .filter((path) => {
          const text = readFileSync(path, "utf8");
          return text.split("\n").length > 500 && !text.slice(0, text.indexOf("*/")).includes("Longer than the house's");
        }),
    );
    expect(unexplained).toEqual([]);
  });

  it("reads every form of import, and none in comments", () => {
    const text = [
      'import type { A } from "./a.js";',
      "import {",
      "  b,",
      '} from "../b.js";',
      'export { c } from "./c.js";',
      'import "./d.js";',
      'const e = await import("./e.js");',
      'const f = new URL("./f.js", import.meta.url);',
      '// import { x } from "./comment.js";',
      '/** @example import { y } from "./doc.js"; */',
      'import { z } from "node:path";',
    ].join("\n");
    expect(findImports(text).sort()).toEqual(["../b.js", "./a.js", "./c.js", "./d.js", "./e.js", "./f.js"]);
  });
});
