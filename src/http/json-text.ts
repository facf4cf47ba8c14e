/** Writes a `bigint` as a decimal string: inline tools may put one in `details`, and one odd field must not fail a response. */
export function toJsonText(value: unknown): string {
  try {
    return JSON.stringify(value, replaceBigint);
  } catch (error) {
    // Arguments nested thousands deep overflow the stack; elided, the frame still goes out.
    if (!(error instanceof RangeError)) throw error;
    return JSON.stringify(elideDeepParts(value, maxJsonDepth), replaceBigint);
  }
}

const maxJsonDepth = 64;

function replaceBigint(_key: string, field: unknown): unknown {
  return typeof field === "bigint" ? field.toString() : field;
}

function elideDeepParts(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (depth === 0) return `[nested deeper than ${maxJsonDepth} levels]`;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return value;
  if (Array.isArray(value)) return value.map((item) => elideDeepParts(item, depth - 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, elideDeepParts(item, depth - 1)]));
}
