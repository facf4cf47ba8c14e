/**
 * The build's bundles, made by `npm run build` after tsc (rolldown):
 *
 * - dist/vendor/typebox.cjs: the parts of TypeBox that argument validation
 *   uses (`Compile`, `Value`) as one CommonJS file, and
 *   dist/vendor/typebox.cjs.v8cache, V8's code cache of it. TypeBox ships as
 *   ~680 small ES modules, which took ~400 ms to load on the first validator
 *   compile (so on every `createRuntime`); the bundle parses in ~15 ms, ~6 ms
 *   with the cache (src/coordinator/typebox-bundle.ts loads both). The cache
 *   is made after compiling a validator, so that the functions a first
 *   compile runs are in it; V8 rejects a cache made by another version or
 *   with other flags, and toolpool then compiles the bundle as usual. The
 *   bundle is TypeBox's own code at the installed version, tree-shaken, not
 *   minified.
 * - dist/workers/worker-entry.js: the worker entry with the few toolpool
 *   modules it imports, in place of tsc's file, because every worker thread
 *   loads it before its first call (measured: 7.6 ms as 8 modules, 4.9 ms as
 *   one). Packages stay outside it.
 */
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

import { build } from "rolldown";

const root = fileURLToPath(new URL("../", import.meta.url));
const dist = new URL("../dist/", import.meta.url);
const path = (relative) => fileURLToPath(new URL(relative, dist));

// TypeBox.
const entry = path("vendor/typebox-entry.mjs");
await mkdir(new URL("vendor/", dist), { recursive: true });
await writeFile(entry, 'export { Compile } from "typebox/compile";\nexport { Value } from "typebox/value";\n');
try {
  await build({ cwd: root, input: entry, platform: "node", logLevel: "warn", output: { file: path("vendor/typebox.cjs"), format: "cjs" } });
} finally {
  await rm(entry, { force: true });
}
const { createTypeboxScript, evaluateTypeboxScript } = await import(new URL("coordinator/typebox-bundle.js", dist).href);
const script = createTypeboxScript();
const { Compile, Value } = evaluateTypeboxScript(script);
const schema = {
  type: "object",
  properties: { text: { type: "string", minLength: 1 }, count: { type: "integer", minimum: 0 }, tags: { type: "array", items: { type: "string" } } },
  required: ["text"],
  additionalProperties: false,
};
const validator = Compile(schema);
validator.Check({ text: "a", count: 1, tags: [] });
[...validator.Errors({ count: "x" })];
Value.Convert(schema, { text: "a", count: "1" });
await writeFile(path("vendor/typebox.cjs.v8cache"), script.createCachedData());

// The worker entry: bundled beside tsc's file, then put in its place.
const workerEntry = path("workers/worker-entry.js");
const bundled = path("workers/worker-entry.bundle.js");
await build({
  cwd: root,
  input: workerEntry,
  platform: "node",
  logLevel: "warn",
  // Packages load as they are (only toolpool's own modules go in).
  external: (id) => !id.startsWith(".") && !id.startsWith("/"),
  output: { file: bundled, format: "esm", sourcemap: true },
});
const code = await readFile(bundled, "utf8");
await writeFile(workerEntry, code.replace("sourceMappingURL=worker-entry.bundle.js.map", "sourceMappingURL=worker-entry.js.map"));
await rename(`${bundled}.map`, `${workerEntry}.map`);
await rm(bundled);
