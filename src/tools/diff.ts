/**
 * Built-in worker tool `diff`: unified diff of two files or two texts.
 *
 * Loaded inside a worker thread, so it imports nothing from the coordinator or
 * the worker runtime; the diff itself comes from the `diff` package.
 *
 * @module
 */

// Synchronous file calls on purpose: a worker runs one call at a time, so
// blocking it costs nothing, while the promise API would queue each read on
// libuv's small thread pool, shared by the whole process (workers would then
// sit idle, waiting for it, through much of a busy run).
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch, type StructuredPatchOptionsAbortable } from "diff";
import type { AgentToolResult, WorkerToolContext } from "../types.js";
import { quotePath } from "./quote-path.js";
import { readRegularFile } from "./regular-file.js";
import { resolveInWorkspace, workspaceFromModuleUrl, type Workspace } from "./workspace.js";

import { DIFF_DEFAULT_CONTEXT, DIFF_MAX_CONTEXT } from "./diff-spec.js";
export { DIFF_DEFAULT_CONTEXT, DIFF_MAX_CONTEXT, diffSpec } from "./diff-spec.js";
/** Inputs read from files may not be larger than this. */
const DIFF_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Cap on the UTF-8 size of the result text. */
const DIFF_MAX_OUTPUT_BYTES = 64 * 1024;

/**
 * Largest edit distance (lines added plus removed) jsdiff searches for. Its
 * line diff costs O((N + M) · D); past this bound it gives up and the call
 * says so instead of running for minutes.
 */
export const DIFF_MAX_EDIT_LENGTH = 10_000;
/** Milliseconds jsdiff may search before it gives up. */
const DIFF_MAX_SEARCH_MS = 2_000;

/** Line comparisons between two abort checks. */
const COMPARISONS_PER_ABORT_CHECK = 1024;

/**
 * Arguments of the `diff` tool: the old side from exactly one of
 * `oldText`/`oldPath`, the new side from exactly one of `newText`/`newPath`.
 */
interface DiffArgs {
  oldText?: string;
  newText?: string;
  /** File holding the old side; also its name in the patch header. */
  oldPath?: string;
  /** File holding the new side; also its name in the patch header. */
  newPath?: string;
  /** Context lines around each change: integer 0..10000, default 3. */
  context?: number;
}

/** Structured details of a `diff` result. */
interface DiffDetails {
  /** Number of hunks in the full patch. */
  hunks: number;
  /** Added lines in the full patch. */
  additions: number;
  /** Deleted lines in the full patch. */
  deletions: number;
  /** True when the two sides have no line differences. */
  identical: boolean;
  /** True when the patch text was cut at the 64 KiB output cap. */
  truncated: boolean;
}

/**
 * Computes a unified diff (`--- old` / `+++ new` headers, then hunks) of the
 * two sides.
 *
 * Contract:
 * - Header names are the paths when given, otherwise "old" / "new"; a name
 *   holding control characters, quotes or non-ASCII characters is quoted
 *   with C-style escapes, as git does.
 * - Identical inputs give the text "The inputs are identical." and
 *   `identical: true`, `hunks: 0`.
 * - The patch text is cut at a line boundary at 64 KiB, with a note; the
 *   counts in `details` always describe the full patch.
 * - `ctx.signal` is checked while the diff is computed, so a huge diff can be
 *   aborted.
 * - Gives up, with an error saying so, when the two sides differ by more than
 *   {@link DIFF_MAX_EDIT_LENGTH} lines or the search takes longer than
 *   {@link DIFF_MAX_SEARCH_MS}.
 * - Throws unless each side has exactly one source, for a bad `context`, for
 *   a path outside the workspace root, and for a missing, unreadable,
 *   not-regular or over-8-MiB file.
 */
export const execute = createDiffTool(workspaceFromModuleUrl(import.meta.url));

/** `diff`'s execute function confined to `workspace`. */
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
  // jsdiff has no AbortSignal support, but its sync line diff calls
  // `comparator` for every line comparison, which is where its time goes.
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
  // jsdiff answers undefined when it stopped at maxEditLength or timeout.
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
  // The name goes into the patch header, where jsdiff quotes it as git does.
  return { name: file, text: readRegularFile(realPath, `diff: ${pathKey} ${quotePath(file)}`, DIFF_MAX_FILE_BYTES).toString("utf8") };
}

/** Keeps whole lines while the UTF-8 size stays within `maxBytes`. */
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
