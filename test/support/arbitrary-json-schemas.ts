import fc from "fast-check";

/**
 * Free-form JSON Schema 2020-12 documents and small JSON values over the same
 * few names, for pi 1.6's randomized tests. Unlike arbitrary-schemas.ts,
 * which builds tool schemas and arguments meant for them, this combines
 * keywords freely — siblings of `$ref`, unions of objects, `items` with and
 * without `type`, tuples, `if`/`then`/`else`, `not`, `contains`, pattern and
 * additional properties, `$ref`s to the root and to `$defs` — so that the
 * keyword interactions the check-then-copy proof rests on
 * (identity-on-valid-16.ts) meet values that pass, and values that almost
 * do. Values are drawn from so few names and constants that they often
 * satisfy a schema by chance.
 */

const names = ["a", "b", "c"] as const;
const name = fc.constantFrom(...names);
const jsonTypes = ["string", "number", "integer", "boolean", "null", "array", "object"] as const;

/** The primitives values and `const`s are made of: each type, and strings that coerce. */
const primitive = fc.constantFrom<unknown>(null, true, false, 0, 1, 2, 1.5, -3, "", "a", "1", "2.5", "true", "null", "12n");

/** Small JSON values: primitives, and arrays and objects (keys from `names`) up to three deep. */
export const smallJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 3 },
    { weight: 4, arbitrary: primitive },
    { weight: 1, arbitrary: fc.array(tie("value"), { maxLength: 3 }) },
    { weight: 2, arbitrary: fc.dictionary(name, tie("value"), { maxKeys: 3, noNullPrototype: true }) },
  ),
})).value;

type Schema = boolean | Record<string, unknown>;

/** One schema node: a few keywords of one family, sometimes merged with another node's (sibling keywords). */
function schemaArbitrary(): fc.Arbitrary<Schema> {
  const { node } = fc.letrec<{ node: Schema; keywords: Record<string, unknown> }>((tie) => {
    const child = tie("node") as fc.Arbitrary<Schema>;
    const children = fc.array(child, { minLength: 1, maxLength: 3 });
    const type = fc.oneof(fc.constantFrom(...jsonTypes), fc.uniqueArray(fc.constantFrom(...jsonTypes), { minLength: 1, maxLength: 3 }));
    const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined, freq: 2 });
    const families: fc.Arbitrary<Record<string, unknown>>[] = [
      fc.record({ type }),
      fc.record({ type: fc.constant("string"), minLength: optional(fc.integer({ min: 0, max: 2 })), pattern: optional(fc.constantFrom("^a", "1$")) }),
      fc.record({
        type: fc.constantFrom("number", "integer"),
        minimum: optional(fc.integer({ min: -1, max: 1 })),
        multipleOf: optional(fc.constantFrom(0.5, 2)),
      }),
      fc.record({ const: smallJson }),
      fc.record({ enum: fc.array(smallJson, { minLength: 1, maxLength: 3 }) }),
      fc.record({
        type: optional(fc.constant("object")),
        properties: optional(fc.dictionary(name, child, { maxKeys: 3, noNullPrototype: true })),
        required: optional(fc.uniqueArray(name, { maxLength: 2 })),
        additionalProperties: optional(child),
        patternProperties: optional(fc.dictionary(fc.constantFrom("^a", "^[bc]$", "x"), child, { maxKeys: 2, noNullPrototype: true })),
      }),
      fc.record({
        type: optional(fc.constant("array")),
        items: optional(fc.oneof(child, children)),
        prefixItems: optional(children),
        minItems: optional(fc.integer({ min: 0, max: 2 })),
        contains: optional(child),
      }),
      fc.record({ anyOf: children }),
      fc.record({ oneOf: children }),
      fc.record({ allOf: children }),
      fc.record({ not: child }),
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
      fc.record({ if: child, then: optional(child), else: optional(child) }),
      fc.record({ $ref: fc.constantFrom("#", "#/$defs/A", "#/$defs/B", "#/$defs/Missing", "#/properties/a") }),
    ];
    return {
      keywords: fc.oneof(...families).map(withoutUndefined),
      node: fc.oneof(
        { depthSize: "small", maxDepth: 3 },
        { weight: 1, arbitrary: fc.boolean() },
        { weight: 6, arbitrary: tie("keywords") as fc.Arbitrary<Record<string, unknown>> },
        // Sibling keywords of two families in one node (a `$ref` beside `properties`, `items` beside `anyOf`…).
        {
          weight: 2,
          arbitrary: fc
            .tuple(tie("keywords") as fc.Arbitrary<Record<string, unknown>>, tie("keywords") as fc.Arbitrary<Record<string, unknown>>)
            .map(([first, second]) => ({ ...second, ...first })),
        },
      ),
    };
  });
  return node;
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

/**
 * A root schema, with `$defs` `A` and `B` for the references to name. Never
 * one whose references loop at one place of the value (`{ allOf: [{ $ref:
 * "#" }] }`): every check of it runs out of stack, and where it does decides
 * pi's own text, because pi-schema reads an error thrown while it resolves a
 * reference (a stack overflow included) as an unresolved reference, and
 * remembers it.
 */
export const freeSchema: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(schemaArbitrary(), schemaArbitrary(), schemaArbitrary())
  .map(([root, a, b]) => ({ ...(typeof root === "boolean" ? (root ? {} : { not: {} }) : root), $defs: { A: a, B: b } }))
  .filter((schema) => !hasInPlaceReferenceLoop(schema));

/** Keywords whose subschemas apply to the value itself; the others apply to its members. */
const inPlaceKeywords = ["allOf", "anyOf", "oneOf", "not", "if", "then", "else"];
const memberKeywords = ["properties", "patternProperties", "additionalProperties", "items", "prefixItems", "contains"];

/** Whether following references and in-place keywords from some node of `root` comes back to it. */
export function hasInPlaceReferenceLoop(root: Record<string, unknown>): boolean {
  const onPath = new Set<object>();
  const done = new Set<object>();
  // Depth-first over in-place edges, started from every node that a member keyword (or the root) reaches.
  const visit = (node: unknown): boolean => {
    if (typeof node !== "object" || node === null || Array.isArray(node)) return false;
    if (onPath.has(node)) return true;
    if (done.has(node)) return false;
    onPath.add(node);
    const record = node as Record<string, unknown>;
    const inPlace: unknown[] = inPlaceKeywords.flatMap((keyword) =>
      Array.isArray(record[keyword]) ? (record[keyword] as unknown[]) : [record[keyword]],
    );
    if (typeof record.$ref === "string") inPlace.push(referenceTarget(root, record.$ref));
    const isLoop = inPlace.some(visit);
    onPath.delete(node);
    if (isLoop) return true;
    done.add(node);
    const members = memberKeywords.flatMap((keyword) => {
      const value = record[keyword];
      if (Array.isArray(value)) return value;
      if (keyword === "properties" || keyword === "patternProperties") return typeof value === "object" && value !== null ? Object.values(value) : [];
      return [value];
    });
    // A member starts a new place of the value: a loop must come back without passing through one.
    return members.some((member) => {
      const saved = [...onPath];
      onPath.clear();
      const found = visit(member);
      for (const item of saved) onPath.add(item);
      return found;
    });
  };
  return visit(root);
}

/** The node a local reference (`#`, `#/$defs/NAME`, `#/properties/NAME`) names, undefined when none. */
function referenceTarget(root: Record<string, unknown>, reference: string): unknown {
  let node: unknown = root;
  for (const segment of reference.slice(1).split("/").slice(1)) {
    node = typeof node === "object" && node !== null && Object.hasOwn(node, segment) ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return node;
}
