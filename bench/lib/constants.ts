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
