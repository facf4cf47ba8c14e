import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { runToolCall as piRunToolCall } from "@earendil-works/pi-agent-core";
import { codingTools, createRuntime, supportsPi16, ToolpoolError, type CodingToolName, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { generateCalls, outsideOf, useDeterministicSearchTools, which, writeTree, type GeneratedCall } from "./support/coding-trees.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/coding-tools.test.ts");

const allTools: CodingToolName[] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
const base = join(tmpdir(), `toolpool-coding-${process.pid}`);

/** pi's tools as its factories make them, in process (loaded only where pi 1.6 runs). */
async function piTools(cwd: string): Promise<AgentToolLike[]> {
  const pi = (await import("@earendil-works/pi-coding-agent")) as unknown as Record<string, (cwd: string) => AgentToolLike>;
  const factories: Record<CodingToolName, string> = {
    read: "createReadTool",
    bash: "createBashTool",
    edit: "createEditTool",
    write: "createWriteTool",
    grep: "createGrepTool",
    find: "createFindTool",
    ls: "createLsTool",
  };
  return allTools.map((name) => pi[factories[name]]!(cwd));
}

/** What the differential uses of a pi `AgentTool`, pi's own or `runtime.agentTools()`'. */
interface AgentToolLike {
  name: string;
  prepareArguments?: (args: unknown) => unknown;
  execute(toolCallId: string, args: unknown, signal?: AbortSignal): Promise<object>;
  [field: string]: unknown;
}

