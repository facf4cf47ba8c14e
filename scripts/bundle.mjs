/**
 * The build's bundles, made by `npm run build` after tsc (rolldown):
 *
 * - dist/vendor/typebox.cjs: the parts of TypeBox that argument validation
 *   uses (`Compile`, `Value`) as one CommonJS file, and
 *   dist/vendor/typebox.cjs.v8cache, V8's code cache of it. TypeBox ships as
 *   hundreds of small ES modules, slow to load on the first validator
 *   compile (so on every `createRuntime`); one file parses far faster, and
 *   faster still with the cache (src/coordinator/validation/pi-0.73/typebox-bundle.ts loads
 *   both; "Cold start" in docs/design.md has the figures). The cache
 *   is made after compiling a validator, so that the functions a first
 *   compile runs are in it; V8 rejects a cache made by another version or
 *   with other flags, and toolpool then compiles the bundle as usual. The
 *   bundle is TypeBox's own code at the installed version, tree-shaken, not
 *   minified.
 * - dist/vendor/pi-schema.cjs: `@earendil-works/pi-schema` 1.6.0's `compile`
 *   and `formats` (pi 1.6's argument validation, `pi: "1.6"`) as one CommonJS
 *   file, with its license beside it (pi-schema.cjs.LICENSE). pi-schema is a
 *   devDependency, not a dependency: it declares Node >= 22.19, so installing
 *   it made every install on Node 20 warn (EBADENGINE) for a part that only
 *   runs on 22.19 and later. Its own code at that version, not minified;
 *   src/coordinator/validation/pi-1.6/validate-arguments-16.ts loads it on
 *   the first pi 1.6 compile.
 * - dist/workers/thread/worker-entry.cjs: the worker entry with the few toolpool
 *   modules it imports, as one CommonJS file, because every worker thread
 *   loads it before its first call, and one CommonJS file loads fastest
 *   (Piscina's worker loop `require`s it without the ES module loader). Packages stay
 *   outside it. The pool starts its workers on this file.
 * - dist/index.js, the package entry: toolpool's own modules on the import
 *   path as one file, in place of tsc's index.js, because `import("toolpool")`
 *   loaded dozens of them, which takes far longer as modules than as one file.
 *   Packages stay outside; so do the files toolpool loads by URL or path (the
 *   worker entry, the built-in tools, dist/validators/, dist/vendor/). Every
 *   other file of dist/ stays as tsc wrote it, with its .d.ts, for the CLI,
 *   the `toolpool/mcp` entry and the declarations.
 *
 * - dist/ui/: the live view's page, script and style sheet (src/ui/), copied
 *   as they are: the browser runs them without a build step.
 *
 * In both bundles, a module's `import.meta.url` is rewritten to its own file's
 * URL (relative to the bundle), so that what it finds by a relative path is
 * where it was.
 */
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { build } from "rolldown";

const root = fileURLToPath(new URL("../", import.meta.url));
/** The pi-schema that pi-ai 1.6.0 validates with, which dist/vendor/pi-schema.cjs must be. */
const piSchemaVersion = "1.6.0";
const dist = new URL("../dist/", import.meta.url);
const path = (relative) => fileURLToPath(new URL(relative, dist));

/** Bundles the exports that `source` (an ES module of re-exports) names into dist/vendor/NAME.cjs, one CommonJS file. */
async function bundleVendor(name, source) {
  const entry = path(`vendor/${name}-entry.mjs`);
  await mkdir(new URL("vendor/", dist), { recursive: true });
  await writeFile(entry, source);
  try {
    await build({
      cwd: root,
      input: entry,
      platform: "node",
      logLevel: "warn",
      output: { file: path(`vendor/${name}.cjs`), format: "cjs", strict: true },
    });
  } finally {
    await rm(entry, { force: true });
  }
}

