/**
 * Bundles the parts of TypeBox that argument validation uses (`Compile`,
 * `Value`) into one CommonJS file, dist/vendor/typebox.cjs, run by
 * `npm run build` after tsc.
 *
 * Why: TypeBox ships as ~680 small ES modules; loading them took ~400 ms on
 * the first validator compile (so on every `createRuntime`), the same code
 * as one file takes ~25 ms. CommonJS so that toolpool loads it synchronously,
 * with `createRequire`, on first use (`createRuntime` stays synchronous and
 * `import("toolpool")` never loads it). The bundle is TypeBox's own code at
 * the version in package.json, tree-shaken, not minified.
 *
 * Then V8's code cache of the bundle, dist/vendor/typebox.cjs.v8cache, made
 * after compiling a validator with it, so that the functions a first compile
 * runs are in the cache (see src/coordinator/typebox-bundle.ts). V8 rejects a
 * cache made by another version or with other flags; toolpool then compiles
 * the bundle as usual.
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

import { build } from "rolldown";

const root = fileURLToPath(new URL("../", import.meta.url));
const entry = fileURLToPath(new URL("../dist/vendor/typebox-entry.mjs", import.meta.url));

await mkdir(new URL("../dist/vendor/", import.meta.url), { recursive: true });
await writeFile(entry, 'export { Compile } from "typebox/compile";\nexport { Value } from "typebox/value";\n');
try {
  await build({
    cwd: root,
    input: entry,
    platform: "node",
    logLevel: "warn",
    output: { file: fileURLToPath(new URL("../dist/vendor/typebox.cjs", import.meta.url)), format: "cjs" },
  });
} finally {
  await rm(entry, { force: true });
}

const { createTypeboxScript, evaluateTypeboxScript } = await import(new URL("../dist/coordinator/typebox-bundle.js", import.meta.url).href);
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
await writeFile(new URL("../dist/vendor/typebox.cjs.v8cache", import.meta.url), script.createCachedData());
