import { Compile, type Validator } from "typebox/compile";
import { Value } from "typebox/value";

import type { JsonSchema } from "../types.js";
import { coerceWithJsonSchema, type SubSchemaCheck } from "./coerce-json-schema.js";
import { formatValidationFailure } from "./validation-message.js";

/**
 * Argument validation is pi-ai 0.73.1's, step for step and on the library pi
 * uses (TypeBox, the version pi-ai resolves), so that the validated arguments
 * and every validation text are pi's byte for byte: clone the arguments,
 * TypeBox `Value.Convert`, pi's coercion for JSON schemas, then a TypeBox
 * `Compile`d check whose `Errors` make the message. See README, design notes,
 * for why not ajv.
 */
const validators = new WeakMap<object, Validator>();

/**
 * Compiles (once per schema object) and returns the TypeBox validator of a
 * tool's `parameters`. Throws TypeBox's error for a schema it cannot compile.
 */
export function compileArgumentValidator(schema: JsonSchema): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    validator = Compile(schema as never);
    validators.set(schema, validator);
  }
  return validator;
}

/** The union step's check of one member: its own cached validator, nothing when it does not compile. */
const checkSubSchema: SubSchemaCheck = (schema, value) => {
  let validator: Validator;
  try {
    validator = compileArgumentValidator(schema);
  } catch {
    return undefined;
  }
  return validator.Check(value);
};

/** Schemas on which the pipeline leaves valid arguments as they are (see `isIdentityOnValid`). */
const identityOnValid = new WeakMap<object, boolean>();

/**
 * Validates a call's arguments against its tool's schema, coercing as pi
 * does, and returns the validated arguments: a coerced copy, never the
 * caller's object — unless `mayShare` says nobody but a copying consumer will
 * see them, they are valid as they are, and the schema is one on which
 * coercion never changes a valid value. Throws an `Error` with pi's text:
 * `Validation failed for tool "NAME":`, one line per TypeBox error, then the
 * arguments received.
 */
export function validateToolArguments(toolName: string, schema: JsonSchema, rawArguments: unknown, mayShare = false): unknown {
  const validator = compileArgumentValidator(schema);
  if (mayShare && isIdentityOnValid(schema) && validator.Check(rawArguments)) return rawArguments;
  // Convert and the coercion write into objects: work on a copy, because the
  // raw arguments are still shown in events and in the message.
  const args = structuredClone(rawArguments);
  // Only the in-place effect of Convert counts (pi drops its return value):
  // a top-level primitive is never replaced by it.
  Value.Convert(schema as never, args);
  const coerced = coerceWithJsonSchema(args, schema, checkSubSchema);
  if (coerced !== args) {
    if (isRecord(args) && isRecord(coerced)) {
      // pi keeps its object and takes over the coerced one's keys.
      for (const key of Object.keys(args)) delete args[key];
      Object.assign(args, coerced);
    } else {
      // A replaced primitive is taken only when it passes; otherwise the
      // arguments as converted are returned unchecked, as pi returns them.
      return validator.Check(coerced) ? coerced : args;
    }
  }
  if (validator.Check(args)) return args;
  throw new Error(formatValidationFailure(toolName, validator.Errors(args), rawArguments));
}

/**
 * Whether valid arguments come out of Convert and the coercion unchanged, so
 * that a valid call may skip both. True for schemas built only of `type` (one
 * name), `properties`, `required`, `additionalProperties`, `items` (one
 * schema), `enum`/`const`, bounds, formats and annotations; false as soon as a
 * union (`anyOf`, `oneOf`, `allOf`, a list of types) or a reference appears
 * anywhere: pi's union step may turn a valid `5` into `"5"` when the string
 * member comes first. Computed once per schema.
 */
function isIdentityOnValid(schema: JsonSchema): boolean {
  let answer = identityOnValid.get(schema);
  if (answer === undefined) {
    answer = hasNoUnion(schema);
    identityOnValid.set(schema, answer);
  }
  return answer;
}

const unionKeywords = ["anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref", "patternProperties", "prefixItems"];

function hasNoUnion(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(hasNoUnion);
  if (!isRecord(node)) return true;
  if (unionKeywords.some((keyword) => keyword in node)) return false;
  if (Array.isArray(node.type) || Array.isArray(node.items)) return false;
  // pi's coercion looks properties up with `in`: a declared property named
  // like an inherited one (`constructor`) is "present" on every object.
  if (isRecord(node.properties) && Object.keys(node.properties).some((key) => key in Object.prototype)) return false;
  return Object.values(node).every(hasNoUnion);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
