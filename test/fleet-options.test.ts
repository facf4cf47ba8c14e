import { describe, expect, it } from "vitest";

import { createRuntime, FleetNode, workerTool } from "toolpool";
import { builtIndexUrl } from "./support/build-paths.js";

const tool = workerTool({
  name: "t",
  description: "t",
  parameters: { type: "object" },
  module: new URL("./fixtures/fleet/fleet-tool.mjs", import.meta.url),
});

describe("fleet options", () => {
  it("applies defaults, freezes, and opens no connection before the first remote call", async () => {
    const runtime = createRuntime({ tools: [tool], fleet: { redis: "redis://127.0.0.1:1" } });
    expect(runtime.options.fleet).toEqual({
      redis: "redis://127.0.0.1:1",
      remote: "all",
      lockDurationMs: 10_000,
      stalledIntervalMs: 5_000,
      maxOutstanding: 10_000,
      redisTimeoutMs: 5_000,
      noNodeGraceMs: 10_000,
      abortSlackMs: 2_000,
      nodeLossRetries: 1,
      prefix: "toolpool",
    });
    expect(Object.isFrozen(runtime.options.fleet)).toBe(true);
    expect(runtime.fleetStats).toMatchObject({ nodes: 0, inFlight: 0 });
    await runtime.close();
  });

  it.each([
    [{ redis: "http://x" }, 'Expected `fleet.redis` to be a redis:// or rediss:// URL, got `"http://x"` (string)'],
    [{ redis: "redis://x", remote: "some" }, 'Expected `fleet.remote` to be "all" or a list of distinct worker tool names, got `"some"` (string)'],
    [{ redis: "redis://x", lockDurationMs: 10 }, "Expected `fleet.lockDurationMs` to be a number >= 100, got `10` (number)"],
    [
      { redis: "redis://x", surprise: 1 },
      "Unknown option `fleet.surprise`; known options of `fleet`: `redis`, `remote`, `lockDurationMs`, `stalledIntervalMs`, `maxOutstanding`, `redisTimeoutMs`, `noNodeGraceMs`, `abortSlackMs`, `nodeLossRetries`, `prefix`",
    ],
    [{ redis: "redis://x", prefx: "q" }, "Unknown option `fleet.prefx`; did you mean `fleet.prefix`?"],
    [{ redis: "redis://x", remote: ["nope"] }, 'Expected `fleet.remote` to name worker tools of the runtime, got "nope"'],
  ])("rejects %j with TP_ERR_INVALID_OPTION", (fleet, message) => {
    expect(() => createRuntime({ tools: [tool], fleet: fleet as never })).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message }),
    );
  });

  it.each([
    [{ threds: 2 }, "Unknown option `threds`; did you mean `threads`?"],
    [{ lockDuration: 100 }, "Unknown option `lockDuration`; did you mean `lockDurationMs`?"],
    [{ pool: { maxThread: 2 } }, "Unknown option `pool.maxThread`; did you mean `pool.maxThreads`?"],
  ])("FleetNode.start refuses %j, an option that does not exist, before it connects (TP_ERR_INVALID_OPTION)", async (extra, message) => {
    // Port 1: a node that got past its options would fail to connect, with another error.
    await expect(FleetNode.start({ redis: "redis://127.0.0.1:1", tools: [tool], ...extra } as never)).rejects.toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message }),
    );
  });

  it("workerTool takes idempotent (default false) and rejects a non-boolean", () => {
    expect(tool.idempotent).toBe(false);
    expect(workerTool({ name: "p", description: "", parameters: {}, module: "x.mjs", idempotent: true }).idempotent).toBe(true);
    expect(() => workerTool({ name: "p", description: "", parameters: {}, module: "x.mjs", idempotent: "yes" as never })).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_TOOL" }),
    );
  });
});

describe("fleet libraries that fail to load", () => {
  it("end each remote call once with TP_ERR_FLEET_UNAVAILABLE naming the cause, and close cleanly", async () => {
    const { execFile } = await import("node:child_process");
    const script = new URL("./fixtures/fleet/missing-libraries.mjs", import.meta.url);
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [script.pathname, builtIndexUrl.href], { timeout: 60_000 }, (error, out, err) =>
        error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out),
      );
    });
    const batches = JSON.parse(stdout) as { events: string[]; messages: { isError: boolean; text: string; code: string }[] }[];
    expect(batches).toHaveLength(2);
    for (const batch of batches) {
      expect(batch.events).toEqual(["tool_execution_start", "tool_execution_end", "message_start", "message_end"]);
      expect(batch.messages).toEqual([
        {
          isError: true,
          code: "TP_ERR_FLEET_UNAVAILABLE",
          text: 'Tool "t" was not run: the fleet\'s libraries (bullmq, ioredis) failed to load: bullmq is not installed here',
        },
      ]);
    }
  });
});
