/**
 * Loads a tool module in a worker as `import(url)` does, faster on the first
 * call of each worker: an ES module is loaded with `require()` where Node
 * supports it safely (`process.features.require_module`, from Node 25: see
 * `isRequireEsmSafe`), which skips
 * the asynchronous loader (several times faster for a small module in a
 * fresh worker). Both give the same module namespace, from the same
 * module cache.
 *
 * Only a plain file URL qualifies: a query or a fragment makes another module
 * instance for `import()` (the built-in tools take their workspace root that
 * way), which a path cannot name.
 *
 * Anything else takes `import()` itself: a CommonJS module (whose namespace
 * only `import()` makes; `require` has loaded it by then, and `import()`
 * reuses that), a module `require` cannot load (top-level await), another
 * URL, and a module that was not found or did not compile, so that the
 * failure is the one `import()` reports. A module whose own code throws while
 * loading runs once: its error is the load's failure.
 *
 * @module
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { types } from "node:util";

const require = createRequire(import.meta.url);
const canRequireEsm = (process.features as { require_module?: boolean }).require_module === true && isRequireEsmSafe(process.versions.node);

/**
 * Where `require()` of an ES module is safe in a worker that may be
 * terminated: from Node 25. Before it, a worker terminated while `require()`
 * instantiates an ES module aborts the whole process (its synchronous
 * instantiation asks V8 `Module::IsGraphAsync` of a module whose
 * instantiation the termination cut short: "FATAL ERROR:
 * v8::Module::IsGraphAsync must be used on an instantiated module", seen on
 * Node 22.23.5), and the pool terminates workers (timeouts, aborts, a
 * forced close). Node reworked that path in
 * https://github.com/nodejs/node/pull/59703. Node 22.12 and 23.0–23.4 also
 * print an ExperimentalWarning on the first `require()` of an ES module.
 */
function isRequireEsmSafe(version: string): boolean {
  const [major = 0] = version.split(".").map(Number);
  return major >= 25;
}

/**
 * Failures of `require()` after which the module has not run, so that
 * `import()` can try it without running anything twice: it is an ES module
 * `require` cannot load (top-level await, a cycle), or was not found, or
 * did not compile. Any other failure is the module's own code throwing: a
 * CommonJS module would run again under `import()`, so that failure is the
 * call's (an ES module's failure would be the same error under `import()`).
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
      // Otherwise import() below reports the failure, as it would have alone.
    }
  }
  return import(url) as Promise<Record<string, unknown>>;
}
