import { describe, expect, it } from "vitest";

import { workerTool } from "toolpool";

import { registerThreadHooks, resolveRuntimeOptions, systemClock, WorkerPool } from "./support/built.js";
import { until } from "./support/helpers.js";

const module = new URL("./fixtures/tools/thread-hooks.mjs", import.meta.url);
const anyArgs = { type: "object" };
const probeTool = workerTool({ name: "probe", description: "probe", parameters: anyArgs, module, exportName: "probe" });
const spinTool = workerTool({ name: "spin", description: "spin", parameters: anyArgs, module, exportName: "spin", timeoutMs: 100 });

describe("thread hooks", () => {
  it("give every thread the registered workerData, and name a terminated thread when it is lost and when it has exited", async () => {
    const lost: number[] = [];
    const exited: number[] = [];
    const unregister = registerThreadHooks({
      workerData: () => ({ hookProbe: "from a hook" }),
      threadLost: (threadId: number) => {
        lost.push(threadId);
      },
      threadExited: (threadId: number) => {
        exited.push(threadId);
      },
    });
    const options = resolveRuntimeOptions({ tools: [], pool: { minThreads: 1, maxThreads: 1 } }).pool;
    const pool = new WorkerPool(options, systemClock, () => {});
    try {
      const probed = await pool.run({ tool: probeTool, toolCallId: "p", args: {} });
      expect(probed).toMatchObject({ kind: "ok", result: { details: { hookProbe: "from a hook" } } });
      const { threadId } = (probed as { result: { details: { threadId: number } } }).result.details;
      const spun = await pool.run({ tool: spinTool, toolCallId: "s", args: {} });
      expect(spun).toMatchObject({ kind: "error", code: "TP_ERR_TIMEOUT" });
      await until(() => exited.length > 0, "the terminated thread's exit hook");
      expect(exited).toEqual([threadId]);
      expect(new Set(lost)).toEqual(new Set([threadId]));
    } finally {
      unregister();
      await pool.close({ force: true });
    }
  }, 30_000);
});
