import fc from "fast-check";

/**
 * `$schema` addresses tool schemas carry in the wild (MCP servers,
 * zod-to-json-schema, hand-written ones): every draft with and without the
 * trailing `#`, `http` and `https`, and addresses ajv ships no meta-schema
 * for. pi validates with each; toolpool must accept each well-formed schema
 * and validate as pi does.
 */
export const schemaDraftAddresses = [
  "https://json-schema.org/draft/2020-12/schema",
  "http://json-schema.org/draft/2020-12/schema#",
  "https://json-schema.org/draft/2019-09/schema",
  "http://json-schema.org/draft-07/schema#",
  "http://json-schema.org/draft-07/schema",
  "https://json-schema.org/draft-07/schema#",
  "http://json-schema.org/draft-06/schema#",
  "http://json-schema.org/draft-04/schema#",
  "https://example.com/schemas/our-own-meta",
] as const;

/** Mostly no `$schema`; a third of the time one of {@link schemaDraftAddresses}. */
export const schemaDraft: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom(...schemaDraftAddresses) },
);

/** The schema naming `draft` as its `$schema` (first, as generators write it), or as it is. */
export function withDraft(schema: Record<string, unknown>, draft: string | undefined): Record<string, unknown> {
  return draft === undefined ? schema : { $schema: draft, ...schema };
}
