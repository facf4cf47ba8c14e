/**
 * When pi 1.6's validation may skip pi-schema's coercion: the proof behind
 * the fast path of `validate-arguments-16.ts`.
 *
 * pi-ai 1.6 validates `parse(structuredClone(args))`, and `parse` is
 * `validate(coerce(value))`. pi-schema's `coerce` is copy-on-write: it
 * returns `value` itself when it changes nothing. So wherever `coerce(x) ===
 * x` holds for every valid `x`, a value that passes `check` comes out of
 * `parse` as itself, and checking the copy gives pi's outcome without the
 * coercion walk (about as costly as the copy itself).
 *
 * That holds for a value whose objects are all plain (arrays, or objects
 * whose prototype is `Object.prototype`: what `structuredClone` makes of
 * JSON data and of class instances) under a schema that passes
 * {@link isIdentityOnValid16}. The three passes of the coercion, keyword by
 * keyword, for a valid plain value:
 *
 * - optional nulls: a `null` is dropped only where its property's schema
 *   rejects `null`, which a valid value never has;
 * - conversion (TypeBox's rules): `const` and `enum` keep a value equal to
 *   a member; `string`, `number`, `integer`, `boolean` and `null` map a value
 *   of their type to itself (an `integer` is truncated, and a valid one is
 *   whole); a union keeps a value that one branch accepts (a valid value has
 *   one); `allOf`, `properties`, `patternProperties`, `additionalProperties`,
 *   `items` and tuples convert members that are valid in their turn; a
 *   `$ref` converts its target, whose values are valid;
 * - coercion by `type`: a value already of (one of) the type(s) stays, and
 *   unions stay as above.
 *
 * The exceptions, which make {@link isIdentityOnValid16} false: a node with
 * `items` (or `prefixItems`) and no `type` wraps a valid non-array into a
 * one-item array; the coercion looks up declared properties with `in`, which
 * reaches `Object.prototype` (`__proto__` is an object it walks into);
 * types outside JSON's (`bigint`, `undefined`, `bytes`) follow other rules;
 * `unevaluatedProperties`/`unevaluatedItems` and dynamic references make a
 * branch's validity depend on where it sits; an `$id` moves the base that
 * references resolve against; and the proof follows only references to the
 * root (`#`) or its `$defs`/`definitions`. Objects that are not plain (a
 * `Date`, a `Uint8Array`, a `RegExp`…) inherit values that the `in` lookup
 * sees and may pass the checks of properties without being objects to them,
 * and a `NaN` is not `===` itself, so {@link isPlainData} keeps values
 * holding either on the full pipeline.
 *
 * @module
 */

const jsonTypes = new Set(["string", "number", "integer", "boolean", "null", "array", "object"]);
/** Keywords that make the proof fail wherever they are in the schema (see the module's comment). */
const contextKeywords = new Set([
  "$id",
  "$dynamicRef",
  "$dynamicAnchor",
  "$recursiveRef",
  "$recursiveAnchor",
  "unevaluatedProperties",
  "unevaluatedItems",
]);
/** The references the proof follows: the root, or one of its definitions by a name that needs no escaping. */
const localReference = /^#(?:\/(\$defs|definitions)\/([A-Za-z0-9_.-]+))?$/;
/** Deeper schemas are left to the full pipeline rather than walked. */
const maxSchemaDepth = 128;

const answers = new WeakMap<object, boolean>();

/**
 * Whether pi-schema's coercion returns every valid plain value of `schema`
 * as it is (see the module's comment for the proof and its exceptions).
 * Computed once per schema object; false where in doubt, which only costs
 * the fast path.
 */
export function isIdentityOnValid16(schema: object): boolean {
  let answer = answers.get(schema);
  if (answer === undefined) {
    answer = !mentionsContextKeyword(schema, 0) && keepsValidValues(schema, schema, new Set(), 0);
    answers.set(schema, answer);
  }
  return answer;
}

/**
 * The schema nodes whose keywords the coercion reads, walked from `node`:
 * `properties`, `patternProperties`, `additionalProperties`, `items`,
 * `prefixItems`, the unions and `$ref` targets. Keywords the coercion never
 * reads (`not`, `if`, `contains`, `propertyNames`…) only decide validity,
 * whatever they hold.
 */
function keepsValidValues(node: unknown, root: object, seen: Set<object>, depth: number): boolean {
  if (typeof node === "boolean") return true;
  if (!isRecord(node)) return false;
  // A schema reached again (a recursive reference) is being proven already: the proof goes by the depth of the value.
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
    // A definition that is missing compiles as `false` (unresolvedRefs: "reject"): no value is valid there.
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

/** What a definition reference that names nothing resolves to. */
const missing = Symbol("missing");

/** The node a local reference names, `missing` when it names nothing, undefined for a reference the proof does not follow. */
function referenceTarget(reference: string, root: object): unknown {
  const match = localReference.exec(reference);
  if (match === null) return undefined;
  const [, container, name] = match;
  if (container === undefined || name === undefined) return root;
  const definitions = (root as Record<string, unknown>)[container];
  if (!isRecord(definitions) || !Object.hasOwn(definitions, name)) return missing;
  return definitions[name];
}

/** Whether a key of {@link contextKeywords} appears anywhere in `value` (data in `const` or `enum` included: a false alarm costs only the fast path). */
function mentionsContextKeyword(value: unknown, depth: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (depth > maxSchemaDepth) return true;
  if (Array.isArray(value)) return value.some((item) => mentionsContextKeyword(item, depth + 1));
  for (const key of Object.keys(value)) {
    if (contextKeywords.has(key) || mentionsContextKeyword((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/** At most this many objects are looked at; a larger (or cyclic) value takes the full pipeline. */
const maxPlainDataObjects = 10_000;
/** Deeper values take the full pipeline (see {@link isPlainData}). */
const maxPlainDataDepth = 200;

/**
 * Whether every object in `value` is an array or has `Object.prototype` as
 * its prototype, as the copies `structuredClone` makes of JSON data are, and
 * no number in it is `NaN`: the coercion tells a changed member by `!==`, so
 * a `NaN` it passes over makes it copy the object holding it (equal, but
 * another object).
 *
 * Also false for a value nested deeper than {@link maxPlainDataDepth}: the
 * coercion reads a check that throws as one that fails, so a check that ran
 * out of stack inside the coercion's own recursion, while the fast path's
 * check of the same value passed, would break the proof; values this
 * shallow keep both far from the stack's end. Iterative, and bounded: past
 * {@link maxPlainDataObjects} objects (a large or a cyclic value) the answer
 * is false.
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
