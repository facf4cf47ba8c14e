import { invalidOption } from "../option-checks.js";

/** `value` if a safe integer >= `minimum` (`fallback` when undefined); else `TP_ERR_INVALID_OPTION`. */
export function integerOption(value: unknown, name: string, minimum: number, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < minimum) {
    throw invalidOption(name, `an integer >= ${minimum}`, value);
  }
  return value;
}
