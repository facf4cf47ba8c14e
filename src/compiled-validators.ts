/**
 * toolpool's own JSON Schema validators (its option schemas), compiled by ajv at build time
 * (scripts/compile-validators.mjs writes them to dist/validators/ as
 * standalone CommonJS) and loaded on first use.
 *
 * Compiling them at runtime cost ~180 ms, most of it compiling the
 * meta-schema once per `Ajv` instance, and it ran when toolpool was imported.
 * Now importing toolpool compiles nothing and loads no ajv; a validator costs
 * one small `require` the first time it runs. The schemas stay next to the
 * code they describe (options.ts, builtin-tools.ts, …), which is where the
 * build script reads them from.
 *
 * @module
 */
import { createRequire } from "node:module";

import type { ErrorObject } from "ajv";

/** A validator as ajv compiles it: `errors` holds the failures of the last call that failed. */
interface CompiledValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** The validators the build compiles, by file name in dist/validators/. */
type CompiledValidatorName = "runtime-options" | "resource-limits" | "builtin-tools-options" | "fleet-options" | "server-options";

const require = createRequire(import.meta.url);

/** The validator named `name` (loaded once per thread: `require` caches it). */
export function compiledValidator(name: CompiledValidatorName): CompiledValidator {
  return require(`./validators/${name}.cjs`) as CompiledValidator;
}
