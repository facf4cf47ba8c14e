import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { codingTools, createRuntime, supportsPi16, workerTool, type PoolCallEvent, type PoolCallStartedEvent, type ToolCall } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { png } from "./support/coding-trees.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/coding-tools-pools.test.ts");

const workspace = join(tmpdir(), `toolpool-coding-pools-${process.pid}`);
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

const probe = workerTool({
  name: "probe",
  description: "a user's tool",
  parameters: { type: "object", properties: {} },
  module: new URL("./fixtures/coding/thread-probe.mjs", import.meta.url),
});

/** One call of each of the seven coding tools (read an image too, which pi resizes on a worker of its own) and two of the user's tool. */
function roundOf(round: number): ToolCall[] {
  const call = (name: string, args: Record<string, unknown>, index: number): ToolCall => ({
    type: "toolCall",
    id: `${name}-${round}-${index}`,
    name,
    arguments: args,
  });
  return [
    call("probe", {}, 0),
    call("read", { path: "notes.txt" }, 0),
    call("read", { path: "image.png" }, 1),
    call("bash", { command: "echo hi" }, 0),
    call("edit", { path: `edit-${round}.txt`, edits: [{ oldText: "old", newText: "new" }] }, 0),
    call("write", { path: `written-${round}.txt`, content: "x\n" }, 0),
    call("grep", { pattern: "hello" }, 0),
    call("find", { pattern: "*.txt" }, 0),
    call("ls", {}, 0),
    call("probe", {}, 1),
  ];
}

describe.skipIf(!supportsPi16())("the coding tools' own pools (pi 1.6)", () => {
  it("never run a user's worker tool on a thread that ran a coding tool, and leave the user's tool Node's own spawn and Worker", async () => {
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, "notes.txt"), "hello\n");
    let seed = 3;
    writeFileSync(
      join(workspace, "image.png"),
      png(12, 9, () => (seed = (seed * 48271) % 2147483647) / 2147483647),
    );
    const tools = codingTools({ workspace, tools: ["read", "bash", "edit", "write", "grep", "find", "ls"], ioThreads: 2 });
    const runtime = createRuntime({ pi: "1.6", tools: [...tools, probe], pool: { maxThreads: 2 } });
    const started: PoolCallStartedEvent[] = [];
    const onPool = (event: PoolCallEvent) => {
      if (event.type === "started") started.push(event);
    };
    runtime.poolEvents.on(onPool);
    try {
      const probes: Record<string, unknown>[] = [];
      for (let round = 0; round < 3; round++) {
        writeFileSync(join(workspace, `edit-${round}.txt`), "old\n");
        const { messages } = await runtime.executeToolCalls({ role: "assistant", content: roundOf(round) });
        for (const message of messages) {
          // fd 8.6 (Debian 12) refuses pi's find outside a repository: the call ran on its thread all the same.
          if (message.toolName !== "find") expect(message.isError, JSON.stringify(message.content)).toBe(false);
          if (message.toolName === "probe") probes.push(message.details as Record<string, unknown>);
        }
      }
      const codingThreads = new Set(started.filter((event) => event.tool !== "probe").map((event) => event.threadId));
      const probeThreads = new Set(probes.map((details) => details.threadId));
      expect(started.filter((event) => event.tool !== "probe")).toHaveLength(24);
      expect(probes).toHaveLength(6);
      expect([...probeThreads].filter((thread) => codingThreads.has(thread as number))).toEqual([]);
      for (const details of probes) {
        expect(details).toMatchObject({ isChildProcess: true, spawnName: "spawn", spawnSyncName: "spawnSync", workerName: "Worker" });
      }
      // Which pool ran what: the coding tools on theirs, the user's tool on the runtime's shared pool.
      const poolOf = new Map(started.map((event) => [event.tool, event.pool]));
      expect(Object.fromEntries(poolOf)).toEqual({
        probe: "shared",
        read: "pool:toolpool:coding",
        edit: "pool:toolpool:coding",
        write: "pool:toolpool:coding",
        bash: "pool:toolpool:coding-io",
        grep: "pool:toolpool:coding-io",
        find: "pool:toolpool:coding-io",
        ls: "pool:toolpool:coding-io",
      });
    } finally {
      runtime.poolEvents.off(onPool);
      await runtime.close();
    }
  }, 120_000);
});
