/**
 * JSON text of what the server sends: events, outcomes, errors.
 *
 * @module
 */

/**
 * `JSON.stringify` that writes a `bigint` as a decimal string: inline tools
 * run on the main thread and may put one in `details`, which `JSON.stringify`
 * rejects, and one odd field must not fail a whole response (the CLI's
 * `--ndjson` does the same).
 */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) => (typeof field === "bigint" ? field.toString() : field));
}
