/** Option-check parts every options module shares; a leaf, so no options module imports another. */
import type { ErrorObject } from "ajv";

import { closestName } from "./closest-name.js";
import { describeValue, type ErrorCode, ToolpoolError } from "./errors.js";

/** Node fires a timer set past this many milliseconds after 1 ms instead. */
export const maxTimerMs = 2_147_483_647;

/** For ajv's first error: names the option (dotted), what was expected and what arrived; `kind` names the options. */
export function invalidOptionFromSchema(error: ErrorObject, original: Record<string, unknown>, kind = "option"): ToolpoolError {
  const segments = error.instancePath.split("/").filter(Boolean);
  let received: unknown = original;
  for (const segment of segments) received = (received as Record<string, unknown> | undefined)?.[segment];
  const path = segments.join(".");
  if (error.keyword === "additionalProperties") {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    // Compiled `verbose`: the error carries the object schema that lists the known names.
    const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
    return unknownOption(path, extra, known, kind);
  }
  const expected =
    error.keyword === "enum"
      ? `one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")}`
      : describeSchemaExpectation(error);
  return invalidOption(path, expected, received);
}

function describeSchemaExpectation(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "type":
      return `${params.type === "integer" ? "an integer" : `a ${String(params.type)}`}`;
    case "minimum":
      return `a number >= ${String(params.limit)}`;
    case "maximum":
      return `a number <= ${String(params.limit)}`;
    case "exclusiveMinimum":
      return `a number > ${String(params.limit)}`;
    case "minLength":
      return params.limit === 1 ? "a non-empty string" : `a string of at least ${String(params.limit)} characters`;
    default:
      return `a value that ${error.message ?? "is valid"}`;
  }
}

/** The `TP_ERR_INVALID_OPTION` error: ``Expected `name` to be EXPECTED, got `value` (type)``. */
export function invalidOption(name: string, expected: string, received: unknown): ToolpoolError {
  return new ToolpoolError("TP_ERR_INVALID_OPTION", `Expected \`${name}\` to be ${expected}, got ${describeValue(received)}`);
}

/** A misspelt option is never ignored in silence; `code` lets `workerTool` throw `TP_ERR_INVALID_TOOL`. */
export function refuseUnknownOptions(
  options: object,
  known: readonly string[],
  path = "",
  kind = "option",
  code: ErrorCode = "TP_ERR_INVALID_OPTION",
): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw unknownOption(path, key, known, kind, code);
  }
}

/** ``Unknown option `path.name`; did you mean `path.closest`?``, else the known names. */
export function unknownOption(
  path: string,
  name: string,
  known: readonly string[],
  kind = "option",
  code: ErrorCode = "TP_ERR_INVALID_OPTION",
): ToolpoolError {
  const at = (key: string) => (path ? `${path}.${key}` : key);
  const closest = closestName(name, known);
  const hint =
    closest !== undefined
      ? `; did you mean \`${at(closest)}\`?`
      : known.length > 0
        ? `; known ${kind}s${path ? ` of \`${path}\`` : ""}: ${known.map((key) => `\`${key}\``).join(", ")}`
        : "";
  return new ToolpoolError(code, `Unknown ${kind} \`${at(name)}\`${hint}`);
}