/** pi puts bash's full-output file in the temp folder, toolpool in the runtime's folder of them (src/tools/coding/bash-output-files.ts). */
function withoutOutputFolder(text: string): string {
  if (!text.includes("pi-bash-")) return text;
  return text.replace(/\/[^\s"\]]*\/pi-bash-[0-9a-f]+\.log/g, "FOLDER/pi-bash-RANDOM.log");
}

/** What the differential compares: content, details and isError, with bash's random file names and timings aside. */
function comparable(result: { content?: unknown; details?: unknown; isError?: unknown; structuredContent?: unknown }): unknown {
  const text = JSON.stringify({
    content: result.content,
    details: result.details,
    isError: result.isError,
    structuredContent: result.structuredContent,
  });
  // The pattern runs on each string value, never on the whole text: on an image's base64 (slashes, no spaces) it
  // backtracks quadratically, over a minute for a 1 MiB screenshot.
  return JSON.parse(text, (key, value) => (key === "wall_time_seconds" ? 0 : typeof value === "string" ? withoutOutputFolder(value) : value));
}

/** A rejection of `execute` as the differential compares it: its class, name, message and every own field (a Node error's `code`, `errno`, `syscall`, `path`). */
function comparableThrow(error: unknown): unknown {
  if (!(error instanceof Error)) return { notAnError: String(error) };
  const fields = Object.fromEntries(
    Object.entries(error).map(([key, value]) => [key, typeof value === "string" ? withoutOutputFolder(value) : value]),
  );
  return { class: error.constructor.name, name: error.name, message: withoutOutputFolder(error.message), fields };
}

/** Every field of a tool but its execute: functions by their source, the rest as data; a field set to undefined counts as absent. */
function definitionOf(tool: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(tool)
      .filter(([key, value]) => key !== "execute" && value !== undefined)
      .map(([key, value]) => [key, typeof value === "function" ? `function ${String(value)}` : JSON.parse(JSON.stringify(value))]),
  );
}

/** One call as the agent loop runs it (`runToolCall`, pi's or the runtime's), or through the tool's own `execute` (its arguments prepared by the tool's own `prepareArguments`, as the loop does). */
async function runCall(
  call: GeneratedCall,
  index: number,
  tool: AgentToolLike,
  viaLoop: (toolCall: {
    type: "toolCall";
    id: string;
    name: string;
    arguments: Record<string, unknown>;
  }) => Promise<{ result: object; isError: boolean }>,
): Promise<unknown> {
  const args = structuredClone(call.arguments);
  if (!call.throughExecute) {
    const outcome = await viaLoop({ type: "toolCall", id: `c${index}`, name: call.name, arguments: args });
    return { loop: comparable({ ...outcome.result, isError: outcome.isError }) };
  }
  const prepared = tool.prepareArguments === undefined ? args : tool.prepareArguments(args);
  const signal = call.isAborted ? AbortSignal.abort() : undefined;
  try {
    return { returned: comparable(await tool.execute(`c${index}`, prepared, signal)) };
  } catch (error) {
    return { threw: comparableThrow(error) };
  }
}

/** Whether a call's outcome is confine's refusal: through the loop an error result, through execute a throw, saying the path is outside. */
function isRefusal(outcome: unknown): boolean {
  const { loop, threw } = outcome as { loop?: { isError: boolean; content: { text?: string }[] }; threw?: { message: string } };
  const text = loop?.isError === true ? loop.content[0]?.text : threw?.message;
  return text !== undefined && /^Path .* is outside the workspace /.test(text);
}

/** One call through pi's own agent loop (`runToolCall`), with `tools` as the model's tools. */
function piLoopOver(tools: ReadonlyMap<string, unknown>) {
  return async (toolCall: { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> }) => {
    const all = [...tools.values()];
    const assistantMessage = { role: "assistant", content: [toolCall], stopReason: "toolUse" };
    return (await piRunToolCall(toolCall as never, {
      tools: all as never,
      context: { systemPrompt: "", messages: [], tools: all } as never,
      assistantMessage: assistantMessage as never,
    })) as { result: object; isError: boolean };
  };
}

describe.skipIf(!supportsPi16())("codingTools against pi 1.6's own tools", () => {
  const workspace = join(base, "differential");
  /**
   * A plain set and a confined one, on one thread each (and one of
   * `toolpool:coding-io`): the first seed's first calls, aborted, meet cold
   * threads. Their abort's grace is short of a thread's import of pi (half a
   * second and more), which the grace must not count: pi answers an aborted
   * call at once.
   */
  let runtimes: [plain: Runtime, confined: Runtime];
  beforeAll(() => {
    mkdirSync(workspace, { recursive: true });
    useDeterministicSearchTools(join(base, "bin"));
    runtimes = [false, true].map((confine) =>
      createRuntime({
        pi: "1.6",
        tools: codingTools({ workspace, tools: allTools, confine, ioThreads: 1 }),
        pool: { maxThreads: 1, abortGraceMs: 200 },
      }),
    ) as [Runtime, Runtime];
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((runtime) => runtime.close()));
    rmSync(base, { recursive: true, force: true });
    rmSync(outsideOf(workspace), { recursive: true, force: true });
  });

  it("has every field of pi's AgentTools, execute aside, confined or not (pi 1.6)", async () => {
    const pi = await piTools(workspace);
    for (const runtime of runtimes) {
      const agentTools = runtime.agentTools();
      expect(agentTools.map((tool) => tool.name)).toEqual(pi.map((tool) => tool.name));
      for (const [index, tool] of agentTools.entries()) expect(definitionOf(tool), tool.name).toEqual(definitionOf(pi[index]!));
    }
  });

  const seeds = (process.env.CODING_DIFFERENTIAL_SEEDS ?? "1,2,3,4,5,6").split(",").map(Number);
  for (const seed of seeds) {
    it(`gives pi's results for seed ${seed}'s tree and calls, aborted, through links and confined (pi 1.6)`, async () => {
      const tree = writeTree(workspace, seed);
      const calls = generateCalls(seed, workspace, tree);
      const tools = new Map((await piTools(workspace)).map((tool) => [tool.name, tool]));
      const piLoop = piLoopOver(tools);
      const expected: unknown[] = [];
      for (const [index, call] of calls.entries()) {
        // confine refuses a path that leaves: pi's own call is not made, so that both trees stay alike.
        expected.push(call.isConfined && call.leaves ? "refused" : await runCall(call, index, tools.get(call.name)!, piLoop));
      }
      // The same tree again, at the same path, for toolpool's calls in the same order.
      writeTree(workspace, seed);
      const kinds = new Map<string, number>();
      const agentTools = runtimes.map((runtime) => new Map(runtime.agentTools().map((tool) => [tool.name, tool as unknown as AgentToolLike])));
      for (const [index, call] of calls.entries()) {
        const side = call.isConfined ? 1 : 0;
        const actual = await runCall(call, index, agentTools[side]!.get(call.name)!, (toolCall) => runtimes[side].runToolCall(toolCall));
        const what = `call ${index}: ${call.name} ${JSON.stringify(call.arguments).slice(0, 200)}${call.isAborted ? " aborted" : ""}${call.isConfined ? " confined" : ""}`;
        if (expected[index] === "refused") expect(isRefusal(actual), `${what}: ${JSON.stringify(actual).slice(0, 300)}`).toBe(true);
        else expect(actual, what).toEqual(expected[index]);
        const isError = "threw" in (actual as object) || (actual as { loop?: { isError?: boolean } }).loop?.isError === true;
        const key = `${call.name}:${isError ? "error" : "ok"}`;
        kinds.set(key, (kinds.get(key) ?? 0) + 1);
      }
      // Each seed exercises every tool, and both outcomes of the ones that can fail; both runtimes, and aborted calls.
      for (const name of allTools) expect([...kinds.keys()].some((key) => key.startsWith(`${name}:`))).toBe(true);
      for (const name of ["read", "edit", "bash", "ls", "grep", "write", "find"]) {
        expect(kinds.get(`${name}:ok`), name).toBeGreaterThan(0);
        expect(kinds.get(`${name}:error`), name).toBeGreaterThan(0);
      }
      const count = (test: (call: GeneratedCall) => boolean) => calls.filter(test).length;
      expect(count((call) => call.isConfined && !call.leaves)).toBeGreaterThan(0);
      expect(count((call) => call.isConfined && call.leaves)).toBeGreaterThan(0);
      console.log(
        `seed ${seed}: ${calls.length} calls (${count((call) => call.isAborted)} aborted, ${count((call) => call.isConfined)} confined, ` +
          `${count((call) => call.isConfined && call.leaves)} refused), ${[...kinds].map(([key, count]) => `${key} ${count}`).join(", ")}`,
      );
    }, 180_000);
  }
});

