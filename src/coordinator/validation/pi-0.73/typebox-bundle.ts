/**
 * TypeBox from the build's bundle and V8 code cache in dist/vendor/ (docs/design.md). V8 checks only the
 * source's length against the cache, so nothing but the build may edit either file. @module
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Script } from "node:vm";

import type { Compile } from "typebox/compile";
import type { Format } from "typebox/format";
import type { Value } from "typebox/value";

interface Typebox {
  Compile: typeof Compile;
  Value: typeof Value;
  /** The bundle's own format registry (see `adoptApplicationFormats`). */
  Format: typeof Format;
}

const bundleUrl = new URL("../../../vendor/typebox.cjs", import.meta.url);
const cacheUrl = new URL("../../../vendor/typebox.cjs.v8cache", import.meta.url);

/** The build caches this very script. */
export function createTypeboxScript(cachedData?: Buffer): Script {
  // ASCII only (the build escapes everything else), so latin1 reads it as is, without decoding UTF-8.
  const source = readFileSync(bundleUrl, "latin1");
  return new Script(`(function (exports) {${source}\n})`, { filename: bundleUrl.href, ...(cachedData === undefined ? {} : { cachedData }) });
}

export function evaluateTypeboxScript(script: Script): Typebox {
  const exports = {};
  (script.runInThisContext() as (exports: object) => void)(exports);
  return exports as Typebox;
}

let typebox: Typebox | undefined;

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
/** null when it cannot be loaded synchronously. */
let installedFormats: typeof Format | null | undefined;

/**
 * Copies formats an application registered on the installed `typebox/format` (which pi-ai sees)
 * into the bundle's registry; TypeBox binds format checks at compile time, so this runs before each compile.
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
