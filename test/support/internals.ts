// Every internal module the unit tests use, from source (src/), re-exported
// from one place: when a source file moves, only this file changes. A test
// that imports from here runs on src/ alone, one copy of each class; tests
// that spin real worker threads use the package ("toolpool") and
// ./built.ts instead, never both (test/test-imports.test.ts checks it; see
// CONTRIBUTING.md, "Which copy a test loads"). What reads a file the build
// writes (argument validation, option resolvers: dist/vendor/, dist/validators/)
// comes from ./built.ts.
export { closestName } from "../../src/closest-name.js";
export { systemClock } from "../../src/clock.js";
export { defaultIoThreads } from "../../src/coding-tools.js";
export { formatReceivedArguments, maxReceivedArgumentsBytes, truncationMark } from "../../src/coordinator/validation/received-arguments.js";
export { lostNodeReason, RemotePool } from "../../src/fleet/remote-pool.js";
export { checkBrowserGuard } from "../../src/http/browser-guard.js";
export { addressKey } from "../../src/http/connection-guard.js";
export { LINGER_MAX_BYTES } from "../../src/http/lingering-close.js";
export { StallGuardedWriter } from "../../src/http/stalled-response.js";
export { createDiffTool, DIFF_MAX_EDIT_LENGTH, diffSpec } from "../../src/tools/diff.js";
export { createGrepTool, createProgressThrottle, globToRegExp, grepSpec } from "../../src/tools/grep/grep.js";
export { canScanWholeText, createLineMatcher, forEachMatchingLine, requiredLiterals } from "../../src/tools/grep/line-matcher.js";
export { prefilterStats } from "../../src/tools/grep/search-file.js";
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
} from "../../src/tools/grep/shared-file-list.js";
export { createHashTool, hashSpec } from "../../src/tools/hash.js";
export { createPatchTool, patchSpec } from "../../src/tools/patch.js";
export { escapeControlCharacters, quotePath } from "../../src/tools/quote-path.js";
export { readRegularFile } from "../../src/tools/regular-file.js";
export { replaceFile } from "../../src/tools/replace-file.js";
export { createTemporaryFile, isTemporaryFileName, sweepTemporaryFiles, TEMPORARY_FILE_MAX_AGE_MS } from "../../src/tools/temporary-file.js";
export { resolveInWorkspace, workspaceFromModuleUrl } from "../../src/tools/workspace.js";
export { CallQueue, type QueuedCall } from "../../src/workers/call-queue.js";
export type { WorkerCallOutcome } from "../../src/contracts/pool-contract.js";
export { moveToHost } from "../../src/workers/thread/move-to-host.js";
export { toolLoadGraceMs, WorkerPool } from "../../src/workers/worker-pool.js";
export { Mailbox } from "../../src/coordinator/mailbox.js";
export { EventBus } from "../../src/runtime/event-bus.js";
export { type FlagValue, resolvePiExtensionOptions } from "../../src/pi-extension/extension-options.js";
export { type ExtensionStatus, formatExtensionStatus } from "../../src/pi-extension/extension-status.js";
export { findHostPi } from "../../src/pi-extension/host-pi.js";
export type { AgentToolResult, WorkerToolContext } from "../../src/types.js";
export { AbortGroups } from "../../src/workers/abort-groups.js";
export { type BookedCall, CallBook } from "../../src/workers/call-book.js";
export { CallTable } from "../../src/workers/call-table.js";
export { BusyWindow } from "../../src/workers/busy-window.js";
export { probeMemoryMs, rememberingProbes } from "../../src/tools/coding/tool-probes.js";
export { followLinks } from "../../src/tools/coding/confinement.js";
export { fdMinimumVersion, fdShortfallOf, isFindRefused } from "../../src/tools/coding/fd-requirement.js";
export { RemoteChild } from "../../src/tools/coding/remote-child.js";
export { routedSpawn, SpawnHelper } from "../../src/tools/coding/remote-spawn.js";
export { hasHostEnded, isHostGone, watchHost } from "../../src/tools/coding/host-watch.js";
export { inspectResult, transferThresholdBytes } from "../../src/workers/thread/inspect-result.js";
export { repeatMinChars, shareRepeatedStrings } from "../../src/workers/repeated-strings.js";
export { decodeReply, encodeEnd } from "../../src/fleet/fleet-protocol.js";
export { installLine, isPackageMissing, optionalPackages } from "../../src/optional-packages.js";
export type { ResolvedPoolOptions } from "../../src/options.js";
export type { PoolCall } from "../../src/workers/pool-call.js";
export { PoolEventSource, type PoolCallEvent, type PoolThreadEvent } from "../../src/contracts/pool-events.js";
export type { WorkerCallRequest } from "../../src/contracts/pool-contract.js";
export { loadedTag, readWorkerReply, updateTag, type WorkerReply, type WorkerTask } from "../../src/workers/protocol.js";
export type { ThreadHost, ThreadHostEvents } from "../../src/workers/thread-host.js";
export { CapClaim, CapGate, CapKey } from "../../src/cap-gate.js";
export { CapContext, currentCapContext, enterCapContext, isCapContextStorageOn, leaveCapContext } from "../../src/coordinator/call-caps.js";
export { workerTool } from "../../src/contracts/worker-tool.js";
export { ToolpoolError } from "../../src/errors.js";
export { supportsPi16 } from "../../src/options.js";
export { probeSandbox, resolveSandbox, sandboxedCommand, sandboxedEnv } from "../../src/tools/coding/sandbox.js";
export { containedFileIo, containedLsOperations, containedReadOperations, containedWriteOperations } from "../../src/tools/coding/contained-files.js";
export { sandboxingSpawn, withCallSandbox } from "../../src/tools/coding/coding-thread.js";
