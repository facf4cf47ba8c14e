import fc from "fast-check";

/**
 * Schemas malformed under the draft they declare, as tool schemas come from
 * MCP servers and hand-written code: 2020-12 with draft-07's tuple `items`
 * array, draft-07 with 2020-12's `prefixItems`, and keywords of the wrong
 * type or value anywhere in the tree. pi registers every one of them and
 * validates each call as its library reads the schema (or throws the compile
 * error on each call): toolpool must give the same outcome per call.
 */

/** One way to break a sub-schema: what to set on it, given what it holds. */
type Malformation = (node: Record<string, unknown>) => void;

/** Keywords with a value their draft's meta-schema refuses. */
const wrongKeywords: [string, unknown][] = [
  ["required", "a"],
  ["required", [1]],
  ["minimum", "1"],
  ["maximum", null],
  ["maxLength", "3"],
  ["minLength", -1],
  ["minItems", -1],
  ["maxItems", 1.5],
  ["properties", 3],
  ["properties", [{ type: "string" }]],
  ["items", 5],
  ["prefixItems", 3],
  ["enum", 5],
  ["enum", []],
  ["type", "nonsense"],
  ["type", ["string", 5]],
  ["type", []],
  ["additionalProperties", "no"],
  ["pattern", "("],
  ["pattern", 5],
  ["format", 5],
  ["anyOf", {}],
  ["anyOf", []],
  ["oneOf", 3],
  ["allOf", [3]],
  ["multipleOf", 0],
  ["uniqueItems", "yes"],
  ["minProperties", "1"],
  ["not", 3],
  ["exclusiveMinimum", true],
  ["contains", 5],
  ["$ref", 5],
  ["$ref", "#/nowhere"],
];

const malformations: fc.Arbitrary<Malformation> = fc.oneof(
  // 2020-12 reads `items` as the schema of every item: a list is malformed there.
  fc.constant((node: Record<string, unknown>) => {
    node.items = [typeof node.items === "object" && node.items !== null ? node.items : { type: "string" }, { type: "number" }];
  }),
  // draft-07 knows no `prefixItems`.
  fc.constant((node: Record<string, unknown>) => {
    node.prefixItems = [{ type: "string" }, { type: "integer" }];
  }),
  fc.constantFrom(...wrongKeywords).map(
    ([keyword, value]): Malformation =>
      (node) =>
        void (node[keyword] = structuredClone(value)),
  ),
);

/** A malformation and where it goes: the sub-schema at this index (modulo their count) of the walk. */
export interface MalformedAt {
  place: number;
  malformations: Malformation[];
}

/** Mostly none: a quarter of the plain schemas are malformed, in one to two places. */
export const malformedAt: fc.Arbitrary<MalformedAt | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.record({ place: fc.nat(), malformations: fc.array(malformations, { minLength: 1, maxLength: 2 }) }) },
);

/** A copy of `schema` with `at`'s malformations applied to one of its sub-schemas (the root included). */
export function malform(schema: Record<string, unknown>, at: MalformedAt): Record<string, unknown> {
  const copy = structuredClone(schema);
  const nodes = subSchemas(copy);
  const node = nodes[at.place % nodes.length]!;
  for (const malformation of at.malformations) malformation(node);
  return copy;
}

const schemaKeys = new Set(["items", "additionalProperties", "not", "if", "then", "else", "contains"]);
const schemaListKeys = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const schemaMapKeys = new Set(["properties", "$defs", "definitions", "patternProperties"]);

/** The schema objects of a schema tree, in a fixed order. */
function subSchemas(schema: Record<string, unknown>): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const visit = (node: unknown): void => {
    if (typeof node !== "object" || node === null || Array.isArray(node)) return;
    const record = node as Record<string, unknown>;
    found.push(record);
    for (const [key, value] of Object.entries(record)) {
      if (schemaKeys.has(key)) visit(value);
      else if (schemaListKeys.has(key) && Array.isArray(value)) value.forEach(visit);
      else if (schemaMapKeys.has(key) && typeof value === "object" && value !== null) Object.values(value).forEach(visit);
    }
  };
  visit(schema);
  return found;
}
