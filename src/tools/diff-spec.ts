/**
 * Tool definition of the built-in worker tool `diff` (what the model sees), apart
 * from its implementation (diff.ts): the main thread needs the definition, only a
 * worker needs the implementation and the `diff` package.
 *
 * @module
 */
import type { JsonSchema } from "../types.js";

/** Default number of context lines around each change. */
export const DIFF_DEFAULT_CONTEXT = 3;
/** Upper bound accepted for `context`. */
export const DIFF_MAX_CONTEXT = 10_000;

/** Tool definition of `diff`, handed to the model. */
export const diffSpec = {
  name: "diff",
  label: "Diff",
  description:
    "Unified diff between an old and a new version, each given as a text (oldText/newText) or a file (oldPath/newPath). " +
    "Give exactly one source per side. Output is a patch the patch tool can apply; at most 64 KiB of text, " +
    "a truncated result says so.",
  parameters: {
    type: "object",
    properties: {
      oldText: { type: "string", description: "Old version as text." },
      newText: { type: "string", description: "New version as text." },
      oldPath: { type: "string", description: "File holding the old version." },
      newPath: { type: "string", description: "File holding the new version." },
      context: {
        type: "integer",
        minimum: 0,
        maximum: DIFF_MAX_CONTEXT,
        description: `Context lines around each change (default ${DIFF_DEFAULT_CONTEXT}).`,
      },
    },
    additionalProperties: false,
  },
} as const satisfies { name: string; label: string; description: string; parameters: JsonSchema };
