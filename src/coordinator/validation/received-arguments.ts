/**
 * The "Received arguments" echo: pi's `JSON.stringify(args, null, 2)` up to a bound, then cut
 * (a deliberate difference: deep nesting would otherwise grow into megabytes). Printing stops
 * at the bound, so the cost never depends on the arguments' size.
 * @module
 */

/** UTF-8 bytes of the arguments' JSON text shown before it is cut. */
export const maxReceivedArgumentsBytes = 4096;

export const truncationMark = "… (truncated)";

const pastBound = Symbol("past bound");
const fallBack = Symbol("fall back");

/** As a template literal shows it (`undefined` reads "undefined"); throws what `JSON.stringify` throws. */
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

/** `JSON.stringify(value, null, 2)` for plain JSON data; anything special (`toJSON`, cycles) falls back to it. */
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
      // Escaping only a prefix bounds the cost; any difference lies beyond the cut.
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

function isPlainData(value: object): boolean {
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  return !(value instanceof Number || value instanceof String || value instanceof Boolean || value instanceof BigInt);
}

/** Cuts at `maxBytes` UTF-8 bytes without leaving half a character behind. */
export function cutUtf8(text: string, maxBytes: number): string {
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  return cut.endsWith("\uFFFD") && !text.startsWith(cut) ? cut.slice(0, -1) : cut;
}
