import fc from "fast-check";
import { Type, type TSchema } from "typebox";

/**
 * Generated tool schemas and arguments for the randomized validation
 * differential. A schema is generated once as a small tree (`SchemaNode`) and
 * rendered either as a plain JSON schema or built with TypeBox's `Type.*`
 * (which adds TypeBox's own metadata, and makes `Value.Convert` act); the
 * arguments are generated from the same tree, right, wrong, coercible, null
 * or nested.
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
  | { kind: "oneOf"; members: SchemaNode[] };

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

/** Property names: plain ones, and some that TypeBox reads as patterns or that every object "has" for pi's `in`. */
const propertyNames = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("a", "b", "c", "count", "label", "path", "items", "mode", "value", "nested") },
  { weight: 1, arbitrary: fc.constantFrom("a.b", "x*", "constructor", "toString", "with space", "0") },
);

const smallInt = fc.integer({ min: -20, max: 20 });

const leafNode: fc.Arbitrary<SchemaNode> = fc.oneof(
  fc.record(
    {
      kind: fc.constant("string" as const),
      minLength: fc.integer({ min: 0, max: 3 }),
      maxLength: fc.integer({ min: 2, max: 12 }),
      format: fc.constantFrom(...Object.keys(formatSamples)),
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
);

/** Schema trees; `isPlain` allows the shapes only a plain JSON schema has (type lists, `oneOf`). */
export function schemaNode(isPlain: boolean): fc.Arbitrary<SchemaNode> {
  const { node } = fc.letrec<{ node: SchemaNode; object: SchemaNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      { weight: 6, arbitrary: leafNode },
      { weight: 2, arbitrary: tie("object") },
      {
        weight: 2,
        arbitrary: fc.record(
          { kind: fc.constant("array" as const), items: tie("node"), minItems: fc.integer({ min: 0, max: 2 }), maxItems: fc.integer({ min: 1, max: 4 }) },
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
      { weight: isPlain ? 1 : 0, arbitrary: fc.record({ kind: fc.constant("oneOf" as const), members: fc.array(tie("node"), { minLength: 2, maxLength: 3 }) }) },
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
export function toolSchemaNode(isPlain: boolean): fc.Arbitrary<SchemaNode & { kind: "object" }> {
  return fc.record({
    kind: fc.constant("object" as const),
    properties: fc.uniqueArray(fc.record({ name: propertyNames, schema: schemaNode(isPlain), isOptional: fc.boolean() }), {
      minLength: 1,
      maxLength: 5,
      selector: (property) => property.name,
    }),
    additional: fc.constantFrom("absent" as const, "false" as const, "true" as const),
  });
}

/** The node as a plain JSON schema. */
export function toPlainSchema(node: SchemaNode): Record<string, unknown> {
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
      return { type: "array", items: toPlainSchema(items), ...bounds };
    }
    case "object": {
      const schema: Record<string, unknown> = {
        type: "object",
        properties: Object.fromEntries(node.properties.map((property) => [property.name, toPlainSchema(property.schema)])),
      };
      const required = node.properties.filter((property) => !property.isOptional).map((property) => property.name);
      if (required.length > 0) schema.required = required;
      if (node.additional === "false") schema.additionalProperties = false;
      else if (node.additional === "true") schema.additionalProperties = true;
      else if (node.additional !== "absent") schema.additionalProperties = toPlainSchema(node.additional);
      return schema;
    }
    case "union":
      return { anyOf: node.members.map(toPlainSchema) };
    case "types":
      return { type: node.types.length === 1 ? node.types[0] : node.types };
    case "oneOf":
      return { oneOf: node.members.map(toPlainSchema) };
  }
}

/** The node built with TypeBox (only the shapes TypeBox builds: no type lists, no `oneOf`). */
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
    case "types":
    case "oneOf":
      throw new Error(`TypeBox builds no ${node.kind} node`);
  }
}

/** Any small JSON value: what a confused model might send anywhere. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -0, 1, 3.5, -7, "", " ", "5", " 12 ", "3.5", "true", "false", "null", "1e3", "abc", "0x10", "Infinity", "NaN"),
  fc.array(fc.oneof(fc.constantFrom(null, 1, "1", true, "x")), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom("a", "b", "x"), fc.constantFrom(null, 1, "1", true), { maxKeys: 2, noNullPrototype: true }),
);

/** Values of the node's type written as a model might: numbers as strings, booleans as words or 0/1, null. */
function coercibleFor(node: SchemaNode): fc.Arbitrary<unknown> {
  switch (node.kind) {
    case "number":
    case "integer":
      return fc.oneof(fc.integer({ min: -30, max: 120 }).map(String), fc.constantFrom("2.5", " 8 ", "1e1", "", "-0", true, false, null, "0.5"));
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
    default:
      return anyJson;
  }
}

/** Arguments for a node: right, coercible, wrong, null, or nested values built the same way. */
export function valueFor(node: SchemaNode, depth = 0): fc.Arbitrary<unknown> {
  const wrong = depth > 2 ? fc.constant(null) : anyJson;
  return fc.oneof(
    { weight: 16, arbitrary: rightValueFor(node, depth) },
    { weight: 3, arbitrary: coercibleFor(node) },
    { weight: 1, arbitrary: wrong },
    { weight: 1, arbitrary: fc.constant(null) },
  );
}

function rightValueFor(node: SchemaNode, depth: number): fc.Arbitrary<unknown> {
  switch (node.kind) {
    case "string":
      if (node.format) return fc.constantFrom(...formatSamples[node.format]!);
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
      return fc.array(valueFor(node.items, depth + 1), { maxLength: 4 });
    case "object":
      return objectFor(node, depth);
    case "union":
    case "oneOf":
      return fc.oneof(...node.members.map((member) => rightValueFor(member, depth + 1)));
    case "types":
      return fc.oneof(...node.types.map((type) => rightValueFor({ kind: type } as SchemaNode, depth)));
  }
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
export function objectFor(node: SchemaNode & { kind: "object" }, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const entries = node.properties.map((property) =>
    fc.option(valueFor(property.schema, depth + 1), { freq: property.isOptional ? 3 : 12, nil: undefined }).map((value) => [property.name, value] as const),
  );
  const extra = fc.option(fc.tuple(fc.constantFrom("extra", "b", "zz", "axb", "xx"), anyJson), { freq: 8, nil: undefined });
  return fc.tuple(fc.tuple(...entries), extra).map(([present, extraEntry]) => {
    const object: Record<string, unknown> = {};
    for (const [name, value] of present) if (value !== undefined) object[name] = value;
    if (extraEntry !== undefined && !(extraEntry[0] in object)) object[extraEntry[0]] = extraEntry[1];
    return object;
  });
}

/** A tool call's arguments: mostly an object for the schema, sometimes not an object at all. */
export function argumentsFor(node: SchemaNode & { kind: "object" }): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 12, arbitrary: objectFor(node) }, { weight: 1, arbitrary: anyJson }, { weight: 1, arbitrary: fc.constant(undefined) });
}
