import { createRuntime, ToolpoolError, workerTool } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

const module = new URL("./fixtures/tools/call-context.mjs", import.meta.url);
const message = (...ids: string[]) => ({
  role: "assistant" as const,
  content: ids.map((id) => ({ type: "toolCall" as const, id, name: id.startsWith("plain") ? "plain" : "scoped", arguments: {} })),
  stopReason: "toolUse" as const,
});

describe("workerTool({ context }): a per-call value computed on the main thread", () => {
  const seen: { toolCallId: string; sessionKey: string | undefined }[] = [];
  const runtime = createRuntime({
    tools: [
      workerTool({
        name: "scoped",
        description: "answers with ctx.context",
        parameters: { type: "object" },
        module,
        context: (call) => {
          seen.push({ ...call });
          if (call.sessionKey === "broken") throw new Error("no folder for session broken");
          return { folder: `/srv/${call.sessionKey ?? "default"}`, call: call.toolCallId, when: new Date(0) };
        },
      }),
      workerTool({ name: "plain", description: "answers with ctx.context", parameters: { type: "object" }, module }),
    ],
    pool: { maxThreads: 2 },
  });
  afterAll(() => runtime.close());

  it("hands each call the value its session and id give, cloned to the worker", async () => {
    const { messages } = await runtime.executeToolCalls(message("a1", "a2"), { sessionKey: "alice" });
    expect(messages.map((entry) => entry.details)).toEqual([
      { context: { folder: "/srv/alice", call: "a1", when: new Date(0) }, hasOwn: true },
      { context: { folder: "/srv/alice", call: "a2", when: new Date(0) }, hasOwn: true },
    ]);
    const { messages: unkeyed } = await runtime.executeToolCalls(message("b1"));
    expect(unkeyed[0]!.details).toMatchObject({ context: { folder: "/srv/default", call: "b1" } });
    expect(seen.slice(-3)).toEqual([
      { toolCallId: "a1", sessionKey: "alice" },
      { toolCallId: "a2", sessionKey: "alice" },
      { toolCallId: "b1", sessionKey: undefined },
    ]);
  });

  it("leaves ctx.context out for a tool without the function", async () => {
    const { messages } = await runtime.executeToolCalls(message("plain1"), { sessionKey: "alice" });
    expect(messages[0]!.details).toEqual({ hasOwn: false });
  });

  it("ends a call whose function throws with an error result holding its message, the batch going on", async () => {
    const { messages } = await runtime.executeToolCalls(message("c1", "plain2"), { sessionKey: "broken" });
    expect(messages[0]).toMatchObject({ isError: true, content: [{ type: "text", text: "no folder for session broken" }] });
    expect(messages[1]!.isError).toBe(false);
  });

  it("refuses a context that is not a function (TP_ERR_INVALID_TOOL)", () => {
    expect(() => workerTool({ name: "x", description: "", parameters: { type: "object" }, module, context: "no" as never })).toThrow(ToolpoolError);
    expect(() => workerTool({ name: "x", description: "", parameters: { type: "object" }, module, context: 1 as never })).toThrow(
      /Expected `context` of worker tool "x" to be a function/,
    );
  });
});

describe("workerTool({ pool }): tools that share a pool of their own", () => {
  const barrier = new URL("./fixtures/tools/call-context.mjs", import.meta.url);
  it("runs the tools naming one pool on that pool, sized as given, apart from the shared pool", async () => {
    const named = (name: string) =>
      workerTool({ name, description: "", parameters: { type: "object" }, module: barrier, pool: { name: "io", maxThreads: 3 } });
    const runtime = createRuntime({
      tools: [named("first"), named("second"), workerTool({ name: "plain", description: "", parameters: { type: "object" }, module: barrier })],
      pool: { maxThreads: 1 },
    });
    try {
      const calls = ["first", "second", "plain", "first"].map((name, index) => ({ type: "toolCall" as const, id: `c${index}`, name, arguments: {} }));
      const { messages } = await runtime.executeToolCalls({ role: "assistant", content: calls, stopReason: "toolUse" });
      expect(messages.every((message) => !message.isError)).toBe(true);
      const pools = runtime.diagnose().pools;
      expect(pools.map((pool) => pool.pool).sort()).toEqual(["pool:io", "shared"]);
      const io = pools.find((pool) => pool.pool === "pool:io")!;
      // Three calls of the named tools ran there: its threads are its own.
      const ioThreads = new Set(io.generations.flatMap((generation) => generation.threads.map((thread) => thread.threadId)));
      const sharedThreads = new Set(pools.find((pool) => pool.pool === "shared")!.generations.flatMap((g) => g.threads.map((t) => t.threadId)));
      expect(ioThreads.size).toBeGreaterThan(0);
      expect([...ioThreads].some((id) => sharedThreads.has(id))).toBe(false);
      expect(runtime.poolStats?.completed).toBe(4);
    } finally {
      await runtime.close();
    }
  });

  it("refuses a pool without a name, a bad size, or beside resourceLimits (TP_ERR_INVALID_TOOL)", () => {
    const base = { name: "x", description: "", parameters: { type: "object" }, module: barrier };
    expect(() => workerTool({ ...base, pool: { name: "" } })).toThrow(
      /`pool` of worker tool "x" to be \{ name, maxThreads\?, maxRunningPerSession\? \}/,
    );
    expect(() => workerTool({ ...base, pool: { name: "io", maxThreads: 0 } })).toThrow(
      /`pool.maxThreads` of worker tool "x" to be an integer from 1 to 1024/,
    );
    expect(() => workerTool({ ...base, pool: { name: "io", maxRunningPerSession: 1.5 } })).toThrow(
      /`pool.maxRunningPerSession` of worker tool "x" to be an integer from 1 to 1024/,
    );
    expect(() => workerTool({ ...base, pool: { name: "io" }, resourceLimits: { maxOldGenerationSizeMb: 64 } })).toThrow(
      /either `resourceLimits` or `pool`/,
    );
  });
});
