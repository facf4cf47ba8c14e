/**
 * Built-in worker tool `patch`: applies a unified diff to a text or a file.
 *
 * Loaded inside a worker thread, so it imports nothing from the coordinator or
 * the worker runtime; parsing and hunk placement come from the `diff` package.
 *
 * @module
 */

import { applyPatch, parsePatch, type ApplyPatchOptions, type StructuredPatch, type StructuredPatchHunk } from "diff";
import type { AgentToolResult, WorkerToolContext } from "../types.js";
import { quotePath } from "./quote-path.js";
import { readRegularFileWithStats } from "./regular-file.js";
import { checkReplaceable, replaceFile, type ReadFile } from "./replace-file.js";
import { resolveInWorkspace, workspaceFromModuleUrl, type Workspace } from "./workspace.js";

import { PATCH_MAX_FUZZ } from "./patch-spec.js";
export { PATCH_MAX_FUZZ, patchSpec } from "./patch-spec.js";
/** A file to patch may not be larger than this. */
const PATCH_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Cap on the UTF-8 size of the result text. */
const PATCH_MAX_OUTPUT_BYTES = 64 * 1024;

/** Line comparisons between two abort checks. */
const COMPARISONS_PER_ABORT_CHECK = 1024;

/** Arguments of the `patch` tool: the patch plus exactly one of `path` and `text`. */
interface PatchArgs {
  /** Unified diff of a single file (headers optional, at least one hunk). */
  patch: string;
  /** File to patch, inside the workspace root; relative paths resolve against the root. */
  path?: string;
  /** Text to patch. */
  text?: string;
  /** Mismatched context lines tolerated per hunk: integer 0..10, default 0. */
  fuzzFactor?: number;
  /** Write the result back to `path` (default false: only return it); needs `allowWrite`. */
  write?: boolean;
}

/** Structured details of a successful `patch` result. */
interface PatchDetails {
  /** Always true: a patch that does not apply throws instead. */
  applied: true;
  /** Number of hunks applied. */
  hunks: number;
  /** True when the result was written to `path`. */
  written: boolean;
  /** UTF-8 size of the patched content. */
  bytes: number;
  /** True when the returned content was cut at the 64 KiB output cap. */
  truncated: boolean;
}

/**
 * Applies `args.patch` to `args.text` or to the file at `args.path`.
 *
 * Contract:
 * - All or nothing: when any hunk cannot be placed, throws
 *   `patch: hunk N of M (@@ ... @@) does not apply ...` and writes nothing.
 * - Without `write`, the result text is the patched content (cut at 64 KiB
 *   with a note); with `write: true` (requires `path` and a workspace that
 *   allows writes) the patched content goes to a temporary file in the same
 *   directory, which is then renamed over the file, and the text is a
 *   one-line summary. The new file keeps the old one's owner, group and
 *   permission bits, setuid and setgid cleared; a read-only file, one with
 *   several hard links, or one whose owner cannot be kept is refused before
 *   anything is written; so is a file replaced or changed in place by
 *   another writer since it was read, or whose folder moved meanwhile (see
 *   replace-file.ts).
 * - Paths in the result and in error texts are quoted when they hold control
 *   characters (see quote-path.ts).
 * - `ctx.signal` is checked during the hunk placement search (whose cost grows
 *   with file size and fuzz) and once more right before writing.
 * - Throws for a patch that cannot be parsed, has no hunks or targets several
 *   files; unless exactly one of `path`/`text` is given; for `write` without
 *   `path` or without `allowWrite`; for a bad `fuzzFactor`; for a path outside
 *   the workspace root; and for a missing, unreadable, not-regular or
 *   over-8-MiB file.
 */
export const execute = createPatchTool(workspaceFromModuleUrl(import.meta.url));

/** `patch`'s execute function confined to `workspace`. */
export function createPatchTool(
  workspace: Workspace,
): (args: PatchArgs, ctx: WorkerToolContext<PatchDetails>) => Promise<AgentToolResult<PatchDetails>> {
  return (args, ctx) => executePatch(workspace, args, ctx);
}

