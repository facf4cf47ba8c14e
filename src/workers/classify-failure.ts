import { describeValue } from "../errors.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

interface FailureContext {
  /** Set when the pool itself terminated the call's thread. */
  killReason: "timeout" | "aborted" | "preempted" | "reply-lost" | undefined;
  abortGraceMs: number;
  /** Set when the thread had not loaded the tool yet: the extra grace it had. */
  loadGraceMs: number | undefined;
  /** How long the pool waited for the reply of a call whose tool had finished. */
  replyWaitMs: number;
  isClosed: boolean;
}

/** A heap overrun is told by Node's error code, an exit by Piscina's message, here and nowhere else. */
export function classifyFailure(tool: Pick<WorkerTool, "name" | "timeoutMs">, error: unknown, context: FailureContext): WorkerCallOutcome {
  const { name } = tool;
  if (context.killReason === "timeout") {
    return {
      kind: "error",
      code: "TP_ERR_TIMEOUT",
      message: `Tool "${name}" timed out after ${tool.timeoutMs} ms; its worker was terminated while the tool was still running, so it may have had some of its effects`,
    };
  }
  if (context.killReason === "aborted" && context.loadGraceMs !== undefined) {
    return {
      kind: "error",
      code: "TP_ERR_ABORTED",
      message: `Tool "${name}" was aborted while its worker was loading its module, which had not loaded ${context.loadGraceMs + context.abortGraceMs} ms later; its worker was terminated before the tool's execute ran (the module's own start-up code may have had some of its effects)`,
    };
  }
  if (context.killReason === "aborted") {
    return {
      kind: "error",
      code: "TP_ERR_ABORTED",
      message: `Tool "${name}" did not stop within ${context.abortGraceMs} ms of the abort; its worker was terminated while the tool was still running, so it may have had some of its effects`,
    };
  }
  if (context.killReason === "preempted") {
    return {
      kind: "error",
      code: "TP_ERR_ABORTED",
      message: `Tool "${name}" (a part of a spread call) did not give its thread back within ${context.abortGraceMs} ms while a call of another session waited; its worker was terminated and the calling call does its work`,
    };
  }
  if (context.killReason === "reply-lost") {
    return {
      kind: "error",
      code: "TP_ERR_REPLY_LOST",
      message: `Tool "${name}" finished, but its reply did not arrive within ${context.replyWaitMs} ms (work it left running blocked its worker), so its worker was terminated; the tool ran to its end and had its effects, but its result is lost`,
    };
  }
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : "";
  if (code === "ERR_WORKER_OUT_OF_MEMORY") {
    return {
      kind: "error",
      code: "TP_ERR_OUT_OF_MEMORY",
      message: `Tool "${name}" ran out of memory: its worker exceeded the JS heap limit and was terminated`,
    };
  }
  const exitCode = exitCodeOf(message);
  if (exitCode !== undefined) {
    return { kind: "error", code: "TP_ERR_WORKER_EXIT", message: `Tool "${name}" ended its worker with exit code ${exitCode}` };
  }
  if ((error as { name?: unknown } | null)?.name === "DataCloneError") {
    return {
      kind: "error",
      code: "TP_ERR_RESULT_NOT_CLONEABLE",
      message: `Tool "${name}" returned a result that cannot be cloned across threads: ${message}`,
    };
  }
  if (context.isClosed) {
    return { kind: "error", code: "TP_ERR_CLOSED", message: `Tool "${name}" was stopped: the pool was closed` };
  }
  return {
    kind: "error",
    code: "TP_ERR_WORKER_CRASH",
    message: `Tool "${name}" crashed its worker: ${message || describeValue(error)}`,
  };
}

/**
 * The exit code of a worker that exited mid-task, from the error Piscina
 * rejects its task with: Piscina gives the code only in the message text
 * (`worker exited with code: N`), with no field; undefined for any other error.
 */
function exitCodeOf(message: string): number | undefined {
  const exit = /^worker exited with code: (-?\d+)$/.exec(message);
  return exit === null ? undefined : Number(exit[1]);
}
