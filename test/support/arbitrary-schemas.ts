import fc from "fast-check";
import { Type, type TSchema } from "typebox";

/**
 * Generated tool schemas and arguments for the randomized validation
 * differentials. A schema is generated once as a small tree (`SchemaNode`) and
 * rendered either as a plain JSON schema or built with TypeBox's `Type.*`
 * (which adds TypeBox's own metadata, and makes `Value.Convert` act); the
 * arguments are generated from the same tree, right, wrong, coercible, null
 * or nested.
 *
 * Each generator takes the pi it feeds (`GeneratorTarget`). For "0.73" it
 * generates exactly what it always has (the shapes added for "1.6" have
 * weight 0 there, which leaves fast-check's choices, and so every seed's
 * cases, unchanged). For "1.6" it adds what pi-schema's larger coercion and
 * its JSON Schema 2020-12 reach: `$ref`s into `$defs` (dangling ones too, and
 * a recursive one), `items` without `type`, tuples, `allOf`, pattern
 * properties, `pattern`, more formats, property names that JSON Pointers
 * escape, single values where arrays are expected, numbers written as
 * `"12n"` or `"TRUE"`, and values that are not JSON (a `Date`, bytes, `NaN`,
 * `undefined`, a class instance).
 *
 * Longer than the house's ~400 lines: the schema tree, its two renderings
 * and the value generators change together (a new node kind touches each of
 * them), and each 0.73 seed's cases depend on the order of fast-check's
 * choices across all of them; split, that coupling would only be harder to see.
 */
export type SchemaNode =
  | { kind: "string"; minLength?: number; maxLength?: number; format?: string }
  | { kind: "number" | "integer"; minimum?: number; maximum?: number; exclusiveMinimum?: number; multipleOf?: number }
  | { kind: "boolean" }
  | { kind: "null" }
  | { kind: "literal"; value: string | number | boolean }
  | { kind: "enum"; values: (string | number)[] }
  | { kind: "array"; items: SchemaNode; minItems?: number; maxItems?: number }
  | { kind: "object"; properties: PropertyNode[]; additional: "absent" | "false" | "true" | SchemaNode }
  | { kind: "union"; members: SchemaNode[] }
  /** Plain JSON only: `type` as a list. */
  | { kind: "types"; types: ("string" | "number" | "integer" | "boolean" | "null")[] }
  /** Plain JSON only: `oneOf` (TypeBox builds none). */
  | { kind: "oneOf"; members: SchemaNode[] }
  // The shapes below are generated for pi 1.6 only.
  /** A string with a `pattern`. */
  | { kind: "pattern"; pattern: string }
  /** Plain JSON only: `{ $ref: "#/$defs/NAME" }`, its target among the root's `$defs`. */
  | { kind: "ref"; name: string; target: SchemaNode }
  /** A `$ref` that names nothing: only values at its place fail (pi-schema's `unresolvedRefs: "reject"`). */
  | { kind: "danglingRef" }
  /** Plain JSON only: a recursive definition (a tree of integers) referenced from `$defs`. */
  | { kind: "tree" }
  /** Plain JSON only: `items` without `type` (pi-schema wraps a single value in an array). */
  | { kind: "itemsOnly"; items: SchemaNode }
  | { kind: "tuple"; items: SchemaNode[] }
  /** `allOf` of objects (TypeBox's `Intersect`). */
  | { kind: "allOf"; members: (SchemaNode & { kind: "object" })[] }
  /** An object whose values all follow one schema, by `patternProperties` (TypeBox's `Record`). */
  | { kind: "record"; values: SchemaNode };

/** Which pi a generated case feeds: see the module's comment. */
export type GeneratorTarget = "0.73" | "1.6";

export interface PropertyNode {
  name: string;
  schema: SchemaNode;
  isOptional: boolean;
}

/** Formats pi's validator (TypeBox's format registry) checks, with values that pass and values that do not. */
export const formatSamples: Record<string, string[]> = {
  email: ["a@b.co", "first.last@example.org", "nope", "a@", ""],
  uuid: ["123e4567-e89b-12d3-a456-426614174000", "123e4567", "not-a-uuid"],
  "date-time": ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123+02:00", "2024-01-02", "yesterday"],
  date: ["2024-01-02", "2024-02-30", "2024-1-2", "today"],
  time: ["03:04:05Z", "25:00:00Z", "03:04"],
  ipv4: ["127.0.0.1", "256.1.1.1", "1.2.3"],
  ipv6: ["::1", "2001:db8::8a2e:370:7334", "12345::"],
  uri: ["https://example.com/a?b=c", "mailto:a@b.co", "not a uri", "/relative"],
  hostname: ["example.com", "-bad-.com", "a".repeat(70)],
  duration: ["P1D", "PT1H30M", "1 day"],
};

