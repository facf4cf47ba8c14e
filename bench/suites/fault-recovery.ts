/**
 * Fault recovery: how long from a fault that costs a worker (a crash, a heap
 * overrun, a timeout kill) to the next healthy result, when the lost worker
 * was the pool's only thread — the worst case, where the next call must wait
 * for a replacement. Also how far past `timeoutMs` a runaway call ends.
 */
import { createRuntime, workerTool, type AssistantMessage, type Runtime } from "toolpool";

import { advanceProgress, logStep } from "../lib/progress.js";
import { percentile, summarize, type Summary } from "../lib/stats.js";

export interface FaultRecoveryOptions {
  reps: number;
  timeoutMs: number;
}

export interface RecoveryFigures {
  fault: "crash" | "oom" | "timeout";
  code: string;
  /** ms from the faulty call's result to the next healthy result, each rep. */
  recoveryMs: number[];
  summary: Summary & { p99: number };
}

export interface FaultRecoveryResult {
  options: FaultRecoveryOptions;
  figures: RecoveryFigures[];
  /** ms past `timeoutMs` at which a runaway call's result arrived, each rep. */
  timeoutOvershootMs: number[];
  timeoutOvershoot: Summary & { p99: number };
}

const module = new URL("../tools/faulty.js", import.meta.url);
const parameters = { type: "object", properties: { fault: { type: "string" } } };

const batchOf = (name: string, fault?: string): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "toolCall", id: "call", name, arguments: fault === undefined ? {} : { fault } }],
});

/** Expected duration, for the progress bar: a replacement worker (~40 ms) per rep and fault, plus the time limit of each runaway. */
export function estimateFaultRecoveryMs(options: FaultRecoveryOptions): number {
  return options.reps * (3 * 50 + options.timeoutMs);
}

export async function runFaultRecoverySuite(options: FaultRecoveryOptions): Promise<FaultRecoveryResult> {
  const runtime: Runtime = createRuntime({
    tools: [
      workerTool({ name: "faulty", description: "commits a fault", parameters, module, timeoutMs: options.timeoutMs }),
      workerTool({
        name: "hog",
        description: "runs out of memory",
        parameters,
        module,
        resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 },
      }),
    ],
    pool: { maxThreads: 1, minThreads: 1 },
  });
  try {
    await runtime.executeToolCalls(batchOf("faulty"));
    const figures: RecoveryFigures[] = [];
    const overshoot: number[] = [];
    for (const [fault, tool, argument] of [
      ["crash", "faulty", "crash"],
      ["oom", "hog", "oom"],
      ["timeout", "faulty", "spin"],
    ] as const) {
      logStep(`fault recovery: ${fault} × ${options.reps}`);
      const recoveryMs: number[] = [];
      let code = "";
      for (let rep = 0; rep < options.reps; rep++) {
        const submitted = performance.now();
        const faulty = await runtime.executeToolCalls(batchOf(tool, argument));
        const failedAt = performance.now();
        code = String((faulty.messages[0]!.details as { code?: string }).code);
        if (fault === "timeout") overshoot.push(failedAt - submitted - options.timeoutMs);
        // The healthy call goes to the same tool's pool: the one whose thread was lost.
        const healthy = await runtime.executeToolCalls(batchOf(tool));
        if (healthy.messages[0]!.isError) throw new Error(`a healthy call failed after a ${fault}`);
        recoveryMs.push(performance.now() - failedAt);
      }
      figures.push({ fault, code, recoveryMs, summary: { ...summarize(recoveryMs), p99: percentile(recoveryMs, 99) } });
      advanceProgress(options.reps * (50 + (fault === "timeout" ? options.timeoutMs : 0)), `fault recovery: ${fault} done`);
    }
    return {
      options,
      figures,
      timeoutOvershootMs: overshoot,
      timeoutOvershoot: { ...summarize(overshoot), p99: percentile(overshoot, 99) },
    };
  } finally {
    await runtime.close();
  }
}
