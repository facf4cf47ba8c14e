/**
 * TypeBox, as argument validation uses it, loaded on the first validator
 * compile from dist/vendor/: `typebox.cjs`, the build.s one-file bundle of
 * TypeBox's `Compile` and `Value` (scripts/bundle.mjs), and
 * `typebox.cjs.v8cache`, V8's code cache of it made by the build.
 *
 * Why not `import "typebox/compile"`: TypeBox ships as ~680 small ES modules,
 * which took ~400 ms to load; the bundle parses in ~15 ms, and ~2 ms with
 * the code cache. V8 checks that a cache matches its version, flags and the
 * source, and rejects one that does not: the bundle then just compiles as
 * usual. Synchronous, so that `createRuntime` stays synchronous; never
 * loaded by `import("toolpool")`.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { Script } from "node:vm";

import type { Compile } from "typebox/compile";
import type { Value } from "typebox/value";

/** The TypeBox functions validation uses. */
export interface Typebox {
  Compile: typeof Compile;
  Value: typeof Value;
}

const bundleUrl = new URL("../vendor/typebox.cjs", import.meta.url);
const cacheUrl = new URL("../vendor/typebox.cjs.v8cache", import.meta.url);

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
