import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

import type { JsonSchema } from "../types.js";
import { formatReceivedArguments } from "./received-arguments.js";

/**
 * One ajv instance for every runtime. `coerceTypes: true` gives pi's primitive
 * coercion: `"5"` → 5 and `true` → 1 for numbers, `"true"`/`1` → true for
 * booleans, numbers and booleans → strings, `null` → 0 / "" / false, and
 * `""`/0/false → null. `strict: false` because tool schemas routinely carry
 * keywords ajv does not know (TypeBox metadata, `examples`, vendor fields).
 */
const ajv = new Ajv({ coerceTypes: true, allErrors: true, strict: false, validateSchema: true });

const validators = new WeakMap<object, ValidateFunction>();

/** The same schemas without coercion: a check that never writes into the arguments. */
const strictAjv = new Ajv({ coerceTypes: false, allErrors: false, strict: false, validateSchema: false });
const strictValidators = new WeakMap<object, ValidateFunction>();

/**
 * Compiles (once per schema object) and returns the validator of a tool's
 * `parameters`. Throws ajv's compile error for a schema it cannot compile.
 */
export function compileArgumentValidator(schema: JsonSchema): ValidateFunction {
  let validate = validators.get(schema);
  if (validate === undefined) {
    validate = ajv.compile(schema);
    validators.set(schema, validate);
  }
  return validate;
}

/**
 * Validates a call's arguments against its tool's schema, coercing primitives
 * as pi does, and returns the validated arguments: a coerced copy, never the
 * caller's object — unless `mayShare` says nobody but a copying consumer will
 * see them and they are valid without coercion. Throws an `Error` whose message starts
 * `Validation failed for tool "NAME":`, lists each failing path, then shows
 * the arguments received, as pi's does.
 */
export function validateToolArguments(toolName: string, schema: JsonSchema, rawArguments: unknown, mayShare = false): unknown {
  if (mayShare && compileStrictValidator(schema)(rawArguments)) return rawArguments;
  const validate = compileArgumentValidator(schema);
  // A copy, because ajv coerces in place and the raw arguments are still shown
  // in events; structuredClone also drops anything that would not survive the
  // trip to a worker anyway.
  const args = rawArguments === undefined ? undefined : structuredClone(rawArguments);
  if (validate(args)) return args;
  const lines = (validate.errors ?? []).map((error) => `  - ${formatErrorPath(error)}: ${error.message ?? "is invalid"}`);
  throw new Error(
    `Validation failed for tool "${toolName}":\n${lines.join("\n") || "Unknown validation error"}\n\n` +
      `Received arguments:\n${formatReceivedArguments(rawArguments)}`,
  );
}

function compileStrictValidator(schema: JsonSchema): ValidateFunction {
  let validate = strictValidators.get(schema);
  if (validate === undefined) {
    validate = strictAjv.compile(schema);
    strictValidators.set(schema, validate);
  }
  return validate;
}

/** The argument path ajv reports, dotted as pi prints it (`root` for the whole object). */
function formatErrorPath(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (error.keyword === "required") {
    const missing = (error.params as { missingProperty?: string }).missingProperty;
    if (missing) return base ? `${base}.${missing}` : missing;
  }
  return base || "root";
}

