/** Definition of the worker tool `diff`, apart from diff.ts so the main thread does not load the `diff` package. */
import type { JsonSchema } from "../types.js";

export const DIFF_DEFAULT_CONTEXT = 3;
export const DIFF_MAX_CONTEXT = 10_000;

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