async function executePatch(workspace: Workspace, args: PatchArgs, ctx: WorkerToolContext<PatchDetails>): Promise<AgentToolResult<PatchDetails>> {
  const { signal } = ctx;
  signal.throwIfAborted();

  if ((args.path === undefined) === (args.text === undefined)) {
    throw new Error('patch: give exactly one of "path" or "text"');
  }
  const write = args.write ?? false;
  if (write && args.path === undefined) throw new Error('patch: "write": true needs "path"');
  if (write && !workspace.allowWrite) {
    throw new Error(
      'patch: writing files is not allowed here ("write": true needs a workspace opened with allowWrite); leave "write" out to get the patched content',
    );
  }
  const fuzzFactor = args.fuzzFactor ?? 0;
  if (!Number.isInteger(fuzzFactor) || fuzzFactor < 0 || fuzzFactor > PATCH_MAX_FUZZ) {
    throw new Error(`patch: fuzzFactor must be an integer from 0 to ${PATCH_MAX_FUZZ}, got ${String(fuzzFactor)}`);
  }
  const parsed = parseSingle(args.patch);
  const realPath = args.path === undefined ? undefined : resolveInWorkspace(workspace, "patch", "path", args.path, "file");
  const label = `patch: ${quotePath(args.path ?? "")}`;
  let source: string;
  let read: ReadFile | undefined;
  if (realPath === undefined) source = args.text!;
  else {
    read = readRegularFileWithStats(realPath, label, PATCH_MAX_FILE_BYTES);
    source = read.bytes.toString("utf8");
    // A file that will be refused is refused before the work of placing the hunks.
    if (write) checkReplaceable(realPath, read.stats, label);
  }
  signal.throwIfAborted();

  let comparisons = 0;
  const options: ApplyPatchOptions = {
    fuzzFactor,
    // applyPatch is synchronous; its line comparisons are the only hook into
    // the placement search, so the abort check lives here.
    compareLine: (_lineNumber, line, _operation, patchContent) => {
      if (++comparisons >= COMPARISONS_PER_ABORT_CHECK) {
        comparisons = 0;
        signal.throwIfAborted();
      }
      return line === patchContent;
    },
  };
  const result = applyPatch(source, parsed, options);
  if (result === false) throw notApplying(source, parsed, options, args.path, fuzzFactor);
  signal.throwIfAborted();

  const bytes = Buffer.byteLength(result, "utf8");
  const hunks = parsed.hunks.length;
  if (write) {
    replaceFile(realPath!, read!, result, label);
    return {
      content: [{ type: "text", text: `patch: applied ${hunks} hunk${hunks === 1 ? "" : "s"} to ${quotePath(args.path!)} (${bytes} bytes written)` }],
      details: { applied: true, hunks, written: true, bytes, truncated: false },
    };
  }
  const truncated = bytes > PATCH_MAX_OUTPUT_BYTES;
  const text = truncated
    ? `${cutUtf8(result, PATCH_MAX_OUTPUT_BYTES)}\n[truncated: the patched content is ${bytes} bytes, only the first 64 KiB are shown]`
    : result;
  return {
    content: [{ type: "text", text }],
    details: { applied: true, hunks, written: false, bytes, truncated },
  };
}

function parseSingle(patch: string): StructuredPatch {
  if (typeof patch !== "string" || patch.trim() === "") throw new Error('patch: "patch" is empty');
  let parsed: StructuredPatch[];
  try {
    parsed = parsePatch(patch);
  } catch (err) {
    throw new Error(`patch: cannot parse the patch: ${(err as Error).message}`);
  }
  const withHunks = parsed.filter((p) => p.hunks.length > 0);
  if (withHunks.length === 0) throw new Error("patch: the patch has no hunks (no @@ ... @@ lines)");
  if (withHunks.length > 1) {
    throw new Error(`patch: the patch changes ${withHunks.length} files; give the patch of one file at a time`);
  }
  return withHunks[0]!;
}

/**
 * applyPatch only says "false". Hunks are placed first to last, each
 * placement depending only on the hunks before it, so "the first k hunks
 * apply" holds for every k below the failing hunk and for none from it on: a
 * binary search over prefixes finds it with a logarithmic number of
 * applyPatch runs (growing prefixes one by one took quadratic time: 18 s for
 * 8,000 hunks). This costs extra work only on the failure path.
 */
function notApplying(source: string, patch: StructuredPatch, options: ApplyPatchOptions, path: string | undefined, fuzzFactor: number): Error {
  const total = patch.hunks.length;
  // Invariant: the first `applies` hunks apply; the first `failing` do not.
  let applies = 0;
  let failing = total;
  while (failing - applies > 1) {
    const middle = applies + Math.floor((failing - applies) / 2);
    if (applyPatch(source, { ...patch, hunks: patch.hunks.slice(0, middle) }, options) === false) failing = middle;
    else applies = middle;
  }
  const hunk = patch.hunks[failing - 1]!;
  const target = path === undefined ? "the text" : quotePath(path);
  return new Error(
    `patch: hunk ${failing} of ${total} (${hunkHeader(hunk)}) does not apply to ${target}: ` +
      `its context and removed lines were not found${failing > 1 ? " after the previous hunks" : ""} ` +
      `(fuzzFactor ${fuzzFactor}); nothing was changed`,
  );
}

function hunkHeader(hunk: StructuredPatchHunk): string {
  return `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/** Cuts at `maxBytes` UTF-8 bytes without leaving half a character behind. */
function cutUtf8(text: string, maxBytes: number): string {
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  return cut.endsWith("\uFFFD") && !text.startsWith(cut) ? cut.slice(0, -1) : cut;
}
