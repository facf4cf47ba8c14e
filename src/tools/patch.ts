/**
 * Built-in worker tool `patch`: applies a unified diff to a text or a file.
 * Runs in a worker, so it imports nothing from the coordinator.
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
const PATCH_MAX_FILE_BYTES = 8 * 1024 * 1024;
const PATCH_MAX_OUTPUT_BYTES = 64 * 1024;

const COMPARISONS_PER_ABORT_CHECK = 1024;

interface PatchArgs {
  patch: string;
  path?: string;
  text?: string;
  fuzzFactor?: number;
  write?: boolean;
}

interface PatchDetails {
  applied: true;
  hunks: number;
  written: boolean;
  bytes: number;
  truncated: boolean;
}

/**
 * Applies `args.patch` to `args.text` or to the file at `args.path`, all or
 * nothing. With `write: true` the file is replaced atomically, keeping owner
 * and mode (setuid/setgid cleared); see replace-file.ts for what is refused.
 * Without it the patched content is returned, cut at 64 KiB.
 */
export const execute = createPatchTool(workspaceFromModuleUrl(import.meta.url));

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
    if (write) checkReplaceable(realPath, read.stats, label);
  }
  signal.throwIfAborted();

  let comparisons = 0;
  const options: ApplyPatchOptions = {
    fuzzFactor,
    // applyPatch is synchronous: its line comparisons are the only place to check for abort.
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
 * applyPatch only says "false". Hunk placement depends only on earlier hunks,
 * so "the first k hunks apply" is monotonic in k: binary search finds the
 * failing hunk in a logarithmic number of runs, on the failure path only.
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
