/**
 * Loads a tool module as `import(url)` does, with `require()` where that is
 * safe: it skips the asynchronous loader on a worker's first call, and gives
 * the same namespace from the same module cache. Only a plain file URL
 * qualifies: a query or fragment makes another module instance, which a
 * path cannot name. Anything else, a CommonJS module included (only
 * `import()` makes its namespace), takes `import()`, so a failure is the one
 * `import()` reports; a module whose own code throws runs once.
 *
 * @module
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { types } from "node:util";

const require = createRequire(import.meta.url);
const canRequireEsm = (process.features as { require_module?: boolean }).require_module === true && isRequireEsmSafe(process.versions.node);

/**
 * From Node 25: before it, terminating a worker while `require()`
 * instantiates an ES module aborts the process (docs/node-versions.md;
 * https://github.com/nodejs/node/pull/59703), and the pool terminates workers.
 */
function isRequireEsmSafe(version: string): boolean {
  const [major = 0] = version.split(".").map(Number);
  return major >= 25;
}

/**
 * Failures of `require()` after which the module has not run, so `import()`
 * may retry it. Any other failure is the module's own code throwing, which
 * `import()` would run again.
 */
const retryUnderImport = new Set([
  "ERR_REQUIRE_ASYNC_MODULE",
  "ERR_REQUIRE_CYCLE_MODULE",
  "ERR_REQUIRE_ESM",
  "MODULE_NOT_FOUND",
  "ERR_UNKNOWN_FILE_EXTENSION",
]);

export function importToolModule(url: string): Promise<Record<string, unknown>> {
  if (canRequireEsm && url.startsWith("file:") && !url.includes("?") && !url.includes("#")) {
    try {
      const loaded: unknown = require(fileURLToPath(url));
      if (types.isModuleNamespaceObject(loaded)) return Promise.resolve(loaded as Record<string, unknown>);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (!(error instanceof SyntaxError) && !(typeof code === "string" && retryUnderImport.has(code))) return Promise.reject(error);
    }
  }
  return import(url) as Promise<Record<string, unknown>>;
}
