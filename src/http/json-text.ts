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
  try {
    return JSON.stringify(value, replaceBigint);
  } catch (error) {
    // Arguments nested thousands deep overflow JSON.stringify's stack. They
    // come back in events (`args`) as the client sent them; written with the
    // deep part elided, the frame still goes out and the batch goes on, as
    // in JSON mode.
    if (!(error instanceof RangeError)) throw error;
    return JSON.stringify(elideDeepParts(value, maxJsonDepth), replaceBigint);
  }
}

/** Levels kept when a value is too deep for `JSON.stringify`. */
const maxJsonDepth = 64;

function replaceBigint(_key: string, field: unknown): unknown {
  return typeof field === "bigint" ? field.toString() : field;
}

/** A copy of `value` with what lies deeper than `depth` levels replaced by a note. */
function elideDeepParts(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (depth === 0) return `[nested deeper than ${maxJsonDepth} levels]`;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return value;
  if (Array.isArray(value)) return value.map((item) => elideDeepParts(item, depth - 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, elideDeepParts(item, depth - 1)]));
}