describe.skipIf(!supportsPi16() || process.platform !== "linux" || which(["bwrap"]) === undefined)(
  "codingTools in the bwrap sandbox against pi 1.6's own tools",
  () => {
    const workspace = join(base, "sandboxed");
    let runtime: Runtime;
    beforeAll(() => {
      mkdirSync(workspace, { recursive: true });
      useDeterministicSearchTools(join(base, "bin"));
      runtime = createRuntime({
        pi: "1.6",
        tools: codingTools({ workspace, tools: allTools, sandbox: "bwrap", ioThreads: 1 }),
        pool: { maxThreads: 1, abortGraceMs: 200 },
      });
    });
    afterAll(async () => {
      await runtime.close();
      rmSync(outsideOf(workspace), { recursive: true, force: true });
    });

    /** Beside each seed's calls that stay in the workspace: deadlines, a command's own exit code, a signal. */
    const extraCalls: GeneratedCall[] = [
      { command: "echo before; sleep 30", timeout: 1 },
      { command: "echo err >&2; exit 7" },
      { command: "sleep 30 & echo started", timeout: 2 },
      { command: "mkdir -p made && cd made && pwd && echo $PWD" },
    ].map((args) => ({ name: "bash", arguments: args, isAborted: false, isConfined: true, leaves: false, throughExecute: false }));

    // Two seeds: the sandbox changes where commands run, not what pi's tools do with their results.
    const seeds = (process.env.CODING_DIFFERENTIAL_SEEDS ?? "1,2").split(",").map(Number).slice(0, 2);
    for (const seed of seeds) {
      it(`gives pi's results for seed ${seed}'s calls that stay inside, deadlines included (pi 1.6)`, async () => {
        const tree = writeTree(workspace, seed);
        const calls = [...generateCalls(seed, workspace, tree).filter((call) => !call.leaves), ...extraCalls];
        const tools = new Map((await piTools(workspace)).map((tool) => [tool.name, tool]));
        const piLoop = piLoopOver(tools);
        const expected: unknown[] = [];
        for (const [index, call] of calls.entries()) expected.push(await runCall(call, index, tools.get(call.name)!, piLoop));
        writeTree(workspace, seed);
        const agentTools = new Map(runtime.agentTools().map((tool) => [tool.name, tool as unknown as AgentToolLike]));
        for (const [index, call] of calls.entries()) {
          const actual = await runCall(call, index, agentTools.get(call.name)!, (toolCall) => runtime.runToolCall(toolCall));
          expect(actual, `call ${index}: ${call.name} ${JSON.stringify(call.arguments).slice(0, 200)}${call.isAborted ? " aborted" : ""}`).toEqual(
            expected[index],
          );
        }
        expect(calls.filter((call) => call.name === "bash").length).toBeGreaterThan(extraCalls.length);
      }, 180_000);
    }
  },
);

