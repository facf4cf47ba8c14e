/** The tiny constant result every no-op tool returns, in the worker and in process alike. */
export const noopResult = Object.freeze({
  content: [{ type: "text" as const, text: "ok" }],
  details: {},
});

/** JSON Schema of the spin tool's arguments, shared by pi's tool and toolpool's. */
export const spinParameters = {
  type: "object",
  properties: { iterations: { type: "integer", minimum: 1 } },
  required: ["iterations"],
  additionalProperties: false,
};

/** JSON Schema of the no-op tool: no arguments. */
export const noopParameters = { type: "object", properties: {} };

/** A grep-like tool's JSON Schema: the validation benches' plain-schema case. */
export const grepSchema: Record<string, unknown> = {
  type: "object",
  properties: {
    pattern: { type: "string", minLength: 1 },
    path: { type: "string" },
    ignoreCase: { type: "boolean" },
    maxResults: { type: "integer", minimum: 1, maximum: 1000 },
    globs: { type: "array", items: { type: "string" } },
  },
  required: ["pattern"],
  additionalProperties: false,
};
