/**
 * toolpool's argument validation before it moved to TypeBox (ajv with
 * `coerceTypes`), kept only so that `validation-cost` can measure the old and
 * the new implementation side by side in one process. Not pi's texts.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

type JsonSchema = Record<string, unknown>;

const ajv = new Ajv({ coerceTypes: true, allErrors: true, strict: false, validateSchema: true });
const validators = new WeakMap<object, ValidateFunction>();
const strictAjv = new Ajv({ coerceTypes: false, allErrors: false, strict: false, validateSchema: false });
const strictValidators = new WeakMap<object, ValidateFunction>();

function compile(cache: WeakMap<object, ValidateFunction>, instance: Ajv, schema: JsonSchema): ValidateFunction {
  let validate = cache.get(schema);
  if (validate === undefined) {
    validate = instance.compile(schema);
    cache.set(schema, validate);
  }
  return validate;
}

export function validateWithAjv(toolName: string, schema: JsonSchema, rawArguments: unknown, mayShare = false): unknown {
  if (mayShare && compile(strictValidators, strictAjv, schema)(rawArguments)) return rawArguments;
  const validate = compile(validators, ajv, schema);
  const args = rawArguments === undefined ? undefined : structuredClone(rawArguments);
  if (validate(args)) return args;
  const lines = (validate.errors ?? []).map((error) => `  - ${formatErrorPath(error)}: ${error.message ?? "is invalid"}`);
  throw new Error(
    `Validation failed for tool "${toolName}":\n${lines.join("\n") || "Unknown validation error"}\n\n` +
      `Received arguments:\n${JSON.stringify(rawArguments, null, 2)}`,
  );
}

function formatErrorPath(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (error.keyword === "required") {
    const missing = (error.params as { missingProperty?: string }).missingProperty;
    if (missing) return base ? `${base}.${missing}` : missing;
  }
  return base || "root";
}