describe.skipIf(!supportsPi16())("codingTools workspaces and confine (pi 1.6)", () => {
  const root = join(base, "sessions");
  const outside = join(base, "outside");
  let runtime: Runtime;
  beforeAll(() => {
    mkdirSync(root, { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, "secret.txt"), "secret\n");
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace: { root, perSession: true }, confine: true, tools: ["read", "bash", "write", "ls"] }),
      pool: { maxThreads: 2 },
    });
  });
  afterAll(async () => {
    await runtime.close();
  });

  const call = (id: string, name: string, args: Record<string, unknown>) => ({
    role: "assistant" as const,
    content: [{ type: "toolCall" as const, id, name, arguments: args }],
    stopReason: "toolUse" as const,
  });

  it("runs each session in a folder of its own, and calls without a key in the root", async () => {
    await runtime.executeToolCalls(call("w1", "write", { path: "mine.txt", content: "alice\n" }), { sessionKey: "alice" });
    await runtime.executeToolCalls(call("w2", "write", { path: "mine.txt", content: "bob\n" }), { sessionKey: "bob" });
    await runtime.executeToolCalls(call("w3", "write", { path: "mine.txt", content: "nobody\n" }));
    expect(readFileSync(join(root, "alice", "mine.txt"), "utf8")).toBe("alice\n");
    expect(readFileSync(join(root, "bob", "mine.txt"), "utf8")).toBe("bob\n");
    expect(readFileSync(join(root, "mine.txt"), "utf8")).toBe("nobody\n");
    const { messages } = await runtime.executeToolCalls(call("b1", "bash", { command: "pwd" }), { sessionKey: "alice" });
    expect(messages[0]!.content).toEqual([{ type: "text", text: `${join(root, "alice")}\n` }]);
    // A key that is not a plain name gets a folder named by its digest, inside the root.
    await runtime.executeToolCalls(call("w4", "write", { path: "x.txt", content: "odd\n" }), { sessionKey: "../../escape" });
    const { messages: listed } = await runtime.executeToolCalls(call("l1", "ls", {}));
    expect((listed[0]!.content[0] as { text: string }).text).toMatch(/session-[0-9a-f]{32}\//);
  });

  it("refuses a path outside the workspace, through .. and through a symlink, naming it", async () => {
    mkdirSync(join(root, "carol"), { recursive: true });
    symlinkSync(outside, join(root, "carol", "link"));
    for (const path of ["../../outside/secret.txt", join(outside, "secret.txt"), "link/secret.txt"]) {
      const { messages } = await runtime.executeToolCalls(call("r", "read", { path }), { sessionKey: "carol" });
      expect(messages[0]!.isError).toBe(true);
      const text = (messages[0]!.content[0] as { text: string }).text;
      expect(text).toContain(`Path "${path}" is outside the workspace`);
      expect(text).not.toContain("secret\n");
    }
    const { messages: written } = await runtime.executeToolCalls(call("w", "write", { path: "link/new.txt", content: "no" }), {
      sessionKey: "carol",
    });
    expect(written[0]!.isError).toBe(true);
    expect(() => readFileSync(join(outside, "new.txt"))).toThrow();
    const { messages: inside } = await runtime.executeToolCalls(call("r2", "read", { path: "../carol/link/../../carol/inside.txt" }), {
      sessionKey: "carol",
    });
    expect((inside[0]!.content[0] as { text: string }).text).not.toContain("outside the workspace");
  });

  it("refuses bad options with a message naming them", () => {
    const attempts: [unknown, RegExp][] = [
      [{ workspace: join(base, "no-such-folder") }, /`workspace` to be an existing directory/],
      [{ workspace: root, tools: ["read", "powershell"] }, /`tools` to be names out of read, bash, edit, write, grep, find, ls, got `"powershell"`/],
      [{ workspace: root, tools: [] }, /`tools` to be a non-empty array/],
      [{ workspace: root, bash: { timeoutMs: 0 } }, /`bash.timeoutMs` to be an integer from 1/],
      [{ workspace: root, bash: { timeoutMs: 5000, maxTimeoutMs: 1000 } }, /`bash.timeoutMs` to be at most bash.maxTimeoutMs \(1000\)/],
      [{ workspace: root, piOptions: { bash: { spawnHook: () => ({}) } } }, /`piOptions.bash.spawnHook` to be plain data/],
      [{ workspace: { root } }, /`workspace` to be a folder, a function/],
      [{ workspace: root, confnie: true }, /^Unknown option `confnie`; did you mean `confine`\?$/],
      [{ workspace: root, bash: { timeOutMs: 5000 } }, /^Unknown option `bash.timeOutMs`; did you mean `bash.timeoutMs`\?$/],
    ];
    for (const [options, message] of attempts) {
      let thrown: unknown;
      try {
        codingTools(options as never);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(options)).toBeInstanceOf(ToolpoolError);
      expect((thrown as ToolpoolError).code).toBe("TP_ERR_INVALID_OPTION");
      expect((thrown as Error).message).toMatch(message);
    }
  });

  it("refuses to run on pi 0.73's rules, the default included, with TP_ERR_INVALID_OPTION saying why", () => {
    const tools = codingTools({ workspace: root, tools: ["bash"] });
    for (const options of [{ tools }, { tools, pi: "0.73" as const }]) {
      let thrown: unknown;
      try {
        createRuntime(options).close();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ToolpoolError);
      expect((thrown as ToolpoolError).code).toBe("TP_ERR_INVALID_OPTION");
      expect((thrown as Error).message).toBe(
        "pi's coding tools give pi 1.6's results (a failed bash command is `isError: true`), which pi 0.73's rules do not read: " +
          'they need `pi: "1.6"`, and this runtime\'s pi is "0.73"',
      );
    }
  });

  it("ends a call whose workspace function fails with an error result naming the session", async () => {
    const failing = createRuntime({
      pi: "1.6",
      tools: codingTools({
        workspace: (key) => {
          if (key === "broken") throw new Error("no workspace for broken");
          return key === "gone" ? join(base, "gone") : root;
        },
        tools: ["ls"],
      }),
    });
    try {
      const broken = await failing.executeToolCalls(call("a", "ls", {}), { sessionKey: "broken" });
      expect(broken.messages[0]).toMatchObject({ isError: true, content: [{ type: "text", text: "no workspace for broken" }] });
      const gone = await failing.executeToolCalls(call("b", "ls", {}), { sessionKey: "gone" });
      expect((gone.messages[0]!.content[0] as { text: string }).text).toMatch(
        /^The workspace of session "gone" is not an existing directory: \/.*gone \(ENOENT/,
      );
      const fine = await failing.executeToolCalls(call("c", "ls", {}), { sessionKey: "fine" });
      expect(fine.messages[0]!.isError).toBe(false);
    } finally {
      await failing.close();
    }
  });
});

