import type { Validator } from "typebox/compile";

import type { JsonSchema } from "../../../types.js";
import { coerceWithJsonSchema, type SubSchemaCheck } from "./coerce-json-schema.js";
import { adoptApplicationFormats, loadTypebox } from "./typebox-bundle.js";
import { formatValidationFailure } from "./validation-message.js";

/**
 * Argument validation is pi-ai 0.73.1's, step for step and on the library pi
 * uses (TypeBox, the version pi-ai resolves), so that the validated arguments
 * and every validation text are pi's byte for byte: clone the arguments,
 * TypeBox `Value.Convert`, pi's coercion for JSON schemas, then a TypeBox
 * `Compile`d check whose `Errors` make the message. See docs/design.md,
 * design notes, for why not ajv.
 */
const validators = new WeakMap<object, Validator>();

/**
 * Compiles (once per schema object) and returns the TypeBox validator of a
 * tool's `parameters`. Throws TypeBox's error for a schema it cannot compile.
 */
export function compileArgumentValidator(schema: JsonSchema): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    const typebox = loadTypebox();
    adoptApplicationFormats(schema, typebox.Format);
    validator = typebox.Compile(schema as never);
    validators.set(schema, validator);
  }
  return validator;
}

/**
 * The schema's validator; for a schema TypeBox cannot compile, throws what
 * pi's validation throws first: pi clones and converts the arguments before
 * it compiles, so an error of `Value.Convert` on that schema comes first,
 * else the compile error. pi keeps no failed compile: each call meets it.
 */
function compileOrFailAsPi(schema: JsonSchema, rawArguments: unknown): Validator {
  try {
    return compileArgumentValidator(schema);
  } catch (compileError) {
    loadTypebox().Value.Convert(schema as never, structuredClone(rawArguments));
    throw compileError;
  }
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
 * caller's object — unless `mayReturnInput` says nobody but a copying consumer will
 * see them and they are valid on a schema whose coercion never changes a
 * valid value. Throws an `Error` with pi's text: `Validation failed for tool
 * "NAME":`, one line per TypeBox error, then the arguments received.
 */
export function validateToolArguments(toolName: string, schema: JsonSchema, rawArguments: unknown, mayReturnInput = false): unknown {
  const validator = compileOrFailAsPi(schema, rawArguments);
  // Most calls are valid as sent: on most schemas pi's pipeline then returns
  // a plain copy of them, which a check and a copy give for less.
  if (isIdentityOnValid(schema) && validator.Check(rawArguments)) return mayReturnInput ? rawArguments : structuredClone(rawArguments);
  // Convert and the coercion write into objects: work on a copy, because the
  // raw arguments are still shown in events and in the message.
  const args = structuredClone(rawArguments);
  // Only the in-place effect of Convert counts (pi drops its return value):
  // a top-level primitive is never replaced by it.
  loadTypebox().Value.Convert(schema as never, args);
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
 * that a valid call may skip both. False as soon as the schema holds, anywhere:
 * a union (`anyOf`, `oneOf`, `allOf`, a list of types; pi's union step may
 * turn a valid `5` into `"5"` when the string member comes first), a
 * reference, a tuple, pattern properties, additional properties given by a
 * schema, a TypeBox kind whose Convert is not
 * known to keep valid values, a property name TypeBox's Convert would read as
 * a regular expression (it matches keys with `^NAME$`), or one that pi's
 * coercion finds on every object (`constructor`). Computed once per schema.
 */
function isIdentityOnValid(schema: JsonSchema): boolean {
  let answer = identityOnValid.get(schema);
  if (answer === undefined) {
    answer = keepsValidValues(schema);
    identityOnValid.set(schema, answer);
  }
  return answer;
}

const unionKeywords = ["anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref", "$defs", "patternProperties", "prefixItems"];
/** TypeBox kinds whose `Value.Convert` returns a valid value as it is. */
const keepingKinds = new Set(["Object", "Array", "String", "Number", "Integer", "Boolean", "Null", "Literal", "Enum", "Any", "Unknown"]);
const plainPropertyName = /^[\w-]*$/;

function keepsValidValues(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(keepsValidValues);
  if (!isRecord(node)) return true;
  const kind = (node as { "~kind"?: unknown })["~kind"];
  if (kind !== undefined && !(typeof kind === "string" && keepingKinds.has(kind))) return false;
  if (unionKeywords.some((keyword) => keyword in node)) return false;
  if (Array.isArray(node.type) || Array.isArray(node.items)) return false;
  // TypeBox's Convert of an object whose additionalProperties is a schema
  // converts some declared properties by it too (an Enum of 0 becomes "0").
  if (isRecord(node.additionalProperties)) return false;
  if (isRecord(node.properties)) {
    const names = Object.keys(node.properties);
    if (names.some((name) => name in Object.prototype || !plainPropertyName.test(name))) return false;
  }
  return Object.values(node).every(keepsValidValues);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
