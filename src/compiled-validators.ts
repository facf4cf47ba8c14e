/** Option validators compiled at build time (scripts/compile-validators.mjs), so importing toolpool loads no ajv. */
import { createRequire } from "node:module";

import type { ErrorObject } from "ajv";

/** `errors` holds the failures of the last call that failed. */
interface CompiledValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

type CompiledValidatorName = "runtime-options" | "resource-limits" | "builtin-tools-options" | "fleet-options" | "server-options";

const require = createRequire(import.meta.url);

export function compiledValidator(name: CompiledValidatorName): CompiledValidator {
  return require(`./validators/${name}.cjs`) as CompiledValidator;
}