describe.skipIf(!supportsPi16())("codingTools results past the pool's default cap (pi 1.6)", () => {
  it("reads a screenshot whose base64 is over 1 MiB as pi does", async () => {
    const folder = join(base, "images");
    mkdirSync(folder, { recursive: true });
    const shot = new URL("../node_modules/@earendil-works/pi-coding-agent/docs/images/interactive-mode.png", import.meta.url);
    writeFileSync(join(folder, "shot.png"), readFileSync(shot));
    const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace: folder, tools: ["read"] }) });
    try {
      const outcome = await runtime.runToolCall({ type: "toolCall", id: "img", name: "read", arguments: { path: "shot.png" } });
      expect(outcome.isError).toBe(false);
      expect(JSON.stringify(outcome.result).length).toBeGreaterThan(1024 * 1024);
      expect(outcome.result.content.some((block) => block.type === "image")).toBe(true);
      // pi's own read, in process: the same result, its base64 data one string at both places
      // (it crosses the thread boundary once, see src/workers/repeated-strings.ts).
      const piRead = (await piTools(folder))[0];
      const toolCall = { type: "toolCall", id: "img", name: "read", arguments: { path: "shot.png" } };
      const pi = (await piRunToolCall(toolCall as never, {
        tools: [piRead] as never,
        context: { systemPrompt: "", messages: [], tools: [piRead] } as never,
        assistantMessage: { role: "assistant", content: [toolCall], stopReason: "toolUse" } as never,
      })) as { result: object; isError: boolean };
      expect(pi.isError).toBe(false);
      expect(comparable(outcome.result)).toEqual(comparable(pi.result));
      const image = outcome.result.content.find((block) => block.type === "image") as { data: string };
      expect(image.data.length).toBeGreaterThan(512 * 1024);
      expect((outcome.result as { structuredContent?: { data?: unknown } }).structuredContent?.data === image.data).toBe(true);
    } finally {
      await runtime.close();
    }
  }, 120_000);
});

describe.skipIf(supportsPi16())("codingTools below Node 22.19", () => {
  it("throws TP_ERR_INVALID_OPTION naming the Node it needs", () => {
    expect(() => codingTools({ workspace: tmpdir() })).toThrow(/need Node >= 22\.19\.0; this is Node/);
  });
});