// TypeBox.
await bundleVendor(
  "typebox",
  'export { Compile } from "typebox/compile";\nexport { Value } from "typebox/value";\nexport { Format } from "typebox/format";\n',
);
// ASCII only, so that toolpool reads it as latin1, without decoding UTF-8
// (a cost on every first compile): the few other characters (in string literals)
// become \u escapes, which mean the same there, in comments and in regexes.
const typeboxSource = await readFile(path("vendor/typebox.cjs"), "utf8");
// Not so in a template literal (String.raw would keep the escape as text): refuse rather than guess.
for (const line of typeboxSource.split("\n")) {
  if (/[^\x00-\x7f]/.test(line) && line.includes("`"))
    throw new Error(`bundle: a non-ASCII character in a template literal of TypeBox: ${line.trim()}`);
}
await writeFile(
  path("vendor/typebox.cjs"),
  typeboxSource.replace(/[^\x00-\x7f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`),
);
const { createTypeboxScript, evaluateTypeboxScript } = await import(new URL("coordinator/validation/pi-0.73/typebox-bundle.js", dist).href);
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

// pi-schema, with its license and the notice it carries for TypeBox.
const piSchemaPackage = JSON.parse(await readFile(new URL("../node_modules/@earendil-works/pi-schema/package.json", import.meta.url), "utf8"));
if (piSchemaPackage.version !== piSchemaVersion) {
  throw new Error(`bundle: expected @earendil-works/pi-schema ${piSchemaVersion} (pi 1.6's), found ${piSchemaPackage.version}`);
}
await bundleVendor(
  "pi-schema",
  'export { compile } from "@earendil-works/pi-schema";\nexport { formats } from "@earendil-works/pi-schema/formats";\n',
);
const typeboxNotice = await readFile(
  new URL("../node_modules/@earendil-works/pi-schema/THIRD_PARTY_NOTICES/typebox-LICENSE", import.meta.url),
  "utf8",
);
const piSchemaLicense = await readFile(new URL("licenses/pi-schema-LICENSE", import.meta.url), "utf8");
await writeFile(
  path("vendor/pi-schema.cjs.LICENSE"),
  `${piSchemaLicense.trimEnd()}\n\n---\n\npi-schema's format checks are adapted from TypeBox (its THIRD_PARTY_NOTICES/typebox-LICENSE):\n\n${typeboxNotice.trimEnd()}\n`,
);

/** Packages load as they are: only toolpool's own modules go in a bundle. */
const isPackage = (id) => !id.startsWith(".") && !id.startsWith("/");

/**
 * A rolldown plugin: in a bundle that lands in `baseDir`, each module's
 * `import.meta.url` becomes its own file's URL (but `keep`'s, whose file the
 * bundle replaces), so that what it finds by a relative path is where it was.
 */
function ownImportMetaUrl(baseDir, keep) {
  return {
    name: "own-import-meta-url",
    transform(code, id) {
      if (!code.includes("import.meta.url") || id === keep) return null;
      const own = relative(baseDir, id).split(sep).join("/");
      return { code: code.replaceAll("import.meta.url", `new URL(${JSON.stringify(`./${own}`)}, import.meta.url).href`), map: null };
    },
  };
}

/**
 * Bundles `dist/<file>` and its toolpool imports into one file, as
 * `dist/<output>` (by default in the place of tsc's file), with its source map.
 */
async function bundle(file, output = file, format = "esm") {
  const target = path(file);
  const bundled = path(output).replace(/\.c?js$/, ".bundle.js");
  const targetDir = new URL(".", pathToFileURL(target));
  await build({
    cwd: root,
    input: target,
    platform: "node",
    logLevel: "warn",
    external: isPackage,
    plugins: [ownImportMetaUrl(fileURLToPath(targetDir), target)],
    // Strict, as the ES modules bundled were.
    output: { file: bundled, format, sourcemap: true, strict: true },
  });
  const code = await readFile(bundled, "utf8");
  const name = basename(path(output));
  await writeFile(path(output), code.replace(`sourceMappingURL=${basename(bundled)}.map`, `sourceMappingURL=${name}.map`));
  await rename(`${bundled}.map`, `${path(output)}.map`);
  await rm(bundled);
}

await bundle("workers/thread/worker-entry.js", "workers/thread/worker-entry.cjs", "cjs");

/**
 * The three entries a process may load (the package, `toolpool/mcp`, the
 * CLI) built together, so that each of toolpool's modules is in exactly one
 * file whichever entries load: rolldown puts what they share in chunks. All
 * of it lands in dist/ itself (dist/index.js in the place of tsc's, the two
 * others as `entry-*.js`, the chunks as `chunk-*.js`), so that a module's
 * rewritten `import.meta.url` (relative to dist/) holds wherever its code
 * ended up; dist/mcp/index.js and dist/cli/main.js become one-line files that
 * load their entry. The modules the package entry may load form one chunk,
 * so that `import("toolpool")` reads two of toolpool's files.
 */
/** One of toolpool's own modules that the package entry may load (not the CLI's, not MCP's). */
function isPackageModule(id) {
  const distDir = fileURLToPath(dist);
  return id.startsWith(distDir) && !/^(cli|mcp)[\\/]/.test(id.slice(distDir.length));
}

async function bundleEntries(entries) {
  const staging = path("bundle-staging/");
  await rm(staging, { recursive: true, force: true });
  await build({
    cwd: root,
    input: Object.fromEntries(entries.map(({ name, file }) => [name, path(file)])),
    platform: "node",
    logLevel: "warn",
    external: isPackage,
    plugins: [ownImportMetaUrl(fileURLToPath(dist))],
    // Strict, as the ES modules bundled were.
    output: {
      dir: staging,
      format: "esm",
      sourcemap: true,
      strict: true,
      entryFileNames: "[name].js",
      chunkFileNames: "chunk-[hash].js",
      // Everything the package entry needs in one chunk, so that `import("toolpool")` reads two files (the entry and it).
      codeSplitting: { groups: [{ name: "toolpool", test: (id) => isPackageModule(id) }] },
    },
  });
  // A build's chunks replace the last build's (their names hold a hash of their content).
  for (const file of await readdir(dist)) if (/^(chunk|entry)-.*\.js(\.map)?$/.test(file)) await rm(path(file));
  for (const file of await readdir(staging)) await rename(join(staging, file), path(file));
  await rm(staging, { recursive: true, force: true });
  for (const { name, file, prefix = "" } of entries) {
    if (`${name}.js` === file) continue;
    const fromFile = relative(dirname(path(file)), path(`${name}.js`))
      .split(sep)
      .join("/");
    await writeFile(path(file), `${prefix}export * from ${JSON.stringify(fromFile.startsWith(".") ? fromFile : `./${fromFile}`)};\n`);
    await rm(`${path(file)}.map`, { force: true });
  }
}

await bundleEntries([
  { name: "index", file: "index.js" },
  { name: "entry-mcp", file: "mcp/index.js" },
  { name: "entry-cli", file: "cli/main.js", prefix: "#!/usr/bin/env node\n" },
]);

// The live view's files, served as they are.
await rm(new URL("ui/", dist), { recursive: true, force: true });
await mkdir(new URL("ui/", dist), { recursive: true });
for (const file of await readdir(new URL("../src/ui/", import.meta.url))) {
  await copyFile(new URL(`../src/ui/${file}`, import.meta.url), new URL(`ui/${file}`, dist));
}
