import { availableParallelism } from "node:os";

import { describe, expect, it } from "vitest";

import { createRuntime, minimumResourceLimits, ToolpoolError, workerTool, type RuntimeOptions } from "toolpool";

const echo = {
  name: "echo",
  label: "echo",
  description: "echo",
  parameters: { type: "object" },
  execute: async () => ({ content: [], details: {} }),
};

function creationError(options: unknown): ToolpoolError {
  try {
    createRuntime(options as RuntimeOptions);
  } catch (error) {
    if (error instanceof ToolpoolError) return error;
    throw error;
  }
  throw new Error("createRuntime did not throw");
}

describe("resolveRuntimeOptions", () => {
  it("applies documented defaults once and freezes them, leaving the caller's object alone", async () => {
    const options: RuntimeOptions = { tools: [echo], pool: { maxQueue: 10 } };
    const runtime = createRuntime(options);
    expect(runtime.options.toolExecution).toBe("parallel");
    expect(runtime.options.pool).toEqual({
      maxThreads: availableParallelism(),
      minThreads: availableParallelism(),
      idleTimeout: 30_000,
      maxQueue: 10,
      resourceLimits: undefined,
      abortGraceMs: 500,
      maxResultBytes: 1_048_576,
      leftoverGraceMs: 20,
      env: undefined,
      maxRunningPerSession: undefined,
      scheduling: "fair",
    });
    expect(Object.isFrozen(runtime.options)).toBe(true);
    expect(Object.isFrozen(runtime.options.pool)).toBe(true);
    expect(options).toEqual({ tools: [echo], pool: { maxQueue: 10 } });
    await runtime.close();
  });

  it.each([
    [{ pool: { scheduling: "lottery" } }, 'Expected `pool.scheduling` to be one of "fair", "fifo", got `"lottery"` (string)'],
    [{ pool: { maxRunningPerSession: 0 } }, "Expected `pool.maxRunningPerSession` to be a number >= 1, got `0` (number)"],
    [{ pool: { maxThreads: 0 } }, "Expected `pool.maxThreads` to be a number >= 1, got `0` (number)"],
    [{ pool: { maxThreads: 1.5 } }, "Expected `pool.maxThreads` to be an integer, got `1.5` (number)"],
    [{ pool: { maxThreads: 2, minThreads: 3 } }, "Expected `pool.minThreads` to be an integer <= pool.maxThreads (2), got `3` (number)"],
    [{ toolExecution: "fast" }, 'Expected `toolExecution` to be one of "parallel", "sequential", got `"fast"` (string)'],
    [{ pool: { threads: 4 } }, "Unknown option `pool.threads`; did you mean `pool.maxThreads`?"],
    [{ tools: [], pol: {} }, "Unknown option `pol`; did you mean `pool`?"],
    [{ toolExecutoin: "parallel" }, "Unknown option `toolExecutoin`; did you mean `toolExecution`?"],
    [{ pool: { maxThread: 2 } }, "Unknown option `pool.maxThread`; did you mean `pool.maxThreads`?"],
    [
      { pool: { resourceLimits: { stackSize: 4 } } },
      "Unknown option `pool.resourceLimits.stackSize`; did you mean `pool.resourceLimits.stackSizeMb`?",
    ],
    [{ fleet: { redis: "redis://localhost", remot: "all" } }, "Unknown option `fleet.remot`; did you mean `fleet.remote`?"],
    [
      { verbose: true },
      "Unknown option `verbose`; known options: `tools`, `pi`, `toolExecution`, `beforeToolCall`, `afterToolCall`, `pool`, `clock`, `tracing`, `fleet`, `maxConcurrency`, `maxConcurrencyPerSession`",
    ],
    [{ pool: { minThreads: 0 } }, "Expected `pool.minThreads` to be a number >= 1, got `0` (number)"],
    [{ pool: { abortGraceMs: 2 ** 31 } }, "Expected `pool.abortGraceMs` to be a number <= 2147483647, got `2147483648` (number)"],
    [{ pool: { env: { A: 1 } } }, "Expected `pool.env.A` to be a string, got `1` (number)"],
    [
      { pool: { resourceLimits: { maxOldGenerationSizeMb: -1 } } },
      "Expected `pool.resourceLimits.maxOldGenerationSizeMb` to be a number > 0, got `-1` (number)",
    ],
    [
      { pool: { resourceLimits: { maxOldGenerationSizeMb: 1, maxYoungGenerationSizeMb: 1 } } },
      "Expected `pool.resourceLimits.maxOldGenerationSizeMb` to be a number >= 16 (a worker needs about half of that to start, and with too little Node 22 and later abort the whole process), got `1` (number)",
    ],
    [
      { pool: { resourceLimits: { maxOldGenerationSizeMb: 64, stackSizeMb: 0.25 } } },
      "Expected `pool.resourceLimits.stackSizeMb` to be a number >= 1 (a worker needs about a third of that to start, and with too little the whole process dies), got `0.25` (number)",
    ],
    [{ beforeToolCall: "yes" }, 'Expected `beforeToolCall` to be a function, got `"yes"` (string)'],
    [{ tools: {} }, "Expected `tools` to be an array of tools, got `{}` (object)"],
    ["fast", 'Expected `options` to be an object, got `"fast"` (string)'],
  ])("rejects %j with a message naming the option", (options, message) => {
    const error = creationError(options);
    expect(error.code).toBe("TP_ERR_INVALID_OPTION");
    expect(error.message).toBe(message);
  });

  it("accepts resourceLimits at the floors of minimumResourceLimits, and any young generation or code range", async () => {
    const resourceLimits = { ...minimumResourceLimits, maxYoungGenerationSizeMb: 0.5, codeRangeSizeMb: 0.5 };
    const runtime = createRuntime({ pool: { maxThreads: 1, resourceLimits } });
    expect(runtime.options.pool.resourceLimits).toEqual({
      maxOldGenerationSizeMb: 16,
      stackSizeMb: 1,
      maxYoungGenerationSizeMb: 0.5,
      codeRangeSizeMb: 0.5,
    });
    await runtime.close();
  });

  it.each([
    [[{ ...echo, name: "" }], "Expected `tools[0].name` to be a non-empty string"],
    [[echo, { ...echo }], 'Two tools are named "echo"'],
    [[{ ...echo, execute: 1 }], 'Expected `tools[0].execute` of tool "echo" to be a function'],
  ])("rejects invalid tools with TP_ERR_INVALID_TOOL (%#)", (tools, message) => {
    const error = creationError({ tools });
    expect(error.code).toBe("TP_ERR_INVALID_TOOL");
    expect(error.message).toContain(message);
  });

  it("refuses no tool for its schema's content: pi meets each schema per call", async () => {
    const runtime = createRuntime({
      tools: [
        { ...echo, name: "nonsense", parameters: { type: "nonsense" } },
        {
          ...echo,
          name: "tuple",
          parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", items: [{ type: "string" }] },
        },
        { ...echo, name: "pattern", parameters: { type: "object", properties: { a: { type: "string", pattern: "(" } } } },
      ],
    });
    expect(runtime.agentTools().map((tool) => tool.name)).toEqual(["nonsense", "tuple", "pattern"]);
    await runtime.close();
  });
});