/** More of the formats pi-schema checks (pi 1.6 only). */
export const formatSamples16: Record<string, string[]> = {
  "json-pointer": ["/a/b", "/a~1b", "a/b", "/a~2"],
  regex: ["^a+$", "(", "[a-z]"],
  "uri-reference": ["/relative/path", "https://example.com", "\\bad"],
  "relative-json-pointer": ["0/a", "1#", "/a"],
  "uri-template": ["https://example.com/{id}", "https://example.com/{id"],
  "idn-email": ["a@b.co", "nope"],
  // No Latin-1 IRI such as "https://exämple.com/": URL.canParse, which this format calls, turns false for one
  // once V8 optimizes its caller (seen on Node 20.20 and 22.23, not 26.12; also reported in
  // AikidoSec/firewall-node#1086), so pi's own outcome changes between two calls.
  iri: ["https://例え.jp/パス", "not an iri"],
  url: ["https://example.com/a", "example.com"],
};

const formatsFor = (target: GeneratorTarget): string[] =>
  target === "1.6" ? [...Object.keys(formatSamples), ...Object.keys(formatSamples16)] : Object.keys(formatSamples);

const samplesOf = (format: string): string[] => formatSamples[format] ?? formatSamples16[format]!;

/**
 * Property names: plain ones, and some that TypeBox reads as patterns or that
 * every object "has" for pi's `in`; for pi 1.6 also names a JSON Pointer
 * escapes (`/` as `~1`, `~` as `~0`) and one that is a keyword.
 */
const propertyNamesFor = (target: GeneratorTarget) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom("a", "b", "c", "count", "label", "path", "items", "mode", "value", "nested") },
    { weight: 1, arbitrary: fc.constantFrom("a.b", "x*", "constructor", "toString", "with space", "0") },
    { weight: target === "1.6" ? 2 : 0, arbitrary: fc.constantFrom("a/b", "t~x", "~1", "x/~0/y", "$ref", "xs") },
  );

const smallInt = fc.integer({ min: -20, max: 20 });

/** Patterns of `pattern` strings (pi 1.6 only), with values in `patternSamples`. */
const patternSamples: Record<string, string[]> = {
  "^[a-z]+$": ["abc", "ABC", "", "a1"],
  "^\\d{3}$": ["123", "12", "1234", "abc"],
  "é|ü": ["café", "cafe", "über"],
};

const leafNodeFor = (target: GeneratorTarget): fc.Arbitrary<SchemaNode> => {
  const is16 = target === "1.6";
  return fc.oneof(
    fc.record(
      {
        kind: fc.constant("string" as const),
        minLength: fc.integer({ min: 0, max: 3 }),
        maxLength: fc.integer({ min: 2, max: 12 }),
        format: fc.constantFrom(...formatsFor(target)),
      },
      { requiredKeys: ["kind"] },
    ),
    fc.record(
      {
        kind: fc.constantFrom("number" as const, "integer" as const),
        minimum: smallInt,
        maximum: fc.integer({ min: 0, max: 100 }),
        exclusiveMinimum: smallInt,
        multipleOf: fc.constantFrom(2, 0.5, 3),
      },
      { requiredKeys: ["kind"] },
    ),
    fc.constant({ kind: "boolean" as const }),
    fc.constant({ kind: "null" as const }),
    fc.record({ kind: fc.constant("literal" as const), value: fc.oneof(fc.constantFrom("a", "b", "on", "5", ""), smallInt, fc.boolean()) }),
    fc.record({
      kind: fc.constant("enum" as const),
      values: fc.uniqueArray(fc.oneof(fc.constantFrom("red", "green", "1", "true"), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 4 }),
    }),
    {
      weight: is16 ? 1 : 0,
      arbitrary: fc.record({ kind: fc.constant("pattern" as const), pattern: fc.constantFrom(...Object.keys(patternSamples)) }),
    },
    { weight: is16 ? 1 : 0, arbitrary: fc.constant({ kind: "danglingRef" as const }) },
  );
};
const leafNodes = { "0.73": leafNodeFor("0.73"), "1.6": leafNodeFor("1.6") };

