/** Definition of the worker tool `patch`, apart from patch.ts so the main thread does not load the `diff` package. */
import type { JsonSchema } from "../types.js";

export const PATCH_MAX_FUZZ = 10;

export const patchSpec = {
  name: "patch",
  label: "Patch",
  description:
    'Apply a unified diff (one file, one or more hunks) to a file ("path") or a text ("text"); give exactly one. ' +
    "Hunks may sit at other line numbers than their headers say; fuzzFactor (default 0, max 10) tolerates that many " +
    "mismatched context lines. With write: true and path, the file is rewritten (keeping its owner and permissions, " +
    "setuid/setgid cleared; read-only files and files with several hard links are refused) and a one-line summary returned; " +
    "otherwise the patched content is returned (at most 64 KiB, a truncated result says so). " +
    "Fails, changing nothing, if any hunk does not apply.",
  parameters: {
    type: "object",
    properties: {
      patch: { type: "string", minLength: 1, description: "Unified diff to apply." },
      path: { type: "string", description: "File to patch." },
      text: { type: "string", description: "Text to patch." },
      fuzzFactor: {
        type: "integer",
        minimum: 0,
        maximum: PATCH_MAX_FUZZ,
        description: "Mismatched context lines tolerated per hunk (default 0).",
      },
      write: { type: "boolean", description: "Write the patched content back to path (default false)." },
    },
    required: ["patch"],
    additionalProperties: false,
  },
} as const satisfies { name: string; label: string; description: string; parameters: JsonSchema };
