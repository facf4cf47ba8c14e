/**
 * The "Received arguments" part of a validation error, bounded.
 *
 * pi shows `JSON.stringify(args, null, 2)`. Its indentation grows with depth,
 * so a body of a few KB nested a few thousand levels deep becomes megabytes
 * of text (and a larger one blocks the event loop for seconds) that then
 * travels in the result, in events and over the wire. Up to
 * {@link maxReceivedArgumentsBytes} the text is pi's, byte for byte; past it,
 * it is cut there and ends with `… (truncated)` — a deliberate difference
 * from pi. The text is produced piece by piece and production stops at the
 * bound, so the cost never depends on how large or deep the arguments are.
 *
 * @module
 */

/** UTF-8 bytes of the arguments' JSON text shown before it is cut. */
export const maxReceivedArgumentsBytes = 4096;

/** Appended to a cut text. */
export const truncationMark = "… (truncated)";

/** Thrown inside the printer once the text is past the bound. */
const pastBound = Symbol("past bound");
/** Thrown inside the printer for a value only `JSON.stringify` itself renders faithfully. */
const fallBack = Symbol("fall back");

/**
 * `JSON.stringify(value, null, 2)` (as a template literal shows it, so
 * `undefined` reads "undefined") when that is at most `maxBytes` UTF-8 bytes;
 * otherwise its first `maxBytes` bytes (never half a character) followed by
 * `… (truncated)`. Throws what `JSON.stringify` throws (a cycle, a bigint).
 */
export function formatReceivedArguments(value: unknown, maxBytes: number = maxReceivedArgumentsBytes): string {
  const printer = new BoundedPrinter(maxBytes);
  let text: string;
  try {
    printer.print(value, "");
    text = printer.text();
  } catch (error) {
    if (error === pastBound) return `${cutUtf8(printer.text(), maxBytes)}${truncationMark}`;
    if (error !== fallBack) throw error;
    text = `${JSON.stringify(value, null, 2)}`;
  }
  return Buffer.byteLength(text, "utf8") <= maxBytes ? text : `${cutUtf8(text, maxBytes)}${truncationMark}`;
}

/**
 * Writes JSON the way `JSON.stringify(value, null, 2)` does for data as it
 * arrives from JSON (plain objects, arrays, strings, numbers, booleans,
 * null). For anything else that `JSON.stringify` treats specially (`toJSON`,
 * boxed primitives, bigint, cycles) it hands the whole value to
 * `JSON.stringify` itself, so that the text (or the error) is exactly its.
 */
class BoundedPrinter {
  readonly #maxBytes: number;
  readonly #pieces: string[] = [];
  readonly #ancestors = new Set<object>();
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  text(): string {
    return this.#pieces.join("");
  }

  /** Prints `value` at `indent`; returns false when JSON omits it (undefined, functions, symbols). */
  print(value: unknown, indent: string): boolean {
    if (value === undefined || typeof value === "function" || typeof value === "symbol") {
      if (this.#ancestors.size === 0) this.#write("undefined");
      return false;
    }
    if (value === null || typeof value === "boolean") {
      this.#write(String(value));
      return true;
    }
    if (typeof value === "number") {
      this.#write(Number.isFinite(value) ? String(value) : "null");
      return true;
    }
    if (typeof value === "string") {
      // Past the bound anyway: escaping only a prefix keeps the cost bounded,
      // and the text that differs (a surrogate pair split at the end) lies
      // beyond the cut.
      const shown = value.length > this.#maxBytes + 1 ? value.slice(0, this.#maxBytes + 1) : value;
      this.#write(JSON.stringify(shown));
      return true;
    }
    if (typeof value !== "object" || !isPlainData(value) || this.#ancestors.has(value)) throw fallBack;
    this.#ancestors.add(value);
    const inner = `${indent}  `;
    if (Array.isArray(value)) {
      if (value.length === 0) this.#write("[]");
      else {
        this.#write("[");
        for (let i = 0; i < value.length; i++) {
          this.#write(i === 0 ? `\n${inner}` : `,\n${inner}`);
          const item: unknown = value[i];
          if (!this.print(item, inner)) this.#write("null");
        }
        this.#write(`\n${indent}]`);
      }
    } else {
      let isFirst = true;
      for (const name of Object.keys(value)) {
        const item = (value as Record<string, unknown>)[name];
        if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
        this.#write(isFirst ? `{\n${inner}` : `,\n${inner}`);
        isFirst = false;
        this.#write(`${JSON.stringify(name)}: `);
        this.print(item, inner);
      }
      this.#write(isFirst ? "{}" : `\n${indent}}`);
    }
    this.#ancestors.delete(value);
    return true;
  }

  #write(piece: string): void {
    this.#pieces.push(piece);
    this.#bytes += Buffer.byteLength(piece, "utf8");
    if (this.#bytes > this.#maxBytes) throw pastBound;
  }
}

/** Plain data: no `toJSON`, not a boxed primitive, not a bigint. */
function isPlainData(value: object): boolean {
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  return !(value instanceof Number || value instanceof String || value instanceof Boolean || value instanceof BigInt);
}

/** Cuts at `maxBytes` UTF-8 bytes without leaving half a character behind. */
export function cutUtf8(text: string, maxBytes: number): string {
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  return cut.endsWith("\uFFFD") && !text.startsWith(cut) ? cut.slice(0, -1) : cut;
}
