/**
 * Built-in worker tool `diff`: unified diff of two files or two texts. Runs in a
 * worker, so it imports nothing from the coordinator. File reads are
 * synchronous on purpose: a worker runs one call at a time, and the promise API
 * would queue on libuv's small shared thread pool.
 *
 * @module
 */
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch, type StructuredPatchOptionsAbortable } from "diff";
import type { AgentToolResult, WorkerToolContext } from "../types.js";
import { quotePath } from "./quote-path.js";
import { readRegularFile } from "./regular-file.js";
import { resolveInWorkspace, workspaceFromModuleUrl, type Workspace } from "./workspace.js";

import { DIFF_DEFAULT_CONTEXT, DIFF_MAX_CONTEXT } from "./diff-spec.js";
export { DIFF_DEFAULT_CONTEXT, DIFF_MAX_CONTEXT, diffSpec } from "./diff-spec.js";
const DIFF_MAX_FILE_BYTES = 8 * 1024 * 1024;
const DIFF_MAX_OUTPUT_BYTES = 64 * 1024;

/** Largest edit distance jsdiff searches (its line diff costs O((N + M) · D)). */
export const DIFF_MAX_EDIT_LENGTH = 10_000;
const DIFF_MAX_SEARCH_MS = 2_000;

const COMPARISONS_PER_ABORT_CHECK = 1024;

/** The old side from exactly one of `oldText`/`oldPath`, the new from exactly one of `newText`/`newPath`. */
interface DiffArgs {
  oldText?: string;
  newText?: string;
  oldPath?: string;
  newPath?: string;
  context?: number;
}

interface DiffDetails {
  hunks: number;
  additions: number;
  deletions: number;
  identical: boolean;
  truncated: boolean;
}

/**
 * Unified diff of the two sides. Header names are the paths (quoted as git
 * does) or "old"/"new"; the text is cut at a line boundary at 64 KiB, while
 * `details` counts the full patch. `ctx.signal` aborts a long diff; gives up
 * past {@link DIFF_MAX_EDIT_LENGTH} lines or {@link DIFF_MAX_SEARCH_MS}.
 */
export const execute = createDiffTool(workspaceFromModuleUrl(import.meta.url));

export function createDiffTool(workspace: Workspace): (args: DiffArgs, ctx: WorkerToolContext<DiffDetails>) => Promise<AgentToolResult<DiffDetails>> {
  return (args, ctx) => executeDiff(workspace, args, ctx);
}

async function executeDiff(workspace: Workspace, args: DiffArgs, ctx: WorkerToolContext<DiffDetails>): Promise<AgentToolResult<DiffDetails>> {
  const { signal } = ctx;
  signal.throwIfAborted();

  const context = args.context ?? DIFF_DEFAULT_CONTEXT;
  if (!Number.isInteger(context) || context < 0 || context > DIFF_MAX_CONTEXT) {
    throw new Error(`diff: context must be an integer from 0 to ${DIFF_MAX_CONTEXT}, got ${String(context)}`);
  }
  const oldSide = readSide(workspace, "old", args.oldText, args.oldPath);
  const newSide = readSide(workspace, "new", args.newText, args.newPath);
  signal.throwIfAborted();

  let comparisons = 0;
  // jsdiff takes no AbortSignal; its comparator runs for every line comparison.
  const options: StructuredPatchOptionsAbortable & { comparator: (left: string, right: string) => boolean } = {
    context,
    maxEditLength: DIFF_MAX_EDIT_LENGTH,
    timeout: DIFF_MAX_SEARCH_MS,
    comparator: (left, right) => {
      if (++comparisons >= COMPARISONS_PER_ABORT_CHECK) {
        comparisons = 0;
        signal.throwIfAborted();
      }
      return left === right;
    },
  };
  const patch = structuredPatch(oldSide.name, newSide.name, oldSide.text, newSide.text, undefined, undefined, options);
  signal.throwIfAborted();
  if (patch === undefined) {
    throw new Error(
      `diff: gave up: the inputs differ by more than ${DIFF_MAX_EDIT_LENGTH} lines, or finding the differences ` +
        `took more than ${DIFF_MAX_SEARCH_MS} ms; diff smaller pieces`,
    );
  }

  let additions = 0;
  let deletions = 0;
  for (const hunk of patch.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith("+")) additions++;
      else if (line.startsWith("-")) deletions++;
    }
  }
  const hunks = patch.hunks.length;
  if (hunks === 0) {
    return {
      content: [{ type: "text", text: "The inputs are identical." }],
      details: { hunks: 0, additions: 0, deletions: 0, identical: true, truncated: false },
    };
  }

  const full = formatPatch(patch, FILE_HEADERS_ONLY);
  const { text, truncated } = capAtLine(full, DIFF_MAX_OUTPUT_BYTES);
  const shown = truncated
    ? `${text}\n[truncated: the patch is ${Buffer.byteLength(full, "utf8")} bytes, only the first 64 KiB are shown; ` +
      "diff smaller pieces to get an applicable patch]"
    : text;
  return {
    content: [{ type: "text", text: shown }],
    details: { hunks, additions, deletions, identical: false, truncated },
  };
}

function readSide(workspace: Workspace, side: "old" | "new", text: string | undefined, path: string | undefined): { name: string; text: string } {
  const textKey = `${side}Text`;
  const pathKey = `${side}Path`;
  if ((text === undefined) === (path === undefined)) {
    throw new Error(`diff: give exactly one of "${textKey}" or "${pathKey}"`);
  }
  if (text !== undefined) return { name: side, text };
  const file = path!;
  const realPath = resolveInWorkspace(workspace, "diff", pathKey, file);
  return { name: file, text: readRegularFile(realPath, `diff: ${pathKey} ${quotePath(file)}`, DIFF_MAX_FILE_BYTES).toString("utf8") };
}

function capAtLine(text: string, maxBytes: number): { text: string; truncated: boolean } {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return { text, truncated: false };
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const nl = text.indexOf("\n", end);
    const lineEnd = nl === -1 ? text.length : nl + 1;
    const size = Buffer.byteLength(text.slice(end, lineEnd), "utf8");
    if (bytes + size > maxBytes) break;
    bytes += size;
    end = lineEnd;
  }
  return { text: text.slice(0, end).replace(/\n$/, ""), truncated: true };
}
