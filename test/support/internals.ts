// Every internal module the tests use, re-exported from one place: when a
// source file moves, only this file changes. Modules whose tests spin real
// worker threads, or compare with what the package ("toolpool", i.e. dist/)
// exports, come from the build (dist/); the rest from src/. Rebuild
// (`npm run build`) before running tests that use the dist/ ones.
import { fileURLToPath } from "node:url";

/** The built CLI (`toolpool run`, `toolpool node`), for tests that start it as a process. */
export const builtCliPath = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
/** The built package's entry, for scripts that a test runs in a process of their own. */
export const builtIndexUrl = new URL("../../dist/index.js", import.meta.url);
/** The built coding tools' folder: tests import their modules at run time, as a worker thread does. */
export const builtCodingToolsUrl = new URL("../../dist/tools/coding/", import.meta.url);

export { systemClock } from "../../dist/clock.js";
export { maxErrorLinesBytes } from "../../dist/coordinator/error-lines.js";
export { isIdentityOnValid16, isPlainData } from "../../dist/coordinator/identity-on-valid-16.js";
export { formatReceivedArguments, maxReceivedArgumentsBytes, truncationMark } from "../../dist/coordinator/received-arguments.js";
export { compileToolSchemas } from "../../dist/coordinator/tool-registry.js";
export { compileArgumentValidator16, validateToolArguments16 } from "../../dist/coordinator/validate-arguments-16.js";
export { validateToolArguments } from "../../dist/coordinator/validate-arguments.js";
export { formatValidationPath16 } from "../../dist/coordinator/validation-message-16.js";
export { type FleetOptions, resolveFleetOptions } from "../../dist/fleet/fleet-options.js";
export { lostNodeReason, RemotePool } from "../../dist/fleet/remote-pool.js";
export { resolveRuntimeOptions } from "../../dist/options.js";
export { checkBrowserGuard } from "../../dist/server/browser-guard.js";
export { addressKey } from "../../dist/server/connection-guard.js";
export { LINGER_MAX_BYTES } from "../../dist/server/lingering-close.js";
export { resolveServerOptions } from "../../dist/server/server-options.js";
export { createDiffTool, DIFF_MAX_EDIT_LENGTH, diffSpec } from "../../dist/tools/diff.js";
export { createGrepTool, createProgressThrottle, globToRegExp, grepSpec } from "../../dist/tools/grep/grep.js";
export { canScanWholeText, createLineMatcher, forEachMatchingLine, requiredLiterals } from "../../dist/tools/grep/line-matcher.js";
export { prefilterStats } from "../../dist/tools/grep/search-file.js";
export {
  chunkFiles,
  controlSlots,
  countFound,
  createControl,
  FileListReader,
  FileListWriter,
  isControl,
  isStopped,
  Slot,
  stopAll,
  takeChunk,
} from "../../dist/tools/grep/shared-file-list.js";
export { createHashTool, hashSpec } from "../../dist/tools/hash.js";
export { createPatchTool, patchSpec } from "../../dist/tools/patch.js";
export { escapeControlCharacters, quotePath } from "../../dist/tools/quote-path.js";
export { readRegularFile } from "../../dist/tools/regular-file.js";
export { replaceFile } from "../../dist/tools/replace-file.js";
export { createTemporaryFile, isTemporaryFileName, sweepTemporaryFiles, TEMPORARY_FILE_MAX_AGE_MS } from "../../dist/tools/temporary-file.js";
export { resolveInWorkspace, workspaceFromModuleUrl } from "../../dist/tools/workspace.js";
export { CallQueue, type QueuedCall } from "../../dist/workers/call-queue.js";
export type { WorkerCallOutcome } from "../../dist/workers/pool-contract.js";
export { moveToHost } from "../../dist/workers/thread/move-to-host.js";
export { WorkerPool } from "../../dist/workers/worker-pool.js";
export { Mailbox } from "../../src/coordinator/mailbox.js";
export { type FlagValue, resolvePiExtensionOptions } from "../../src/pi-extension/extension-options.js";
export type { AgentToolResult, WorkerToolContext } from "../../src/types.js";
export { AbortGroups } from "../../src/workers/abort-groups.js";
export { BusyWindow } from "../../src/workers/busy-window.js";
export { inspectResult, transferThresholdBytes } from "../../src/workers/thread/inspect-result.js";
