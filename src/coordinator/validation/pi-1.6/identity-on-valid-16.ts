/**
 * When pi 1.6 may skip pi-schema's coercion: `coerce` is copy-on-write, so where it keeps every
 * valid plain value, a value that passes `check` is pi's result. It does not where:
 * - `items`/`prefixItems` without `type` wrap a valid non-array into an array;
 * - declared properties are looked up with `in`, which reaches `Object.prototype`;
 * - non-JSON types (`bigint`, `bytes`) follow other rules;
 * - `unevaluated*`, dynamic references and `$id` make validity depend on position;
 * - a reference other than `#` or its `$defs`/`definitions` is not followed;
 * - non-plain objects and `NaN` (not `===` itself) change the coercion's outcome.
 * @module
 */

const jsonTypes = new Set(["string", "number", "integer", "boolean", "null", "array", "object"]);
const contextKeywords = new Set([
  "$id",
  "$dynamicRef",
  "$dynamicAnchor",
  "$recursiveRef",
  "$recursiveAnchor",
  "unevaluatedProperties",
  "unevaluatedItems",
]);
const localReference = /^#(?:\/(\$defs|definitions)\/([A-Za-z0-9_.-]+))?$/;
const maxSchemaDepth = 128;

const answers = new WeakMap<object, boolean>();

/** False where in doubt, which only costs the fast path. */
export function isIdentityOnValid16(schema: object): boolean {
  let answer = answers.get(schema);
  if (answer === undefined) {
    answer = !mentionsContextKeyword(schema, 0) && keepsValidValues(schema, schema, new Set(), 0);
    answers.set(schema, answer);
  }
  return answer;
}

/** Walks only keywords the coercion reads; the others (`not`, `if`…) only decide validity. */
function keepsValidValues(node: unknown, root: object, seen: Set<object>, depth: number): boolean {
  if (typeof node === "boolean") return true;
  if (!isRecord(node)) return false;
  // A recursive reference: already being proven.
  if (seen.has(node)) return true;
  if (depth > maxSchemaDepth) return false;
  seen.add(node);
  const next = (child: unknown): boolean => keepsValidValues(child, root, seen, depth + 1);

  const type = node.type;
  if (type !== undefined) {
    const types = Array.isArray(type) ? type : [type];
    if (types.length === 0 || !types.every((name) => typeof name === "string" && jsonTypes.has(name))) return false;
  } else if (node.items !== undefined || node.prefixItems !== undefined) {
    return false;
  }
  if (node.$ref !== undefined) {
    const target = typeof node.$ref === "string" ? referenceTarget(node.$ref, root) : undefined;
    if (target === undefined) return false;
    // A missing definition compiles as `false`: no value is valid there.
    if (target !== missing && !next(target)) return false;
  }
  if (node.properties !== undefined) {
    if (!isRecord(node.properties)) return false;
    for (const name of Object.keys(node.properties)) {
      if (name in Object.prototype || !next(node.properties[name])) return false;
    }
  }
  if (node.patternProperties !== undefined) {
    if (!isRecord(node.patternProperties) || !Object.values(node.patternProperties).every(next)) return false;
  }
  if (node.additionalProperties !== undefined && !next(node.additionalProperties)) return false;
  for (const keyword of ["items", "prefixItems", "allOf", "anyOf", "oneOf"]) {
    const value = node[keyword];
    if (value === undefined) continue;
    if (Array.isArray(value) ? !value.every(next) : !next(value)) return false;
  }
  return true;
}

const missing = Symbol("missing");

/** undefined for a reference the proof does not follow. */
function referenceTarget(reference: string, root: object): unknown {
  const match = localReference.exec(reference);
  if (match === null) return undefined;
  const [, container, name] = match;
  if (container === undefined || name === undefined) return root;
  const definitions = (root as Record<string, unknown>)[container];
  if (!isRecord(definitions) || !Object.hasOwn(definitions, name)) return missing;
  return definitions[name];
}

/** Also looks inside `const`/`enum` data: a false alarm costs only the fast path. */
function mentionsContextKeyword(value: unknown, depth: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (depth > maxSchemaDepth) return true;
  if (Array.isArray(value)) return value.some((item) => mentionsContextKeyword(item, depth + 1));
  for (const key of Object.keys(value)) {
    if (contextKeywords.has(key) || mentionsContextKeyword((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

const maxPlainDataObjects = 10_000;
const maxPlainDataDepth = 200;

/**
 * Plain arrays/objects and no `NaN`. Deep values are refused: the coercion reads a stack overflow
 * as a failed check, which the fast path's check would not. Large or cyclic values are refused too.
 */
export function isPlainData(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return !Number.isNaN(value);
  const pending: [object, number][] = [[value, 1]];
  let visited = 0;
  while (pending.length > 0) {
    const [object, depth] = pending.pop()!;
    if (++visited > maxPlainDataObjects || depth > maxPlainDataDepth) return false;
    let members: unknown[];
    if (Array.isArray(object)) members = object;
    else if (Object.getPrototypeOf(object) === Object.prototype) members = Object.values(object);
    else return false;
    for (const item of members) {
      if (typeof item === "object" && item !== null) pending.push([item, depth + 1]);
      else if (Number.isNaN(item)) return false;
    }
  }
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
