/**
 * Sends a result's long repeated strings once. Structured clone writes a
 * string out whole at each place it occurs: it shares objects it meets twice,
 * never strings. pi's read returns an image's base64 data in `content` and
 * again in `structuredContent` (0.7–2 MB each for a screenshot), so the main
 * thread made every image twice, in the one turn that reads the reply. Here
 * the worker posts such a string once, with the places it also occupies (see
 * `RepeatedString` in the protocol), and the pool puts it back there.
 *
 * @module
 */
import type { RepeatedString, ResultPath } from "../protocol.js";

/** Strings shorter than this are sent as they are, repeats and all: copying them costs less than finding them. */
export const repeatMinChars = 16 * 1024;

/** At most this many long strings are compared (each pair of equal length costs a comparison). */
const maxCandidates = 32;

interface Occurrence {
  value: string;
  path: (string | number)[];
}

/** Whether `node` is cloned as the object it is, so that a copy of it crosses as it would. */
function isPlainContainer(node: object): boolean {
  if (Array.isArray(node)) return Object.getPrototypeOf(node) === Array.prototype;
  const prototype = Object.getPrototypeOf(node) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * The long strings of `result` with their places, reached through plain
 * objects and arrays only, and how often each object is reached (an object
 * reached twice crosses once: no copy of it may be made).
 */
function findLongStrings(result: unknown): { occurrences: Occurrence[]; reached: Map<object, number> } {
  const occurrences: Occurrence[] = [];
  const reached = new Map<object, number>();
  const path: (string | number)[] = [];
  const visit = (node: unknown): void => {
    if (typeof node === "string") {
      if (node.length >= repeatMinChars && occurrences.length < maxCandidates) occurrences.push({ value: node, path: [...path] });
      return;
    }
    if (typeof node !== "object" || node === null) return;
    const count = reached.get(node) ?? 0;
    reached.set(node, count + 1);
    // Reached before (or a cycle): its strings are listed already.
    if (count > 0 || !isPlainContainer(node)) return;
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) {
        path.push(index);
        visit(node[index]);
        path.pop();
      }
      return;
    }
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue;
      path.push(key);
      visit((node as Record<string, unknown>)[key]);
      path.pop();
    }
  };
  visit(result);
  return { occurrences, reached };
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

/** A shallow copy that crosses as `node` would: an array keeps its holes and extra properties. */
function shallowCopy(node: object): Record<string | number, unknown> {
  if (!Array.isArray(node)) return { ...node };
  const copy: unknown[] = node.slice();
  if (Object.keys(node).length !== node.length) {
    for (const key of Object.keys(node))
      if (!(key in copy)) (copy as unknown as Record<string, unknown>)[key] = (node as unknown as Record<string, unknown>)[key];
  }
  return copy as unknown as Record<string | number, unknown>;
}

/**
 * `result` as it should cross, with each long string that occurs more than
 * once left at its first place and emptied at the others (in copies of the
 * objects on the way there: the tool's own objects are never changed), and
 * the list of those places; undefined when no long string repeats.
 */
export function shareRepeatedStrings(result: unknown): { result: unknown; repeats: RepeatedString[] } | undefined {
  const { occurrences, reached } = findLongStrings(result);
  if (occurrences.length < 2) return undefined;
  const repeats: RepeatedString[] = [];
  const isTaken = new Array<boolean>(occurrences.length).fill(false);
  for (let first = 0; first < occurrences.length; first++) {
    if (isTaken[first]) continue;
    const { value, path } = occurrences[first]!;
    const copies: ResultPath[] = [];
    for (let other = first + 1; other < occurrences.length; other++) {
      const candidate = occurrences[other]!;
      if (isTaken[other] || candidate.value.length !== value.length || candidate.value !== value) continue;
      isTaken[other] = true;
      if (isCopyable(result, candidate.path, reached)) copies.push(candidate.path);
    }
    if (copies.length > 0) repeats.push({ at: path, copies });
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
  return { result: copied(result as object), repeats };
}
