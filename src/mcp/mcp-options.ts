/**
 * The checks of the MCP server's numeric options.
 *
 * @module
 */
import { invalidOption } from "../option-checks.js";

/**
 * `value` if it is a safe integer of at least `minimum` (`fallback` when it
 * is undefined); else throws `TP_ERR_INVALID_OPTION` naming the option, what
 * was expected and what arrived.
 */
export function integerOption(value: unknown, name: string, minimum: number, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < minimum) {
    throw invalidOption(name, `an integer >= ${minimum}`, value);
  }
  return value;
}
