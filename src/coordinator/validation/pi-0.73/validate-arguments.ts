import type { Validator } from "typebox/compile";

import type { JsonSchema } from "../../../types.js";
import { coerceWithJsonSchema, type SubSchemaCheck } from "./coerce-json-schema.js";
import { adoptApplicationFormats, loadTypebox } from "./typebox-bundle.js";
import { formatValidationFailure } from "./validation-message.js";

/** pi-ai 0.73.1's validation step for step on pi's TypeBox, so results and texts are pi's byte for byte (docs/design.md: why not ajv). */
const validators = new WeakMap<object, Validator>();

/** Compiled once per schema object; throws TypeBox's error for a schema it cannot compile. */
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

/** pi converts before it compiles, so a `Value.Convert` error wins over the compile error; no failed compile is cached, as in pi. */
function compileOrFailAsPi(schema: JsonSchema, rawArguments: unknown): Validator {
  try {
    return compileArgumentValidator(schema);
  } catch (compileError) {
    loadTypebox().Value.Convert(schema as never, structuredClone(rawArguments));
    throw compileError;
  }
}

const checkSubSchema: SubSchemaCheck = (schema, value) => {
  let validator: Validator;
  try {
    validator = compileArgumentValidator(schema);
  } catch {
    return undefined;
  }
  return validator.Check(value);
};

const identityOnValid = new WeakMap<object, boolean>();

/** Returns a coerced copy (the input itself only under `mayReturnInput` on an identity-on-valid schema); throws with pi's text. */
export function validateToolArguments(toolName: string, schema: JsonSchema, rawArguments: unknown, mayReturnInput = false): unknown {
  const validator = compileOrFailAsPi(schema, rawArguments);
  // Fast path: on such schemas pi's pipeline returns a plain copy of valid arguments.
  if (isIdentityOnValid(schema) && validator.Check(rawArguments)) return mayReturnInput ? rawArguments : structuredClone(rawArguments);
  // Convert writes in place; the raw arguments are still shown in events and the message.
  const args = structuredClone(rawArguments);
  // pi drops Convert's return value: only its in-place effect counts.
  loadTypebox().Value.Convert(schema as never, args);
  const coerced = coerceWithJsonSchema(args, schema, checkSubSchema);
  if (coerced !== args) {
    if (isRecord(args) && isRecord(coerced)) {
      // pi keeps its object and takes over the coerced one's keys.
      for (const key of Object.keys(args)) delete args[key];
      Object.assign(args, coerced);
    } else {
      // pi takes a replaced primitive only when it passes, else returns the converted arguments unchecked.
      return validator.Check(coerced) ? coerced : args;
    }
  }
  if (validator.Check(args)) return args;
  throw new Error(formatValidationFailure(toolName, validator.Errors(args), rawArguments));
}

/**
 * Whether valid arguments pass Convert and the coercion unchanged. Unions can turn a valid `5`
 * into `"5"`; Convert reads property names as `^NAME$` regexes; pi's coercion sees `constructor` on every object.
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
const keepingKinds = new Set(["Object", "Array", "String", "Number", "Integer", "Boolean", "Null", "Literal", "Enum", "Any", "Unknown"]);
const plainPropertyName = /^[\w-]*$/;

function keepsValidValues(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(keepsValidValues);
  if (!isRecord(node)) return true;
  const kind = (node as { "~kind"?: unknown })["~kind"];
  if (kind !== undefined && !(typeof kind === "string" && keepingKinds.has(kind))) return false;
  if (unionKeywords.some((keyword) => keyword in node)) return false;
  if (Array.isArray(node.type) || Array.isArray(node.items)) return false;
  // Convert applies a schema additionalProperties to declared properties too.
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
