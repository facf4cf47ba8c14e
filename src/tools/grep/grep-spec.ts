/** Definition of the worker tool `grep`, apart from grep.ts so the main thread does not load `ignore`. */
import type { JsonSchema } from "../../types.js";

export const GREP_DEFAULT_MAX_RESULTS = 200;
export const GREP_MAX_RESULTS_LIMIT = 5000;

export const grepSpec = {
  name: "grep",
  label: "Grep",
  description:
    "Search files under a directory for lines matching a JavaScript regular expression. " +
    "Returns `file:line: text` lines (file relative to `path`; a name holding control characters, quotes or backslashes " +
    "is shown in double quotes with C-style escapes). Respects .gitignore files, " +
    "skips .git/, node_modules/, binary files and files over 4 MiB. Lines are matched one at a time. " +
    `Returns at most maxResults matches (default ${GREP_DEFAULT_MAX_RESULTS}, max ${GREP_MAX_RESULTS_LIMIT}) ` +
    "and at most 64 KiB of text; a truncated result says so.",
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", minLength: 1, description: "JavaScript regular expression source." },
      path: { type: "string", description: 'File or directory to search. Default ".".' },
      flags: { type: "string", description: 'RegExp flags, e.g. "i" for case-insensitive.' },
      glob: { type: "string", description: 'Only search files whose name matches, e.g. "*.ts" (* and ? wildcards).' },
      maxResults: {
        type: "integer",
        minimum: 1,
        maximum: GREP_MAX_RESULTS_LIMIT,
        description: `Maximum matching lines to return (default ${GREP_DEFAULT_MAX_RESULTS}).`,
      },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
} as const satisfies { name: string; label: string; description: string; parameters: JsonSchema };
