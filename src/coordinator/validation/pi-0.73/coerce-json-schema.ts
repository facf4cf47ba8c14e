import type { JsonSchema } from "../../../types.js";

/** `undefined` when the sub-schema cannot be compiled; the union step then skips that member. */
export type SubSchemaCheck = (schema: JsonSchema, value: unknown) => boolean | undefined;

/**
 * pi-ai 0.73.1's coercion after `Value.Convert`, rule for rule and in pi's order (pi applies it
 * to every schema TypeBox 1.x builds). Mutates objects and arrays in place; returns the coerced value.
 */
export function coerceWithJsonSchema(value: unknown, schema: JsonSchema, check: SubSchemaCheck): unknown {
  let next = value;
  if (Array.isArray(schema.allOf)) {
    for (const member of schema.allOf) next = coerceWithJsonSchema(next, member as JsonSchema, check);
  }
  if (Array.isArray(schema.anyOf)) next = coerceToUnionMember(next, schema.anyOf, check);
  if (Array.isArray(schema.oneOf)) next = coerceToUnionMember(next, schema.oneOf, check);

  const types = listedTypes(schema);
  const hasListedType = types.length > 1 && types.some((type) => hasJsonType(next, type));
  if (types.length > 0 && !hasListedType) {
    for (const type of types) {
      const candidate = coercePrimitive(next, type);
      if (candidate !== next) {
        next = candidate;
        break;
      }
    }
  }
  if (types.includes("object") && isRecord(next) && !Array.isArray(next)) coerceProperties(next, schema, check);
  if (types.includes("array") && Array.isArray(next)) coerceItems(next, schema, check);
  return next;
}

function coerceToUnionMember(value: unknown, members: unknown[], check: SubSchemaCheck): unknown {
  for (const member of members) {
    // Unchecked cast, as in pi: a non-object member fails the same way.
    const candidate = coerceWithJsonSchema(structuredClone(value), member as JsonSchema, check);
    if (isRecord(member) && check(member, candidate) === true) return candidate;
  }
  return value;
}

function coerceProperties(target: Record<string, unknown>, schema: JsonSchema, check: SubSchemaCheck): void {
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (properties) {
    for (const [key, propertySchema] of Object.entries(properties)) {
      // `in`, as pi has it: inherited names (`constructor`, `toString`) count as present.
      if (key in target) target[key] = coerceWithJsonSchema(target[key], propertySchema, check);
    }
  }
  const additional = schema.additionalProperties;
  if (additional && isRecord(additional)) {
    const declared = new Set(properties ? Object.keys(properties) : []);
    for (const [key, propertyValue] of Object.entries(target)) {
      if (!declared.has(key)) target[key] = coerceWithJsonSchema(propertyValue, additional, check);
    }
  }
}

function coerceItems(target: unknown[], schema: JsonSchema, check: SubSchemaCheck): void {
  const items = schema.items;
  if (Array.isArray(items)) {
    for (let index = 0; index < target.length; index++) {
      const itemSchema = items[index] as JsonSchema | undefined;
      if (itemSchema) target[index] = coerceWithJsonSchema(target[index], itemSchema, check);
    }
  } else if (isRecord(items)) {
    for (let index = 0; index < target.length; index++) target[index] = coerceWithJsonSchema(target[index], items, check);
  }
}

function listedTypes(schema: JsonSchema): string[] {
  if (typeof schema.type === "string") return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((type): type is string => typeof type === "string");
  return [];
}

function hasJsonType(value: unknown, type: string): boolean {
  switch (type) {
    case "number":
      return typeof value === "number";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "string":
      return typeof value === "string";
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isRecord(value) && !Array.isArray(value);
    default:
      return false;
  }
}

function coercePrimitive(value: unknown, type: string): unknown {
  switch (type) {
    case "number":
    case "integer": {
      if (value === null) return 0;
      if (typeof value === "boolean") return value ? 1 : 0;
      if (typeof value === "string" && value.trim() !== "") {
        const parsed = Number(value);
        if (type === "number" ? Number.isFinite(parsed) : Number.isInteger(parsed)) return parsed;
      }
      return value;
    }
    case "boolean":
      if (value === null) return false;
      if (value === "true" || value === 1) return true;
      if (value === "false" || value === 0) return false;
      return value;
    case "string":
      if (value === null) return "";
      if (typeof value === "number" || typeof value === "boolean") return String(value);
      return value;
    case "null":
      return value === "" || value === 0 || value === false ? null : value;
    default:
      return value;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
