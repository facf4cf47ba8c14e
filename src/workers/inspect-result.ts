/**
 * Checks a tool's result inside the worker, before it crosses the thread
 * boundary: a value that structured clone rejects would otherwise cost the
 * worker (Piscina loses it) and reach the host as a bare `{}`.
 */

/** What {@link inspectResult} found. */
export interface ResultInspection {
  /** Describes the first value that cannot be cloned, with its path; undefined when all can. */
  uncloneable: string | undefined;
  /** Bytes of every string (UTF-8) and binary buffer in the value. */
  bytes: number;
  /** Array buffers worth moving rather than copying, each once. */
  transferables: ArrayBuffer[];
}

/** Buffers from this size on are moved to the host instead of copied. */
export const transferThresholdBytes = 64 * 1024;

const uncloneableKinds: [test: (value: object) => boolean, name: string][] = [
  [(value) => value instanceof Promise, "a Promise"],
  [(value) => value instanceof WeakMap, "a WeakMap"],
  [(value) => value instanceof WeakSet, "a WeakSet"],
  [(value) => value instanceof WeakRef, "a WeakRef"],
];

/**
 * Walks a value as structured clone would, without copying it: finds what
 * cannot be cloned (functions, symbols, promises, weak collections), adds up
 * its size, and collects large array buffers to move. Stops at the first
 * uncloneable value.
 */
export function inspectResult(value: unknown): ResultInspection {
  const inspection: ResultInspection = { uncloneable: undefined, bytes: 0, transferables: [] };
  const seen = new Set<object>();
  const buffers = new Set<ArrayBuffer>();

  const visit = (node: unknown, path: string): boolean => {
    switch (typeof node) {
      case "string":
        inspection.bytes += Buffer.byteLength(node, "utf8");
        return true;
      case "function":
        inspection.uncloneable = `a function at ${path}`;
        return false;
      case "symbol":
        inspection.uncloneable = `a symbol at ${path}`;
        return false;
      case "object":
        break;
      default:
        return true;
    }
    if (node === null || seen.has(node)) return true;
    seen.add(node);
    if (node instanceof ArrayBuffer) {
      inspection.bytes += node.byteLength;
      if (node.byteLength >= transferThresholdBytes) buffers.add(node);
      return true;
    }
    if (ArrayBuffer.isView(node)) {
      inspection.bytes += node.byteLength;
      // A view is moved with its whole buffer; only a view that spans it
      // exactly is worth (and safe) to move.
      if (node.buffer instanceof ArrayBuffer && node.byteLength >= transferThresholdBytes && node.byteLength === node.buffer.byteLength) {
        buffers.add(node.buffer);
      }
      return true;
    }
    for (const [isKind, name] of uncloneableKinds) {
      if (isKind(node)) {
        inspection.uncloneable = `${name} at ${path}`;
        return false;
      }
    }
    if (node instanceof Map) {
      for (const [key, entry] of node) {
        if (!visit(key, `${path}.<key>`) || !visit(entry, `${path}.get(${String(key)})`)) return false;
      }
      return true;
    }
    if (node instanceof Set) {
      for (const entry of node) if (!visit(entry, `${path}.<entry>`)) return false;
      return true;
    }
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) if (!visit(node[index], `${path}[${index}]`)) return false;
      return true;
    }
    // Plain objects, class instances (cloned as plain objects), errors, dates.
    for (const key of Object.keys(node)) {
      if (!visit((node as Record<string, unknown>)[key], `${path}.${key}`)) return false;
    }
    return true;
  };

  visit(value, "result");
  inspection.transferables = [...buffers];
  return inspection;
}
