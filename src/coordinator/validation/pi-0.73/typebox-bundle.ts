/**
 * TypeBox, as argument validation uses it, loaded on the first validator
 * compile from dist/vendor/: `typebox.cjs`, the build.s one-file bundle of
 * TypeBox's `Compile` and `Value` (scripts/bundle.mjs), and
 * `typebox.cjs.v8cache`, V8's code cache of it made by the build.
 *
 * Why not `import "typebox/compile"`: TypeBox ships as ~680 small ES modules,
 * which took ~400 ms to load; the bundle parses in ~15 ms, and ~2 ms with
 * the code cache. V8 rejects a cache made by another V8 version, with other
 * flags or for a source of another length, and the bundle then just
 * compiles as usual; it does not compare the source itself, so the build
 * writes the bundle and its cache together and nothing else may edit either.
 * Synchronous, so that `createRuntime` stays synchronous; never loaded by
 * `import("toolpool")`.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Script } from "node:vm";

import type { Compile } from "typebox/compile";
import type { Format } from "typebox/format";
import type { Value } from "typebox/value";

/** The TypeBox functions validation uses. */
interface Typebox {
  Compile: typeof Compile;
  Value: typeof Value;
  /** The bundle's own format registry (see `adoptApplicationFormats`). */
  Format: typeof Format;
}

const bundleUrl = new URL("../../../vendor/typebox.cjs", import.meta.url);
const cacheUrl = new URL("../../../vendor/typebox.cjs.v8cache", import.meta.url);

/** The bundle as one script whose value is a CommonJS-style module function (the build caches this very script). */
export function createTypeboxScript(cachedData?: Buffer): Script {
  // ASCII only (the build escapes everything else), so latin1 reads it as is, without decoding UTF-8.
  const source = readFileSync(bundleUrl, "latin1");
  return new Script(`(function (exports) {${source}\n})`, { filename: bundleUrl.href, ...(cachedData === undefined ? {} : { cachedData }) });
}

/** Runs the bundle's script and returns its exports. */
export function evaluateTypeboxScript(script: Script): Typebox {
  const exports = {};
  (script.runInThisContext() as (exports: object) => void)(exports);
  return exports as Typebox;
}

let typebox: Typebox | undefined;

/** TypeBox, loaded once per thread. */
export function loadTypebox(): Typebox {
  if (typebox === undefined) {
    let cachedData: Buffer | undefined;
    try {
      cachedData = readFileSync(cacheUrl);
    } catch {
      cachedData = undefined;
    }
    typebox = evaluateTypeboxScript(createTypeboxScript(cachedData));
  }
  return typebox;
}

const requireFromHere = createRequire(import.meta.url);
/** The `typebox/format` module of the installed TypeBox, once looked up; null when it cannot be loaded synchronously. */
let installedFormats: typeof Format | null | undefined;

/**
 * Copies into the bundle's format registry the formats of `schema` that it
 * lacks and the installed `typebox` package has: those an application
 * registered with `Format.Set` (of `typebox/format`), which pi-ai's
 * validation, on that package, sees. TypeBox binds a format's check when it
 * compiles a validator, so this runs before each compile. The installed
 * registry is loaded only when a schema names a format the bundle lacks, and
 * only where Node can `require()` an ES module (20.19+).
 */
export function adoptApplicationFormats(schema: unknown, bundled: typeof Format): void {
  for (const name of formatNames(schema, new Set(), 0)) {
    if (bundled.Has(name)) continue;
    if (installedFormats === undefined) installedFormats = loadInstalledFormats();
    const check = installedFormats?.Get(name);
    if (check !== undefined) bundled.Set(name, check);
  }
}

function loadInstalledFormats(): typeof Format | null {
  if ((process.features as { require_module?: boolean }).require_module !== true) return null;
  try {
    return (requireFromHere("typebox/format") as { Format: typeof Format }).Format;
  } catch {
    return null;
  }
}

/** The `format` values anywhere in a JSON schema (bounded by depth; schemas are checked JSON Schemas by then). */
function formatNames(schema: unknown, names: Set<string>, depth: number): Set<string> {
  if (depth > 64 || typeof schema !== "object" || schema === null) return names;
  if (Array.isArray(schema)) {
    for (const item of schema) formatNames(item, names, depth + 1);
    return names;
  }
  for (const key in schema) {
    if (!Object.hasOwn(schema, key)) continue;
    const value = (schema as Record<string, unknown>)[key];
    if (key === "format" && typeof value === "string") names.add(value);
    else formatNames(value, names, depth + 1);
  }
  return names;
}
