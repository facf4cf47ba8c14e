/**
 * toolpool's option validators, compiled by ajv at build time (scripts/compile-validators.mjs, into dist/validators/),
 * so that importing toolpool compiles nothing and loads no ajv. The schemas stay beside the code they describe.
 */
import { createRequire } from "node:module";

import type { ErrorObject } from "ajv";

/** `errors` holds the failures of the last call that failed. */
interface CompiledValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

type CompiledValidatorName = "runtime-options" | "resource-limits" | "builtin-tools-options" | "fleet-options" | "server-options";

const require = createRequire(import.meta.url);

/** Loaded once per thread: `require` caches it. */
export function compiledValidator(name: CompiledValidatorName): CompiledValidator {
  return require(`./validators/${name}.cjs`) as CompiledValidator;
}
