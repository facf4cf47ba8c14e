import { outcomeTexts, type ErrorCode } from "../errors.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import type { NodeDirectory } from "./node-directory.js";
import { describeToolset, type Toolset } from "./toolset.js";

/**
 * A fleet call's outcomes other than its tool's own. Each text says whether the call ran ("was not run" never did;
 * "may have had some of its effects" or "may have run partly or fully" could have).
 */
export function fault(code: ErrorCode, message: string): WorkerCallOutcome {
  return { kind: "error", code, message };
}

/** Turned away before it reached Redis (no node, Redis gone, closed, full). */
export function isUnsubmitted(outcome: WorkerCallOutcome): boolean {
  return (
    outcome.kind === "error" &&
    (outcome.code === "TP_ERR_FLEET_UNAVAILABLE" || outcome.code === "TP_ERR_CLOSED" || outcome.code === "TP_ERR_QUEUE_FULL")
  );
}

/** Waited in the queue when its batch was aborted. */
export function abortedBeforeStart(tool: string): WorkerCallOutcome {
  return fault("TP_ERR_ABORTED", `Tool "${tool}" was not run: its batch was aborted before a fleet node started it`);
}

export function coordinatorGoneBeforeStart(tool: string, node: string): WorkerCallOutcome {
  return fault("TP_ERR_FLEET_UNAVAILABLE", `Tool "${tool}" was not run: node "${node}" found no sign of life of the calling coordinator in Redis`);
}

export function coordinatorGoneWhileRunning(tool: string, node: string): WorkerCallOutcome {
  return fault(
    "TP_ERR_FLEET_UNAVAILABLE",
    `Tool "${tool}": node "${node}" found no sign of life of the calling coordinator in Redis and stopped the call; it may have had some of its effects`,
  );
}

export function noEndAfterAbort(tool: string, limitMs: number): WorkerCallOutcome {
  return fault(
    "TP_ERR_ABORTED",
    `Tool "${tool}" did not end within ${limitMs} ms of the abort on its fleet node, which did not answer; it may have had some of its effects`,
  );
}

/** Its lock expired, or its job vanished without an end. */
export function nodeLost(tool: string, afterMs: number): WorkerCallOutcome {
  const seconds = (afterMs / 1_000).toFixed(1);
  return fault(
    "TP_ERR_NODE_LOST",
    `Tool "${tool}": the fleet node running the call was lost after ${seconds} s; the call may have run partly or fully`,
  );
}

export function nodeFailed(tool: string, failedReason: string): WorkerCallOutcome {
  return fault("TP_ERR_WORKER_CRASH", `Tool "${tool}" failed on its fleet node: ${failedReason}; the call may have run partly or fully`);
}

export function closedByForce(tool: string, isInFleet: boolean): WorkerCallOutcome {
  return fault(
    "TP_ERR_CLOSED",
    isInFleet
      ? `Tool "${tool}" was stopped: the runtime was closed by force while the call was in the fleet; it may have had some of its effects`
      : outcomeTexts.notRunByForce(tool),
  );
}

export function redisHostOf(redisUrl: string): string {
  const url = new URL(redisUrl);
  return `${url.hostname}:${url.port || 6379}`;
}

/** The call was in the fleet: its outcome can no longer be learned. */
export function redisLost(tool: string, host: string, timeoutMs: number): WorkerCallOutcome {
  return fault(
    "TP_ERR_FLEET_UNAVAILABLE",
    `Tool "${tool}": Redis at ${host} was unreachable for ${timeoutMs} ms while the call was in the fleet; the call may have run partly or fully`,
  );
}

/** A mismatch if nodes serve that tool name with other tools or another pi, else unavailable. */
export function unservedOutcome(name: string, directory: NodeDirectory, ours: Toolset, tools: readonly WorkerTool[]): WorkerCallOutcome {
  const other = directory.otherToolsetOf(name);
  if (other !== undefined && other.pi !== undefined && other.pi !== ours.pi) {
    // Rare and off the hot path: the tool modules are hashed again to tell "only the pi differs" apart.
    const isPiOnly = describeToolset(tools, other.pi).hash === other.toolsetHash;
    return fault(
      "TP_ERR_TOOL_MISMATCH",
      `Tool "${name}" was not run: the fleet's nodes serve pi ${other.pi} (toolset ${other.toolsetHash.slice(0, 16)}) and this runtime follows pi ${ours.pi} (toolset ${ours.hash.slice(0, 16)}); ` +
        (isPiOnly ? `a fleet speaks one pi: start its nodes with --pi ${ours.pi}` : "they differ beyond the pi too (tools, or Node's major version)"),
    );
  }
  if (other !== undefined) {
    return fault(
      "TP_ERR_TOOL_MISMATCH",
      `Tool "${name}" was not run: the fleet's nodes serve other tools (toolset ${other.toolsetHash.slice(0, 16)}) than this runtime (toolset ${ours.hash.slice(0, 16)})`,
    );
  }
  return fault(
    "TP_ERR_FLEET_UNAVAILABLE",
    `Tool "${name}" was not run: no live fleet node serves this runtime's tools (toolset ${ours.hash.slice(0, 16)})`,
  );
}