/** Schema trees; `isPlain` allows the shapes only a plain JSON schema has (type lists, `oneOf`, `$ref`s). */
export function schemaNode(isPlain: boolean, target: GeneratorTarget = "0.73"): fc.Arbitrary<SchemaNode> {
  const leafNode = leafNodes[target];
  const is16 = target === "1.6";
  const propertyNames = propertyNamesFor(target);
  const { node } = fc.letrec<{ node: SchemaNode; object: SchemaNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      { weight: 6, arbitrary: leafNode },
      { weight: 2, arbitrary: tie("object") },
      {
        weight: 2,
        arbitrary: fc.record(
          {
            kind: fc.constant("array" as const),
            items: tie("node"),
            minItems: fc.integer({ min: 0, max: 2 }),
            maxItems: fc.integer({ min: 1, max: 4 }),
          },
          { requiredKeys: ["kind", "items"] },
        ),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant("union" as const), members: fc.array(tie("node"), { minLength: 2, maxLength: 3 }) }) },
      {
        weight: isPlain ? 1 : 0,
        arbitrary: fc.record({
          kind: fc.constant("types" as const),
          types: fc.uniqueArray(fc.constantFrom("string" as const, "number" as const, "integer" as const, "boolean" as const, "null" as const), {
            minLength: 1,
            maxLength: 3,
          }),
        }),
      },
      {
        weight: isPlain ? 1 : 0,
        arbitrary: fc.record({ kind: fc.constant("oneOf" as const), members: fc.array(tie("node"), { minLength: 2, maxLength: 3 }) }),
      },
      {
        weight: is16 && isPlain ? 2 : 0,
        arbitrary: fc.record({ kind: fc.constant("ref" as const), name: fc.constantFrom("Item", "Entry", "Value"), target: tie("node") }),
      },
      { weight: is16 && isPlain ? 1 : 0, arbitrary: fc.constant({ kind: "tree" as const }) },
      { weight: is16 && isPlain ? 1 : 0, arbitrary: fc.record({ kind: fc.constant("itemsOnly" as const), items: tie("node") }) },
      {
        weight: is16 ? 1 : 0,
        arbitrary: fc.record({ kind: fc.constant("tuple" as const), items: fc.array(tie("node"), { minLength: 1, maxLength: 3 }) }),
      },
      {
        weight: is16 ? 1 : 0,
        arbitrary: fc.record({
          kind: fc.constant("allOf" as const),
          members: fc.array(tie("object") as fc.Arbitrary<SchemaNode & { kind: "object" }>, { minLength: 2, maxLength: 2 }),
        }),
      },
      { weight: is16 ? 1 : 0, arbitrary: fc.record({ kind: fc.constant("record" as const), values: tie("node") }) },
    ),
    object: fc.record({
      kind: fc.constant("object" as const),
      properties: fc.uniqueArray(fc.record({ name: propertyNames, schema: tie("node"), isOptional: fc.boolean() }), {
        maxLength: 4,
        selector: (property) => property.name,
      }),
      additional: fc.oneof(
        { weight: 3, arbitrary: fc.constant("absent" as const) },
        { weight: 2, arbitrary: fc.constant("false" as const) },
        { weight: 1, arbitrary: fc.constant("true" as const) },
        { weight: 1, arbitrary: leafNode },
      ),
    }),
  }));
  return node;
}

/** A tool's parameters: always an object at the top, as pi's tools have. */
export function toolSchemaNode(isPlain: boolean, target: GeneratorTarget = "0.73"): fc.Arbitrary<SchemaNode & { kind: "object" }> {
  return fc.record({
    kind: fc.constant("object" as const),
    properties: fc.uniqueArray(fc.record({ name: propertyNamesFor(target), schema: schemaNode(isPlain, target), isOptional: fc.boolean() }), {
      minLength: 1,
      maxLength: 5,
      selector: (property) => property.name,
    }),
    additional: fc.constantFrom("absent" as const, "false" as const, "true" as const),
  });
}

/** The node as a plain JSON schema; the definitions its `$ref`s name go in the root's `$defs`. */
export function toPlainSchema(node: SchemaNode): Record<string, unknown> {
  const definitions: Record<string, unknown> = {};
  const schema = renderPlain(node, definitions);
  if (Object.keys(definitions).length > 0) schema.$defs = definitions;
  return schema;
}

