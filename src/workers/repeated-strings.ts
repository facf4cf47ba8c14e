/**
 * Sends a result's long repeated strings once: structured clone shares
 * objects it meets twice, never strings, and pi's read returns an image's
 * base64 in both `content` and `structuredContent` (docs/benchmarks.md).
 *
 * @module
 */

export type ResultPath = readonly (string | number)[];

/** Posted whole at `at` and as an empty string at each of `copies`. */
export interface RepeatedString {
  at: ResultPath;
  copies: ResultPath[];
}

/** Shorter strings cost less to copy than to find. */
export const repeatMinChars = 16 * 1024;

/** Each pair of equal length costs a comparison. */
const maxCandidates = 32;

interface Occurrence {
  value: string;
  path: (string | number)[];
}

/** Copied whole by structured clone, holding nothing it could share. */
function isLeafObject(node: object): boolean {
  return (
    node instanceof Date ||
    node instanceof RegExp ||
    node instanceof ArrayBuffer ||
    ArrayBuffer.isView(node) ||
    node instanceof String ||
    node instanceof Number ||
    node instanceof Boolean ||
    node instanceof BigInt
  );
}

const indexKey = /^(?:0|[1-9]\d*)$/;

/**
 * `reached`: an object reached twice crosses once, so no copy of it may be
 * made. Undefined past plain objects, plain arrays and leaves, or at a
 * getter: the walk could not see what structured clone shares or reads.
 */
function findLongStrings(result: unknown): { occurrences: Occurrence[]; reached: Map<object, number> } | undefined {
  const occurrences: Occurrence[] = [];
  const reached = new Map<object, number>();
  const path: (string | number)[] = [];
  const visit = (node: unknown): boolean => {
    if (typeof node === "string") {
      if (node.length >= repeatMinChars && occurrences.length < maxCandidates) occurrences.push({ value: node, path: [...path] });
      return true;
    }
    if (typeof node !== "object" || node === null) return true;
    const count = reached.get(node) ?? 0;
    reached.set(node, count + 1);
    if (count > 0 || isLeafObject(node)) return true;
    const isArray = Array.isArray(node);
    const prototype = Object.getPrototypeOf(node) as unknown;
    if (isArray ? prototype !== Array.prototype : prototype !== Object.prototype && prototype !== null) return false;
    for (const key of Object.keys(node)) {
      if (isArray && !indexKey.test(key)) return false;
      const descriptor = Object.getOwnPropertyDescriptor(node, key)!;
      if (!("value" in descriptor)) return false;
      path.push(isArray ? Number(key) : key);
      const isPlain = visit(descriptor.value);
      path.pop();
      if (!isPlain) return false;
    }
    return true;
  };
  return visit(result) ? { occurrences, reached } : undefined;
}

/** Each object on the way reached once, no `__proto__` key. */
function isCopyable(result: unknown, path: ResultPath, reached: Map<object, number>): boolean {
  let node = result;
  for (const key of path) {
    if (key === "__proto__" || reached.get(node as object) !== 1) return false;
    node = (node as Record<string | number, unknown>)[key];
  }
  return true;
}

/** An array keeps its holes. */
function shallowCopy(node: object): Record<string | number, unknown> {
  if (!Array.isArray(node)) return { ...node };
  const copy = new Array<unknown>(node.length);
  for (const key of Object.keys(node)) copy[Number(key)] = (node as unknown[])[Number(key)];
  return copy as unknown as Record<string | number, unknown>;
}

/**
 * Empties repeats in copies of the objects on the way, never the tool's own
 * objects; undefined (the result crosses as it is) when nothing repeats or
 * the walk fails (a throwing proxy trap, too deep a nesting).
 */
export function shareRepeatedStrings(result: unknown): { result: unknown; repeats: RepeatedString[] } | undefined {
  let found: ReturnType<typeof findLongStrings>;
  try {
    found = findLongStrings(result);
  } catch {
    return undefined;
  }
  if (found === undefined || found.occurrences.length < 2) return undefined;
  const { occurrences, reached } = found;
  const repeats: RepeatedString[] = [];
  const isTaken = new Array<boolean>(occurrences.length).fill(false);
  for (let first = 0; first < occurrences.length; first++) {
    if (isTaken[first]) continue;
    const { value } = occurrences[first]!;
    const same: ResultPath[] = [occurrences[first]!.path];
    for (let other = first + 1; other < occurrences.length; other++) {
      const candidate = occurrences[other]!;
      if (isTaken[other] || candidate.value.length !== value.length || candidate.value !== value) continue;
      isTaken[other] = true;
      same.push(candidate.path);
    }
    if (same.length < 2) continue;
    // The string stays whole at a place no copy can be made of, where there is one.
    const copyable = same.filter((path) => isCopyable(result, path, reached));
    const at = same.find((path) => !copyable.includes(path)) ?? copyable[0]!;
    const copies = copyable.filter((path) => path !== at);
    if (copies.length > 0) repeats.push({ at, copies });
  }
  if (repeats.length === 0) return undefined;
  const copyOf = new Map<object, Record<string | number, unknown>>();
  const copied = (node: object): Record<string | number, unknown> => {
    let copy = copyOf.get(node);
    if (copy === undefined) {
      copy = shallowCopy(node);
      copyOf.set(node, copy);
    }
    return copy;
  };
  for (const { copies } of repeats) {
    for (const path of copies) {
      let original = result as Record<string | number, unknown>;
      let copy = copied(original);
      for (let index = 0; index < path.length - 1; index++) {
        const key = path[index]!;
        const child = original[key] as Record<string | number, unknown>;
        const childCopy = copied(child);
        copy[key] = childCopy;
        original = child;
        copy = childCopy;
      }
      copy[path[path.length - 1]!] = "";
    }
  }
  const posted = copied(result as object);
  // Each string must still be whole where the pool will read it.
  for (const { at } of repeats) {
    const value = pathValue(posted, at, at.length);
    if (typeof value !== "string" || value === "") return undefined;
  }
  return { result: posted, repeats };
}

/** `result` is the pool's own, just deserialized copy. */
export function restoreRepeats(result: unknown, repeats: readonly RepeatedString[]): void {
  for (const { at, copies } of repeats) {
    const value = pathValue(result, at, at.length);
    if (typeof value !== "string") continue;
    for (const path of copies) {
      const parent = pathValue(result, path, path.length - 1);
      if (typeof parent === "object" && parent !== null) (parent as Record<string | number, unknown>)[path[path.length - 1]!] = value;
    }
  }
}

function pathValue(root: unknown, path: ResultPath, length: number): unknown {
  let node = root;
  for (let index = 0; index < length; index++) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[path[index]!];
  }
  return node;
}
