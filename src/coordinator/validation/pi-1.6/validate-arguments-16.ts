/**
 * pi-ai 1.6.0's `validateToolArguments` step for step on pi-schema, byte for byte. pi-schema is vendored
 * (dist/vendor/pi-schema.cjs): as a dependency, its Node >= 22.19 engine warned on every Node 20 install. @module
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

import type { CoercingValidator, FormatCheck, compile as piSchemaCompile } from "@earendil-works/pi-schema";

import type { JsonSchema } from "../../../types.js";
import { isIdentityOnValid16, isPlainData } from "./identity-on-valid-16.js";
import { formatValidationFailure16 } from "./validation-message-16.js";

interface PiSchema {
  compile: typeof piSchemaCompile;
  formats: Readonly<Record<string, FormatCheck>>;
}

let piSchema: PiSchema | undefined;

const bundleUrl = new URL("../../../vendor/pi-schema.cjs", import.meta.url);

function loadPiSchema(): PiSchema {
  if (piSchema === undefined) {
    const { compile, formats } = createRequire(import.meta.url)(fileURLToPath(bundleUrl)) as PiSchema;
    piSchema = { compile, formats };
  }
  return piSchema;
}

const validators = new WeakMap<object, CoercingValidator>();

/** Compiled once per schema object with pi-ai 1.6's options; throws pi-schema's compile error, as pi's first validation does. */
export function compileArgumentValidator16(schema: JsonSchema): CoercingValidator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    const { compile, formats } = loadPiSchema();
    validator = compile(schema, { formats, coerce: true, unresolvedRefs: "reject" });
    validators.set(schema, validator);
  }
  return validator;
}

/** Returns a coerced copy, never the caller's object; throws pi's texts and whatever pi would throw. */
export function validateToolArguments16(toolName: string, schema: JsonSchema, args: unknown, argumentsError?: unknown): unknown {
  // A template literal, as pi's: the same text for whatever the error is.
  if (argumentsError) throw new Error(`Invalid arguments for tool "${toolName}": ${argumentsError}`);
  const validator = compileArgumentValidator16(schema);
  const copy = structuredClone(args);
  // Fast path where coercion provably keeps valid values (identity-on-valid-16.ts).
  if (isIdentityOnValid16(schema) && passes(validator, copy) && isPlainData(copy)) return copy;
  const result = validator.parse(copy);
  if (result.ok) return result.value;
  throw new Error(formatValidationFailure16(toolName, result.errors, args));
}

/** False when the check throws (too deep), so `parse` then decides as pi's does. */
function passes(validator: CoercingValidator, value: unknown): boolean {
  try {
    return validator.check(value);
  } catch {
    return false;
  }
}