/** The tree of integers `{ value, children? }`, as a recursive definition. */
const treeDefinition = {
  type: "object",
  properties: { value: { type: "integer" }, children: { type: "array", items: { $ref: "#/$defs/Tree" } } },
  required: ["value"],
  additionalProperties: false,
};

function renderPlain(node: SchemaNode, definitions: Record<string, unknown>): Record<string, unknown> {
  const render = (child: SchemaNode) => renderPlain(child, definitions);
  switch (node.kind) {
    case "string":
    case "number":
    case "integer": {
      const { kind, ...constraints } = node;
      return { type: kind, ...constraints };
    }
    case "boolean":
    case "null":
      return { type: node.kind };
    case "literal":
      return { const: node.value };
    case "enum":
      return { enum: node.values };
    case "array": {
      const { kind, items, ...bounds } = node;
      return { type: "array", items: render(items), ...bounds };
    }
    case "object": {
      const schema: Record<string, unknown> = {
        type: "object",
        properties: Object.fromEntries(node.properties.map((property) => [property.name, render(property.schema)])),
      };
      const required = node.properties.filter((property) => !property.isOptional).map((property) => property.name);
      if (required.length > 0) schema.required = required;
      if (node.additional === "false") schema.additionalProperties = false;
      else if (node.additional === "true") schema.additionalProperties = true;
      else if (node.additional !== "absent") schema.additionalProperties = render(node.additional);
      return schema;
    }
    case "union":
      return { anyOf: node.members.map(render) };
    case "types":
      return { type: node.types.length === 1 ? node.types[0] : node.types };
    case "oneOf":
      return { oneOf: node.members.map(render) };
    case "pattern":
      return { type: "string", pattern: node.pattern };
    case "ref": {
      // Each reference gets a definition of its own, so the values generated for its target fit it.
      const name = node.name in definitions ? `${node.name}${Object.keys(definitions).length}` : node.name;
      definitions[name] = true; // the name is taken while its target renders
      definitions[name] = render(node.target);
      return { $ref: `#/$defs/${name}` };
    }
    case "danglingRef":
      return { $ref: "#/$defs/Missing" };
    case "tree":
      definitions.Tree = treeDefinition;
      return { $ref: "#/$defs/Tree" };
    case "itemsOnly":
      return { items: render(node.items) };
    case "tuple":
      return { type: "array", prefixItems: node.items.map(render) };
    case "allOf":
      return { allOf: node.members.map(render) };
    case "record":
      return { type: "object", patternProperties: { "^[a-z]+$": render(node.values) } };
  }
}

/** The node built with TypeBox (only the shapes TypeBox builds: no type lists, no `oneOf`, no `$defs`). */
export function toTypeBoxSchema(node: SchemaNode): TSchema {
  switch (node.kind) {
    case "string": {
      const { kind, ...options } = node;
      return Type.String(options);
    }
    case "number":
    case "integer": {
      const { kind, ...options } = node;
      return kind === "number" ? Type.Number(options) : Type.Integer(options);
    }
    case "boolean":
      return Type.Boolean();
    case "null":
      return Type.Null();
    case "literal":
      return Type.Literal(node.value);
    case "enum":
      return Type.Enum(node.values);
    case "array": {
      const { kind, items, ...options } = node;
      return Type.Array(toTypeBoxSchema(items), options);
    }
    case "object": {
      const properties = Object.fromEntries(
        node.properties.map((property) => {
          const schema = toTypeBoxSchema(property.schema);
          return [property.name, property.isOptional ? Type.Optional(schema) : schema];
        }),
      );
      const additional =
        node.additional === "absent"
          ? {}
          : { additionalProperties: node.additional === "false" ? false : node.additional === "true" ? true : toTypeBoxSchema(node.additional) };
      return Type.Object(properties, additional);
    }
    case "union":
      return Type.Union(node.members.map(toTypeBoxSchema));
    case "pattern":
      return Type.String({ pattern: node.pattern });
    case "danglingRef":
      // `{ $ref: "Missing" }`: a document pi-schema is not given.
      return Type.Ref("Missing");
    case "tuple":
      return Type.Tuple(node.items.map(toTypeBoxSchema));
    case "allOf":
      return Type.Intersect(node.members.map(toTypeBoxSchema));
    case "record":
      return Type.Record(Type.String(), toTypeBoxSchema(node.values));
    case "types":
    case "oneOf":
    case "ref":
    case "tree":
    case "itemsOnly":
      throw new Error(`TypeBox builds no ${node.kind} node`);
  }
}

