/**
 * Argument validation under pi 1.6 (`RuntimeOptions.pi: "1.6"`): pi-ai
 * 1.6.0's `validateToolArguments`, step for step and on the library it uses,
 * `@earendil-works/pi-schema` (JSON Schema 2020-12 compiled into closures,
 * no `eval`), so that the validated arguments and every text are pi's byte
 * for byte. Main thread only.
 *
 * pi-schema is loaded on the first compile, never by `import("toolpool")`,
 * and synchronously, because `createRuntime` is synchronous and compiles
 * every tool's schema up front. It comes from dist/vendor/pi-schema.cjs, the
 * build's one-file CommonJS bundle of pi-schema 1.6.0 (scripts/bundle.mjs),
 * not from an installed package: pi-schema declares Node >= 22.19, and as a
 * dependency it made every install on Node 20 warn for a part that runs only
 * on 22.19 and later (the only Nodes `pi: "1.6"` is accepted on).
 *
 * @module
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

import type { CoercingValidator, FormatCheck, compile as piSchemaCompile } from "@earendil-works/pi-schema";

import type { JsonSchema } from "../../../types.js";
import { isIdentityOnValid16, isPlainData } from "./identity-on-valid-16.js";
import { formatValidationFailure16 } from "./validation-message-16.js";

/** What validation uses of pi-schema. */
interface PiSchema {
  compile: typeof piSchemaCompile;
  formats: Readonly<Record<string, FormatCheck>>;
}

let piSchema: PiSchema | undefined;

const bundleUrl = new URL("../../../vendor/pi-schema.cjs", import.meta.url);

/** pi-schema and its standard formats, loaded once per thread. */
function loadPiSchema(): PiSchema {
  if (piSchema === undefined) {
    const { compile, formats } = createRequire(import.meta.url)(fileURLToPath(bundleUrl)) as PiSchema;
    piSchema = { compile, formats };
  }
  return piSchema;
}

/** One validator per schema object, as pi-ai 1.6 keeps them: tool schemas live as long as their tools. */
const validators = new WeakMap<object, CoercingValidator>();

/**
 * Compiles (once per schema object) and returns the pi-schema validator of a
 * tool's `parameters`, with the options pi-ai 1.6 compiles it with: the
 * standard `formats`, `coerce: true`, and `unresolvedRefs: "reject"` (a
 * `$ref` that names nothing rejects only the values at its place). Throws
 * pi-schema's error for a schema it cannot compile, which is the error pi's
 * first validation with that tool throws.
 *
 * @example
 * const validator = compileArgumentValidator16({ type: "object", properties: { n: { type: "integer" } } });
 * validator.parse({ n: "5" }); // { ok: true, value: { n: 5 } }
 */
export function compileArgumentValidator16(schema: JsonSchema): CoercingValidator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    const { compile, formats } = loadPiSchema();
    validator = compile(schema, { formats, coerce: true, unresolvedRefs: "reject" });
    validators.set(schema, validator);
  }
  return validator;
}

/**
 * Validates a call's arguments as pi-ai 1.6.0's `validateToolArguments`
 * does and returns what it returns: the validated arguments, a copy (coerced
 * where pi-schema coerces: `"5"` → 5, a single value → a one-item array, an
 * optional `null` dropped…), never the caller's object. Throws an `Error`
 * with pi's text: `Invalid arguments for tool "NAME": ARGUMENTS_ERROR` when
 * `argumentsError` is truthy (the tool call's arguments could not be
 * parsed); else `Validation failed for tool "NAME":`, one line per
 * pi-schema error, then the arguments received (at most 4 KiB of them: see
 * `received-arguments.ts`). Throws pi-schema's compile error for a schema
 * it cannot compile, and what `structuredClone` throws for arguments it
 * cannot copy, as pi does.
 *
 * @example
 * validateToolArguments16("read", { type: "object", properties: { paths: { type: "array", items: { type: "string" } } } }, { paths: "a.txt" });
 * // { paths: ["a.txt"] }
 */
export function validateToolArguments16(toolName: string, schema: JsonSchema, args: unknown, argumentsError?: unknown): unknown {
  // A template literal, as pi's: the same text for whatever the error is.
  if (argumentsError) throw new Error(`Invalid arguments for tool "${toolName}": ${argumentsError}`);
  const validator = compileArgumentValidator16(schema);
  const copy = structuredClone(args);
  // Most calls are valid as sent. Where coercion provably returns a valid
  // value as it is (identity-on-valid-16.ts), checking the copy gives pi's
  // result without the coercion walk, which costs about as much as the copy.
  if (isIdentityOnValid16(schema) && passes(validator, copy) && isPlainData(copy)) return copy;
  // pi-schema's coercion never writes into its input: the copy goes in as pi's does.
  const result = validator.parse(copy);
  if (result.ok) return result.value;
  throw new Error(formatValidationFailure16(toolName, result.errors, args));
}

/**
 * The fast path's check; false when it throws (a value too deep for the
 * stack), so that `parse` then fails, or not, exactly as pi's does.
 */
function passes(validator: CoercingValidator, value: unknown): boolean {
  try {
    return validator.check(value);
  } catch {
    return false;
  }
}
