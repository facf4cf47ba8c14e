/**
 * Sends a result's long repeated strings once. Structured clone (and
 * `v8.serialize`) writes a string out whole at each place it occurs: it
 * shares objects it meets twice, never strings. pi's read returns an
 * image's base64 data in `content` and again in `structuredContent` (0.7–2
 * MB each for a screenshot), so the main thread made every image twice, in
 * the one turn that reads the reply. The sending side posts such a string
 * once, with the places it also occupies ({@link shareRepeatedStrings}: a
 * worker's reply, a fleet node's end envelope), and the receiving side puts
 * it back there ({@link restoreRepeats}).
 *
 * @module
 */

/** A place in a result: property names and array indexes from its root. */
export type ResultPath = readonly (string | number)[];

/**
 * A long string that occurs in a result more than once, sent once: the
 * result as posted holds it at `at` and an empty string at each of
 * `copies`; {@link restoreRepeats} puts it back there.
 */
export interface RepeatedString {
  at: ResultPath;
  copies: ResultPath[];
}

/** Strings shorter than this are sent as they are, repeats and all: copying them costs less than finding them. */
export const repeatMinChars = 16 * 1024;

/** At most this many long strings are compared (each pair of equal length costs a comparison). */
const maxCandidates = 32;

interface Occurrence {
  value: string;
  path: (string | number)[];
}

/** Objects structured clone copies whole, holding no object it could share with the rest of the result. */
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

/** An array index as a property key names it: "0", "1", … */
const indexKey = /^(?:0|[1-9]\d*)$/;

/**
 * The long strings of `result` with their places, and how often each object
 * is reached (an object reached twice crosses once: no copy of it may be
 * made); undefined where the result holds anything but plain objects, plain
 * arrays (index keys only) and leaves, or a property with a getter: there
 * the walk could not see every object structured clone shares, or would not
 * read what it reads.
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
    // Reached before (or a cycle): its strings are listed already.
    if (count > 0 || isLeafObject(node)) return true;
    const isArray = Array.isArray(node);
    const prototype = Object.getPrototypeOf(node) as unknown;
    if (isArray ? prototype !== Array.prototype : prototype !== Object.prototype && prototype !== null) return false;
    // Own enumerable keys, as structured clone takes them (an array's holes are none).
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

/** Whether a copy can be made of every object on the way to `path`'s place: each reached once, no `__proto__` key. */
function isCopyable(result: unknown, path: ResultPath, reached: Map<object, number>): boolean {
  let node = result;
  for (const key of path) {
    if (key === "__proto__" || reached.get(node as object) !== 1) return false;
    node = (node as Record<string | number, unknown>)[key];
  }
  return true;
}

/** A shallow copy that crosses as `node` would (an array keeps its holes; the walk let through no other key). */
function shallowCopy(node: object): Record<string | number, unknown> {
  if (!Array.isArray(node)) return { ...node };
  const copy = new Array<unknown>(node.length);
  for (const key of Object.keys(node)) copy[Number(key)] = (node as unknown[])[Number(key)];
  return copy as unknown as Record<string | number, unknown>;
}

/**
 * `result` as it should cross, with each long string that occurs more than
 * once left whole at one place (one no copy can be made of, where there is
 * one) and emptied at the others (in copies of the objects on the way
 * there: the tool's own objects are never changed), and the list of those
 * places; undefined when no long string repeats, or where the result is
 * not one this can walk (see `findLongStrings`; a proxy's trap that throws,
 * a nesting too deep for the stack): it then crosses as it is.
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

/**
 * Puts each repeated string back at its copies' places. The result is the
 * pool's own copy, just deserialized, whose paths run through plain objects
 * and arrays only (the worker shares no string reached otherwise).
 */
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

/** The value at the first `length` steps of `path`; undefined where the path leads nowhere. */
function pathValue(root: unknown, path: ResultPath, length: number): unknown {
  let node = root;
  for (let index = 0; index < length; index++) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[path[index]!];
  }
  return node;
}