describe("workerTool", () => {
  const base = { name: "t", description: "d", parameters: { type: "object" }, module: "./tool.js" };

  it("resolves the module to a file: URL and freezes the definition", () => {
    const tool = workerTool(base);
    expect(tool.moduleUrl).toMatch(/^file:\/\/.*\/tool\.js$/);
    expect(tool.exportName).toBe("execute");
    expect(tool.label).toBe("t");
    expect(tool.cost).toBe(1);
    expect(Object.isFrozen(tool)).toBe(true);
  });

  it.each([
    [{ ...base, module: "" }, 'Expected `module` of worker tool "t" to be a path or a file: URL'],
    [{ ...base, module: new URL("https://example.com/x.js") }, "to be a file: URL"],
    [{ ...base, timeoutMs: 0 }, 'Expected `timeoutMs` of worker tool "t" to be a number > 0 and <= 2147483647, got `0` (number)'],
    [{ ...base, executionMode: "later" }, 'to be "sequential" or "parallel"'],
    [{ ...base, parameters: [] }, "to be a JSON Schema object"],
    [{ ...base, cost: 0 }, 'Expected `cost` of worker tool "t" to be an integer from 1 to 1000, got `0` (number)'],
    [{ ...base, cost: 2.5 }, "to be an integer from 1 to 1000"],
    [
      { ...base, resourceLimits: { maxOldGenerationSizeMb: 8 } },
      'Expected `resourceLimits.maxOldGenerationSizeMb` of worker tool "t" to be a number >= 16 (a worker needs about half of that to start, and with too little Node 22 and later abort the whole process), got `8` (number)',
    ],
    [{ ...base, resourceLimits: { stackSizeMb: 0.5 } }, 'Expected `resourceLimits.stackSizeMb` of worker tool "t" to be a number >= 1 ('],
    [{ ...base, agentToolFields: [] }, 'Expected `agentToolFields` of worker tool "t" to be an object, got `[]` (array)'],
    [
      { ...base, agentToolFields: { outputSchema: {}, execute: () => undefined } },
      'Expected `agentToolFields` of worker tool "t" to leave out `execute`, which the definition sets itself',
    ],
  ])("rejects an invalid definition with TP_ERR_INVALID_TOOL (%#)", (options, message) => {
    expect(() => workerTool(options as never)).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_TOOL", message: expect.stringContaining(message) }),
    );
  });

  it.each([
    [{ ...base, timeotMs: 5 }, "Unknown worker tool option `timeotMs`; did you mean `timeoutMs`?"],
    [{ ...base, pool: { name: "p", maxThread: 2 } }, "Unknown worker tool option `pool.maxThread`; did you mean `pool.maxThreads`?"],
    [
      { ...base, pool: { name: "p", maxRunningPerSesion: 1 } },
      "Unknown worker tool option `pool.maxRunningPerSesion`; did you mean `pool.maxRunningPerSession`?",
    ],
    [
      { ...base, resourceLimits: { stackSize: 4 } },
      "Unknown worker tool option `resourceLimits.stackSize`; did you mean `resourceLimits.stackSizeMb`?",
    ],
    [{ ...base, moduleUrl: "file:///t.js" }, "Unknown worker tool option `moduleUrl`; did you mean `module`?"],
    [
      { ...base, verbose: true },
      "Unknown worker tool option `verbose`; known worker tool options: `name`, `label`, `description`, `parameters`, `module`, `exportName`, `executionMode`, `prepareArguments`, `timeoutMs`, `resourceLimits`, `maxResultBytes`, `maxConcurrency`, `cost`, `idempotent`, `context`, `pool`, `agentToolFields`",
    ],
  ])("refuses an option that does not exist, naming the closest known one, with TP_ERR_INVALID_TOOL (%#)", (options, message) => {
    expect(() => workerTool(options as never)).toThrow(expect.objectContaining({ code: "TP_ERR_INVALID_TOOL", message }));
  });

  it("takes every documented option", async () => {
    const tool = workerTool({
      ...base,
      label: "T",
      exportName: "run",
      executionMode: "sequential",
      prepareArguments: (args) => args,
      timeoutMs: 5,
      maxResultBytes: 100,
      maxConcurrency: 2,
      cost: 3,
      idempotent: true,
      context: () => undefined,
      pool: { name: "p", maxThreads: 2, maxRunningPerSession: 1 },
      agentToolFields: { outputSchema: { type: "object" }, promptSnippet: "t things" },
    });
    expect(tool).toMatchObject({ label: "T", timeoutMs: 5, pool: { name: "p", maxThreads: 2, maxRunningPerSession: 1 } });
    expect(Object.isFrozen(tool.agentToolFields)).toBe(true);
    // runtime.agentTools() gives them beside the tool's own fields.
    const module = new URL("./fixtures/tools/behaviours.mjs", import.meta.url);
    const runtime = createRuntime({ tools: [workerTool({ ...base, module, agentToolFields: tool.agentToolFields })] });
    try {
      expect(runtime.agentTools()[0]).toMatchObject({ name: "t", outputSchema: { type: "object" }, promptSnippet: "t things" });
    } finally {
      await runtime.close();
    }
    expect(
      workerTool({ ...base, resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8, codeRangeSizeMb: 8, stackSizeMb: 4 } })
        .resourceLimits,
    ).toEqual({ maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8, codeRangeSizeMb: 8, stackSizeMb: 4 });
  });
});
