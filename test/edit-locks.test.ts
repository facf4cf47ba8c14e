import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";

import { codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/edit-locks.test.ts");

const base = join(tmpdir(), `toolpool-edit-locks-${process.pid}`);
const dist = new URL("../dist/tools/coding/", import.meta.url);

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("path locks across worker threads", () => {
  const holder = new URL("./fixtures/coding/lock-holder.mjs", import.meta.url);

  async function start(path: string, hold: boolean, pathLocks: Int32Array): Promise<{ worker: Worker; next: () => Promise<string> }> {
    const worker = new Worker(holder, { workerData: { path, hold, pathLocks } });
    const messages: string[] = [];
    const waiters: ((message: string) => void)[] = [];
    worker.on("message", (message: string) => {
      const waiter = waiters.shift();
      if (waiter) waiter(message);
      else messages.push(message);
    });
    const next = () => (messages.length > 0 ? Promise.resolve(messages.shift()!) : new Promise<string>((resolve) => waiters.push(resolve)));
    return { worker, next };
  }

  it("frees the locks of a thread terminated while it held them, and gives up a wait on an abort", async () => {
    const { pathLockTable, pathLockSlot, releasePathLocksOf } = await import(new URL("path-lock-table.js", dist).href);
    const { pathLockKey } = await import(new URL("path-locks.js", dist).href);
    mkdirSync(base, { recursive: true });
    const path = join(base, "locked.txt");
    writeFileSync(path, "x\n");
    const table = pathLockTable() as Int32Array;
    const slot = pathLockSlot(await pathLockKey(path));

    const first = await start(path, true, table);
    expect(await first.next()).toBe("held");
    expect(Atomics.load(table, slot)).toBe(first.worker.threadId);

    // A second thread waits behind it, and gives up when aborted.
    const aborted = await start(path, false, table);
    aborted.worker.postMessage("abort");
    expect(await aborted.next()).toBe("failed: Operation aborted");
    await aborted.worker.terminate();

    // The holder is terminated: its lock stays taken until the main thread frees the slots of its thread.
    const firstId = first.worker.threadId;
    await first.worker.terminate();
    expect(Atomics.load(table, slot)).toBe(firstId);
    const second = await start(path, false, table);
    releasePathLocksOf(firstId);
    expect(await second.next()).toBe("held");
    expect(await second.next()).toBe("released");
    expect(Atomics.load(table, slot)).toBe(0);
    await second.worker.terminate();
  }, 60_000);
});

describe.skipIf(!supportsPi16())("edits never lose an update (pi 1.6)", () => {
  const workspace = join(base, "sessions");
  let runtime: Runtime;
  beforeAll(() => {
    mkdirSync(workspace, { recursive: true });
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace, tools: ["read", "edit", "write"] }),
      pool: { maxThreads: 2, minThreads: 2 },
    });
  });
  afterAll(() => runtime.close());

  const edit = (id: string, path: string, oldText: string, newText: string) => ({
    role: "assistant" as const,
    content: [{ type: "toolCall" as const, id, name: "edit", arguments: { path, edits: [{ oldText, newText }] } }],
    stopReason: "toolUse" as const,
  });

  it("applies every edit of sessions editing one file at once, on two threads", async () => {
    // Large enough that each edit's read, diff and write take a while, so that edits on the two threads overlap.
    const lines = Array.from({ length: 20_000 }, (_, index) => `<L${index}> ${"x".repeat(40)}`);
    writeFileSync(join(workspace, "shared.txt"), `${lines.join("\n")}\n`);
    const sessions = ["a", "b", "c", "d"];
    let applied = 0;
    for (let round = 0; round < 15; round++) {
      const batches = sessions.map((session, index) => {
        const target = round * 4 + index;
        return runtime.executeToolCalls(edit(`${session}${round}`, "shared.txt", `<L${target * 100}>`, `<L${target * 100}> edited by ${session}`), {
          sessionKey: session,
        });
      });
      for (const { messages } of await Promise.all(batches)) {
        expect(messages[0]!.isError, JSON.stringify(messages[0]!.content)).toBe(false);
        applied += 1;
      }
    }
    const final = readFileSync(join(workspace, "shared.txt"), "utf8");
    const edited = final.split("\n").filter((line) => line.includes(" edited by "));
    expect(applied).toBe(60);
    expect(edited).toHaveLength(60);
  }, 240_000);

  it("applies one of two edits of the same text, and tells the other why", async () => {
    writeFileSync(join(workspace, "contested.txt"), "const answer = 41;\n");
    const [first, second] = await Promise.all([
      runtime.executeToolCalls(edit("x", "contested.txt", "const answer = 41;", "const answer = 42;"), { sessionKey: "x" }),
      runtime.executeToolCalls(edit("y", "contested.txt", "const answer = 41;", "const answer = 43;"), { sessionKey: "y" }),
    ]);
    const outcomes = [first.messages[0]!, second.messages[0]!];
    expect(outcomes.filter((message) => !message.isError)).toHaveLength(1);
    const loser = outcomes.find((message) => message.isError)!;
    expect((loser.content[0] as { text: string }).text).toMatch(/^Could not find the exact text in contested\.txt/);
    expect(["const answer = 42;\n", "const answer = 43;\n"]).toContain(readFileSync(join(workspace, "contested.txt"), "utf8"));
  }, 120_000);

  it("refuses an edit whose file another process changed after the edit read it, keeping that change", async () => {
    const { checkedEditOperations } = await import(new URL("checked-file-operations.js", dist).href);
    const { createEditTool } = (await import("@earendil-works/pi-coding-agent")) as unknown as {
      createEditTool(cwd: string, options: unknown): { execute(id: string, args: unknown): Promise<unknown> };
    };
    const path = join(workspace, "appended.txt");
    const run = async (appendDuringEdit: boolean) => {
      writeFileSync(path, "first\nsecond\n");
      const checked = checkedEditOperations();
      // Between the edit's read and its write, a real process appends a line.
      const operations = {
        ...checked,
        readFile: async (file: string) => {
          const bytes = await checked.readFile(file);
          if (appendDuringEdit) {
            const child = spawn(process.execPath, ["-e", `require("node:fs").appendFileSync(${JSON.stringify(path)}, "appended\\n")`]);
            expect((await once(child, "exit"))[0]).toBe(0);
          }
          return bytes;
        },
      };
      const tool = createEditTool(workspace, { operations });
      return tool.execute("e", { path: "appended.txt", edits: [{ oldText: "first", newText: "FIRST" }] }).then(
        (result) => ({ result, error: undefined }),
        (error: Error) => ({ result: undefined, error }),
      );
    };
    const refused = await run(true);
    expect(refused.error?.message).toBe(
      `File ${path} was changed on disk after the edit read it; nothing was written. Read it again and redo the edit against what it holds now.`,
    );
    expect(readFileSync(path, "utf8")).toBe("first\nsecond\nappended\n");
    const applied = await run(false);
    expect(applied.error).toBeUndefined();
    expect(readFileSync(path, "utf8")).toBe("FIRST\nsecond\n");
  }, 60_000);
});
