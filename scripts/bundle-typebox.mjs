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
