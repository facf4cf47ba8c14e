/**
 * Checks a tool's result in the worker before it crosses: a value structured
 * clone rejects would otherwise cost the worker (Piscina loses it) and reach
 * the host as a bare `{}`.
 */
import { repeatMinChars } from "../repeated-strings.js";

interface ResultInspection {
  /** The first value that cannot be cloned, with its path. */
  uncloneable: string | undefined;
  /** UTF-8 strings and buffers: exact when over the limit, else an upper bound within it. */
  bytes: number;
  isTooLarge: boolean;
  transferables: ArrayBuffer[];
  /** Two or more may repeat (see `repeated-strings.ts`). */
  longStrings: number;
}

export const transferThresholdBytes = 64 * 1024;

function uncloneableKindOf(value: object): string | undefined {
  if (value instanceof Promise) return "a Promise";
  if (value instanceof WeakMap) return "a WeakMap";
  if (value instanceof WeakSet) return "a WeakSet";
  if (value instanceof WeakRef) return "a WeakRef";
  return undefined;
}

/** Walks a value as structured clone would, without copying it; an object reached twice is counted twice. */
export function inspectResult(value: unknown, maxBytes = Infinity): ResultInspection {
  // 3 bytes per UTF-16 unit bounds a string; only a result that may be over
  // the limit is measured exactly, as Buffer.byteLength reads every character.
  const bounded = walk(value, "upper bound");
  if (bounded.uncloneable !== undefined || bounded.bytes <= maxBytes) return bounded;
  const exact = walk(value, "exact");
  return { ...exact, isTooLarge: exact.bytes > maxBytes };
}

type StringSizing = "upper bound" | "exact";

function walk(value: unknown, sizing: StringSizing): ResultInspection {
  return (sizing === "exact" ? exactWalker : upperBoundWalker).run(value);
}

const noTransferables: ArrayBuffer[] = Object.freeze([]) as unknown as ArrayBuffer[];

/**
 * A class, not closures, so a walk allocates nothing per node; one walker
 * per sizing serves every walk of its thread (a walk is synchronous).
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
      // A view moves its whole buffer: only one that spans it exactly may move.
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
    // for-in over own keys: Object.keys without an array per object.
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