/** Any small JSON value: what a confused model might send anywhere. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -0,
    1,
    3.5,
    -7,
    "",
    " ",
    "5",
    " 12 ",
    "3.5",
    "true",
    "false",
    "null",
    "1e3",
    "abc",
    "0x10",
    "Infinity",
    "NaN",
  ),
  fc.array(fc.oneof(fc.constantFrom(null, 1, "1", true, "x")), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom("a", "b", "x"), fc.constantFrom(null, 1, "1", true), { maxKeys: 2, noNullPrototype: true }),
);

/** An instance of a class: `structuredClone` copies its own fields into a plain object. */
class Point {
  x = 1;
  y = "2";
}

/**
 * Values no JSON text holds, which arguments built in code may (pi 1.6
 * only): they take the full pipeline, and their copies keep what
 * `structuredClone` keeps (a `Date`, bytes, a `Map`, `NaN`…).
 */
const notJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, undefined, -0),
  fc.constant(null).map(() => new Date(0)),
  fc.constant(null).map(() => new Uint8Array([1, 2])),
  fc.constant(null).map(() => new Map([["a", 1]])),
  fc.constant(null).map(() => /x/g),
  fc.constant(null).map(() => new Point()),
  fc.constant(null).map(() => [1, undefined, "3"]),
);

/** Values of the node's type written as a model might: numbers as strings, booleans as words or 0/1, null. */
function coercibleFor(node: SchemaNode, target: GeneratorTarget): fc.Arbitrary<unknown> {
  switch (node.kind) {
    case "number":
    case "integer": {
      const written = fc.oneof(
        fc.integer({ min: -30, max: 120 }).map(String),
        fc.constantFrom("2.5", " 8 ", "1e1", "", "-0", true, false, null, "0.5"),
      );
      // pi-schema also reads TypeBox's bigint notation and booleans written in any case.
      return target === "1.6" ? fc.oneof(written, fc.constantFrom("12n", "-3n", "7.9", "TRUE", "False", " 7 ")) : written;
    }
    case "boolean":
      return fc.constantFrom("true", "false", 1, 0, null, "TRUE", "yes");
    case "string":
      return fc.oneof(fc.integer({ min: -5, max: 500 }), fc.constantFrom(true, false, null, 2.5));
    case "null":
      return fc.constantFrom("", 0, false, "null");
    case "literal":
      return fc.constantFrom(String(node.value), node.value === true ? 1 : 0, null);
    case "enum":
      return fc.constantFrom(...node.values.map(String), ...node.values.filter((v) => typeof v === "string").map(Number));
    case "types":
      return fc.constantFrom("1", "true", 0, null, "", 2.5);
    case "array":
    case "itemsOnly":
      // A single value where an array is expected, which pi-schema wraps.
      return target === "1.6" ? fc.oneof(anyJson, rightValueFor(node.items, 3, target)) : anyJson;
    case "tuple":
      return fc.oneof(anyJson, rightValueFor(node.items[0]!, 3, target));
    case "pattern":
      return fc.constantFrom(123, 12, null, true);
    default:
      return anyJson;
  }
}

/** Arguments for a node: right, coercible, wrong, null, or nested values built the same way (and, for pi 1.6, a few that are not JSON). */
export function valueFor(node: SchemaNode, depth = 0, target: GeneratorTarget = "0.73"): fc.Arbitrary<unknown> {
  const wrong = depth > 2 ? fc.constant(null) : anyJson;
  return fc.oneof(
    { weight: 16, arbitrary: rightValueFor(node, depth, target) },
    { weight: 3, arbitrary: coercibleFor(node, target) },
    { weight: 1, arbitrary: wrong },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: target === "1.6" ? 1 : 0, arbitrary: notJson },
  );
}

