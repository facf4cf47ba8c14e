/**
 * Checks a tool's result inside the worker, before it crosses the thread
 * boundary: a value that structured clone rejects would otherwise cost the
 * worker (Piscina loses it) and reach the host as a bare `{}`.
 */
import { repeatMinChars } from "../repeated-strings.js";

/** What {@link inspectResult} found. */
interface ResultInspection {
  /** Describes the first value that cannot be cloned, with its path; undefined when all can. */
  uncloneable: string | undefined;
  /**
   * Bytes of every string (UTF-8) and binary buffer in the value: exact when
   * over the limit; otherwise an upper bound that is within it.
   */
  bytes: number;
  /** Whether `bytes` exceeds the limit given. */
  isTooLarge: boolean;
  /** Array buffers worth moving rather than copying, each once. */
  transferables: ArrayBuffer[];
  /** Strings of `repeatMinChars` or more met on the walk: two or more may repeat (see `repeated-strings.ts`). */
  longStrings: number;
}

/** Buffers from this size on are moved to the host instead of copied. */
export const transferThresholdBytes = 64 * 1024;

/** What an object is that structured clone rejects (beyond functions and symbols), or undefined. */
function uncloneableKindOf(value: object): string | undefined {
  if (value instanceof Promise) return "a Promise";
  if (value instanceof WeakMap) return "a WeakMap";
  if (value instanceof WeakSet) return "a WeakSet";
  if (value instanceof WeakRef) return "a WeakRef";
  return undefined;
}

/**
 * Walks a value as structured clone would, without copying it: finds what
 * cannot be cloned (functions, symbols, promises, weak collections), adds up
 * its size against `maxBytes`, and collects large array buffers to move.
 * Stops at the first uncloneable value. An object reached twice (not a
 * cycle) is counted twice: the size is an upper bound.
 */
export function inspectResult(value: unknown, maxBytes = Infinity): ResultInspection {
  // Strings are sized by an upper bound first: a string of n UTF-16 units
  // takes at most 3n bytes as UTF-8. Only a result that may be over the
  // limit is measured exactly (Buffer.byteLength reads every character: it
  // made a 10 MiB text result cross 70% slower).
  const bounded = walk(value, "upper bound");
  if (bounded.uncloneable !== undefined || bounded.bytes <= maxBytes) return bounded;
  const exact = walk(value, "exact");
  return { ...exact, isTooLarge: exact.bytes > maxBytes };
}

/** Sizes strings by their upper bound (3 bytes a UTF-16 unit) or exactly. */
type StringSizing = "upper bound" | "exact";

function walk(value: unknown, sizing: StringSizing): ResultInspection {
  return (sizing === "exact" ? exactWalker : upperBoundWalker).run(value);
}

/** A result with no buffer to move shares this list. */
const noTransferables: ArrayBuffer[] = Object.freeze([]) as unknown as ArrayBuffer[];

/**
 * Walks over results. A class, not closures: this runs for every call, and
 * its methods cost no allocation; one walker per sizing serves every walk of
 * its thread (a walk runs to its end synchronously). It keeps the objects on
 * the current path (a cycle leads back to one of them) and the keys that
 * lead there; the path's text is built only for an error. No Set or string
 * per node.
 */
class ResultWalker {
  inspection: ResultInspection = { uncloneable: undefined, bytes: 0, isTooLarge: false, transferables: noTransferables, longStrings: 0 };
  readonly #sizing: StringSizing;
  readonly #ancestors: object[] = [];
  /** A number is an index, a string a property name; "\0"-prefixed strings are shown as they are. */
  readonly #keys: (string | number)[] = [];

  constructor(sizing: StringSizing) {
    this.#sizing = sizing;
  }

  /** One walk over `value`; its inspection is the caller's. */
  run(value: unknown): ResultInspection {
    const inspection: ResultInspection = { uncloneable: undefined, bytes: 0, isTooLarge: false, transferables: noTransferables, longStrings: 0 };
    this.inspection = inspection;
    try {
      this.visit(value);
    } finally {
      // A getter that threw leaves the path half walked.
      this.#ancestors.length = 0;
      this.#keys.length = 0;
    }
    return inspection;
  }

  visit(node: unknown): boolean {
    switch (typeof node) {
      case "string":
        this.inspection.bytes += this.#sizing === "exact" ? Buffer.byteLength(node, "utf8") : node.length * 3;
        if (node.length >= repeatMinChars) this.inspection.longStrings += 1;
        return true;
      case "function":
        return this.#fail("a function");
      case "symbol":
        return this.#fail("a symbol");
      case "object":
        break;
      default:
        return true;
    }
    if (node === null || this.#ancestors.includes(node)) return true;
    if (node instanceof ArrayBuffer) {
      this.inspection.bytes += node.byteLength;
      if (node.byteLength >= transferThresholdBytes) this.#addBuffer(node);
      return true;
    }
    if (ArrayBuffer.isView(node)) {
      this.inspection.bytes += node.byteLength;
      // A view is moved with its whole buffer; only a view that spans it
      // exactly is worth (and safe) to move.
      if (node.buffer instanceof ArrayBuffer && node.byteLength >= transferThresholdBytes && node.byteLength === node.buffer.byteLength) {
        this.#addBuffer(node.buffer);
      }
      return true;
    }
    const uncloneableKind = uncloneableKindOf(node);
    if (uncloneableKind !== undefined) return this.#fail(uncloneableKind);
    this.#ancestors.push(node);
    const isCloneable = this.#visitChildren(node);
    this.#ancestors.pop();
    return isCloneable;
  }

  #visitChildren(node: object): boolean {
    if (node instanceof Map) {
      for (const [key, entry] of node) {
        if (!this.#visitAt("\0.<key>", key) || !this.#visitAt(`\0.get(${String(key)})`, entry)) return false;
      }
      return true;
    }
    if (node instanceof Set) {
      for (const entry of node) if (!this.#visitAt("\0.<entry>", entry)) return false;
      return true;
    }
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) if (!this.#visitAt(index, node[index])) return false;
      return true;
    }
    // Plain objects, class instances (cloned as plain objects), errors, dates.
    // for-in over own keys: the keys of Object.keys, without an array per object.
    for (const key in node) {
      if (Object.hasOwn(node, key) && !this.#visitAt(key, (node as Record<string, unknown>)[key])) return false;
    }
    return true;
  }

  #visitAt(key: string | number, node: unknown): boolean {
    this.#keys.push(key);
    const isCloneable = this.visit(node);
    this.#keys.pop();
    return isCloneable;
  }

  #fail(what: string): false {
    const path = this.#keys.map((key) => (typeof key === "number" ? `[${key}]` : key.startsWith("\0") ? key.slice(1) : `.${key}`));
    this.inspection.uncloneable = `${what} at result${path.join("")}`;
    return false;
  }

  #addBuffer(buffer: ArrayBuffer): void {
    const { inspection } = this;
    if (inspection.transferables === noTransferables) inspection.transferables = [buffer];
    else if (!inspection.transferables.includes(buffer)) inspection.transferables.push(buffer);
  }
}

const upperBoundWalker = new ResultWalker("upper bound");
const exactWalker = new ResultWalker("exact");
