// The built modules (dist/) that tests on real worker threads use beside the
// package ("toolpool"): a thread loads compiled JS only (Node 20 cannot load
// .ts in a worker), so a test whose threads run the build takes its
// main-thread internals from the build too, never from src/ (unit tests use
// ./internals.ts; test/test-imports.test.ts checks that no test loads both).
// Rebuild (`npm run build`) before running the tests that use these.
export { builtCliPath, builtCodingToolsUrl, builtIndexUrl } from "./build-paths.js";
export { defaultIoThreads } from "../../dist/coding-tools.js";
// Argument validation loads the build's bundles (dist/vendor/), which src/ has not.
export { maxErrorLinesBytes } from "../../dist/coordinator/validation/error-lines.js";
export { isIdentityOnValid16, isPlainData } from "../../dist/coordinator/validation/pi-1.6/identity-on-valid-16.js";
export { maxReceivedArgumentsBytes, truncationMark } from "../../dist/coordinator/validation/received-arguments.js";
export { compileArgumentValidator16, validateToolArguments16 } from "../../dist/coordinator/validation/pi-1.6/validate-arguments-16.js";
export { validateToolArguments } from "../../dist/coordinator/validation/pi-0.73/validate-arguments.js";
export { formatValidationPath16 } from "../../dist/coordinator/validation/pi-1.6/validation-message-16.js";
// Option resolvers check options with the validators the build compiles (dist/validators/).
export { resolveFleetOptions } from "../../dist/contracts/fleet-options.js";
export { resolveServerOptions } from "../../dist/server/server-options.js";
export { RemotePool } from "../../dist/fleet/remote-pool.js";
export { decodeReply, encodeEnd } from "../../dist/fleet/fleet-protocol.js";
export { StallGuardedWriter } from "../../dist/http/stalled-response.js";
export { installLine, isPackageMissing, optionalPackages } from "../../dist/optional-packages.js";
export { rebaseBuiltinTool } from "../../dist/builtin-tools.js";
export { followLinks } from "../../dist/tools/coding/confinement.js";
export { fdMinimumVersion, fdShortfallOf, isFindRefused } from "../../dist/tools/coding/fd-requirement.js";
export { hasHostEnded, isHostGone, watchHost } from "../../dist/tools/coding/host-watch.js";
export { RemoteChild } from "../../dist/tools/coding/remote-child.js";
export { resolveSandbox, sandboxedCommand } from "../../dist/tools/coding/sandbox.js";
export { routedSpawn, SpawnHelper } from "../../dist/tools/coding/remote-spawn.js";
export { createDiffTool, DIFF_MAX_EDIT_LENGTH } from "../../dist/tools/diff.js";
export { createGrepTool } from "../../dist/tools/grep/grep.js";
export { createHashTool } from "../../dist/tools/hash.js";
export { createPatchTool } from "../../dist/tools/patch.js";
export { readRegularFile } from "../../dist/tools/regular-file.js";
export { createTemporaryFile, isTemporaryFileName, sweepTemporaryFiles, TEMPORARY_FILE_MAX_AGE_MS } from "../../dist/tools/temporary-file.js";
export { resolveInWorkspace, workspaceFromModuleUrl } from "../../dist/tools/workspace.js";
export { readWorkerReply } from "../../dist/workers/protocol.js";
export { repeatMinChars, shareRepeatedStrings } from "../../dist/workers/repeated-strings.js";
export { resolveRuntimeOptions } from "../../dist/options.js";
export { systemClock } from "../../dist/clock.js";
export { registerThreadHooks } from "../../dist/contracts/thread-hooks.js";
export type { WorkerCallOutcome } from "../../dist/contracts/pool-contract.js";
export { WorkerPool } from "../../dist/workers/worker-pool.js";
export type { FleetOptions } from "../../dist/contracts/fleet-options.js";
export type { WorkerReply } from "../../dist/workers/protocol.js";
export type { WorkerToolContext } from "../../dist/types.js";
