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

export { closestName } from "../../dist/closest-name.js";
export { systemClock } from "../../dist/clock.js";
export { defaultIoThreads } from "../../dist/coding-tools.js";
export { maxErrorLinesBytes } from "../../dist/coordinator/validation/error-lines.js";
export { isIdentityOnValid16, isPlainData } from "../../dist/coordinator/validation/pi-1.6/identity-on-valid-16.js";
export { formatReceivedArguments, maxReceivedArgumentsBytes, truncationMark } from "../../dist/coordinator/validation/received-arguments.js";
export { compileArgumentValidator16, validateToolArguments16 } from "../../dist/coordinator/validation/pi-1.6/validate-arguments-16.js";
export { validateToolArguments } from "../../dist/coordinator/validation/pi-0.73/validate-arguments.js";
export { formatValidationPath16 } from "../../dist/coordinator/validation/pi-1.6/validation-message-16.js";
export { type FleetOptions, resolveFleetOptions } from "../../dist/contracts/fleet-options.js";
export { lostNodeReason, RemotePool } from "../../dist/fleet/remote-pool.js";
export { resolveRuntimeOptions } from "../../dist/options.js";
export { checkBrowserGuard } from "../../dist/http/browser-guard.js";
export { addressKey } from "../../dist/http/connection-guard.js";
export { LINGER_MAX_BYTES } from "../../dist/http/lingering-close.js";
export { StallGuardedWriter } from "../../dist/http/stalled-response.js";
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
export type { WorkerCallOutcome } from "../../dist/contracts/pool-contract.js";
export { moveToHost } from "../../dist/workers/thread/move-to-host.js";
export { WorkerPool } from "../../dist/workers/worker-pool.js";
export { registerThreadHooks } from "../../dist/contracts/thread-hooks.js";
export { Mailbox } from "../../src/coordinator/mailbox.js";
export { EventBus } from "../../src/runtime/event-bus.js";
export { type FlagValue, resolvePiExtensionOptions } from "../../src/pi-extension/extension-options.js";
export { type ExtensionStatus, formatExtensionStatus } from "../../src/pi-extension/extension-status.js";
export { findHostPi } from "../../src/pi-extension/host-pi.js";
export type { AgentToolResult, WorkerToolContext } from "../../src/types.js";
export { AbortGroups } from "../../src/workers/abort-groups.js";
export { CallTable } from "../../src/workers/call-table.js";
export { BusyWindow } from "../../src/workers/busy-window.js";
export { probeMemoryMs, rememberingProbes } from "../../src/tools/coding/tool-probes.js";
export { followLinks } from "../../src/tools/coding/confinement.js";
export { fdMinimumVersion, fdShortfallOf, isFindRefused } from "../../src/tools/coding/fd-requirement.js";
export { RemoteChild } from "../../dist/tools/coding/remote-child.js";
export { routedSpawn, SpawnHelper } from "../../dist/tools/coding/remote-spawn.js";
export { hasHostEnded, isHostGone, watchHost } from "../../dist/tools/coding/host-watch.js";
export { inspectResult, transferThresholdBytes } from "../../src/workers/thread/inspect-result.js";
export { repeatMinChars, shareRepeatedStrings } from "../../src/workers/repeated-strings.js";
export { decodeReply, encodeEnd } from "../../src/fleet/fleet-protocol.js";
export { rebaseBuiltinTool } from "../../dist/builtin-tools.js";
export { installLine, isPackageMissing, optionalPackages } from "../../src/optional-packages.js";
// The pool's state machine from source, on a fake host (worker-pool-state.test.ts): no threads, no build.
export { WorkerPool as SourceWorkerPool, toolLoadGraceMs } from "../../src/workers/worker-pool.js";
export type { ResolvedPoolOptions } from "../../src/options.js";
export { workerTool as sourceWorkerTool } from "../../src/contracts/worker-tool.js";
export type { PoolCall } from "../../src/workers/pool-call.js";
export { PoolEventSource, type PoolCallEvent, type PoolThreadEvent } from "../../src/contracts/pool-events.js";
export type { WorkerCallRequest } from "../../src/contracts/pool-contract.js";
export { loadedTag, readWorkerReply, updateTag, type WorkerReply, type WorkerTask } from "../../src/workers/protocol.js";
export type { ThreadHost, ThreadHostEvents } from "../../src/workers/thread-host.js";
export { CapClaim, CapGate, CapKey } from "../../src/cap-gate.js";
export { CapContext, currentCapContext, enterCapContext, isCapContextStorageOn, leaveCapContext } from "../../src/coordinator/call-caps.js";