function rightValueFor(node: SchemaNode, depth: number, target: GeneratorTarget): fc.Arbitrary<unknown> {
  switch (node.kind) {
    case "string":
      if (node.format) return fc.constantFrom(...samplesOf(node.format));
      return fc.string({ minLength: node.minLength ?? 0, maxLength: Math.max(node.minLength ?? 0, node.maxLength ?? 8) });
    case "number":
    case "integer":
      return fc.oneof({ weight: 4, arbitrary: numberWithin(node) }, { weight: 1, arbitrary: fc.constantFrom(0.5, 2.5, -0, 99.5) });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "literal":
      return fc.constant(node.value);
    case "enum":
      return fc.constantFrom(...node.values);
    case "array":
      return fc.array(valueFor(node.items, depth + 1, target), { maxLength: 4 });
    case "object":
      return objectFor(node, depth, target);
    case "union":
    case "oneOf":
      return fc.oneof(...node.members.map((member) => rightValueFor(member, depth + 1, target)));
    case "types":
      return fc.oneof(...node.types.map((type) => rightValueFor({ kind: type } as SchemaNode, depth, target)));
    case "pattern":
      return fc.constantFrom(...patternSamples[node.pattern]!);
    case "ref":
      return valueFor(node.target, depth + 1, target);
    case "danglingRef":
      return anyJson;
    case "tree":
      return treeValue(depth);
    case "itemsOnly":
      return fc.oneof(fc.array(valueFor(node.items, depth + 1, target), { maxLength: 3 }), rightValueFor(node.items, depth + 1, target));
    case "tuple":
      return fc.tuple(...node.items.map((item) => valueFor(item, depth + 1, target)));
    case "allOf":
      return fc
        .tuple(...node.members.map((member) => objectFor(member, depth + 1, target)))
        .map((parts) => Object.assign({}, ...parts) as Record<string, unknown>);
    case "record":
      return fc.dictionary(fc.constantFrom("a", "key", "Q", "x1"), valueFor(node.values, depth + 1, target), { maxKeys: 3, noNullPrototype: true });
  }
}

/** A tree of integers: values right, as strings (coerced), or missing; children as an array or a single tree. */
function treeValue(depth: number): fc.Arbitrary<unknown> {
  const value = fc.oneof(fc.integer({ min: -5, max: 50 }), fc.constantFrom("7", "x", null));
  if (depth > 3) return fc.record({ value }, { requiredKeys: [] });
  const child = treeValue(depth + 1);
  return fc.record({ value, children: fc.oneof(fc.array(child, { maxLength: 2 }), child) }, { requiredKeys: ["value"] });
}

/** Mostly numbers inside the node's bounds and multiples of its `multipleOf`. */
function numberWithin(node: SchemaNode & { kind: "number" | "integer" }): fc.Arbitrary<number> {
  const step = node.multipleOf ?? 1;
  const low = Math.max(node.minimum ?? -30, node.exclusiveMinimum === undefined ? -30 : node.exclusiveMinimum + step);
  const high = node.maximum ?? 120;
  const first = Math.ceil(low / step);
  const last = Math.floor(high / step);
  if (first > last) return fc.integer({ min: -30, max: 120 });
  return fc.integer({ min: first, max: last }).map((k) => k * step);
}

/** An object for an object node: each property present or missing, sometimes an extra key. */
export function objectFor(node: SchemaNode & { kind: "object" }, depth = 0, target: GeneratorTarget = "0.73"): fc.Arbitrary<Record<string, unknown>> {
  const entries = node.properties.map((property) => {
    const value = valueFor(property.schema, depth + 1, target);
    // A dangling reference rejects every value at its place: mostly leave it out, so that the rest of the object counts.
    const present =
      property.schema.kind === "danglingRef"
        ? fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value })
        : fc.option(value, { freq: property.isOptional ? 3 : 12, nil: undefined });
    return present.map((item) => [property.name, item] as const);
  });
  // pi 1.6's cases hold fewer extra keys, so that more of them, with their richer shapes, pass.
  const extra = fc.option(fc.tuple(fc.constantFrom("extra", "b", "zz", "axb", "xx"), anyJson), { freq: target === "1.6" ? 2 : 8, nil: undefined });
  return fc.tuple(fc.tuple(...entries), extra).map(([present, extraEntry]) => {
    const object: Record<string, unknown> = {};
    for (const [name, value] of present) if (value !== undefined) object[name] = value;
    if (extraEntry !== undefined && !(extraEntry[0] in object)) object[extraEntry[0]] = extraEntry[1];
    return object;
  });
}

/** A tool call's arguments: mostly an object for the schema, sometimes not an object at all. */
export function argumentsFor(node: SchemaNode & { kind: "object" }, target: GeneratorTarget = "0.73"): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 12, arbitrary: objectFor(node, 0, target) },
    { weight: 1, arbitrary: anyJson },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}
