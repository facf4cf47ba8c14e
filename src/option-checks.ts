/**
 * The one home of option checks' parts shared by every options module (the
 * runtime's, the fleet's, the server's, the built-in tools', MCP's): the
 * largest timer Node honours, and the `TP_ERR_INVALID_OPTION` errors.
 * A leaf: it imports no options module, so none of them import each other
 * for these.
 *
 * @module
 */
import type { ErrorObject } from "ajv";

import { describeValue, ToolpoolError } from "./errors.js";

/** Node fires a timer set past this many milliseconds after 1 ms instead. */
export const maxTimerMs = 2_147_483_647;

/**
 * The `TP_ERR_INVALID_OPTION` error for ajv's first error on an options
 * object: names the option (dotted), what was expected and what arrived.
 * `kind` names the options in the message of an unknown one.
 */
export function invalidOptionFromSchema(error: ErrorObject, original: Record<string, unknown>, kind = "option"): ToolpoolError {
  const segments = error.instancePath.split("/").filter(Boolean);
  let received: unknown = original;
  for (const segment of segments) received = (received as Record<string, unknown> | undefined)?.[segment];
  const path = segments.join(".");
  if (error.keyword === "additionalProperties") {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    const name = path ? `${path}.${extra}` : extra;
    return new ToolpoolError("TP_ERR_INVALID_OPTION", `Unknown ${kind} \`${name}\``);
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
