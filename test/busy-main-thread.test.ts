import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterEach, beforeEach, describe, expect } from "vitest";

import { workerTool, type AgentTool, type BatchEvent } from "toolpool";

import { FakeClock } from "./support/fake-clock.js";
import { batch, textOf, until } from "./support/helpers.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest({ force: true });

const effects = new URL("./fixtures/tools/effects.mjs", import.meta.url);
const anyArgs = { type: "object" };
const tool = (name: string, exportName: string, timeoutMs?: number) =>
  workerTool({ name, description: name, parameters: anyArgs, module: effects, exportName, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "toolpool-busy-"));
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
});

/** Waits, yielding to the event loop, until `path` exists. */
const untilExists = (path: string): Promise<void> => until(() => existsSync(path), `${path} exists`, { limitMs: 60_000 });

/** Blocks the main thread, without yielding once, until `path` exists: what a busy main thread looks like to the pool. */
function blockUntilExists(path: string): void {
  const giveUpAt = Date.now() + 60_000;
  while (!existsSync(path)) if (Date.now() > giveUpAt) throw new Error(`no ${path} within 60 s`);
}

function _blockFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe("a busy main thread", () => {
  it("never reports a finished call as timed out, though its deadline fires before its reply is read", async () => {
    const clock = new FakeClock();
    const runtime = open({ tools: [tool("write", "writeFile", 1_000)], clock, pool: { maxThreads: 1 } });
    const outcomes: string[] = [];
    const threadIds = new Set<number>();
    for (let round = 0; round < 8; round++) {
      const paths = Object.fromEntries(["startedPath", "goPath", "path", "afterReturnPath"].map((key) => [key, join(dir, `${key}-${round}`)]));
      const done = runtime.executeToolCalls(batch(["w", "write", paths]));
      await untilExists(paths.startedPath!);
      // From here on the main thread does not yield: the tool finishes, the
      // worker marks it finished and posts its reply, and then the deadline
      // comes before the reply is read.
      writeFileSync(paths.goPath!, "go");
      blockUntilExists(paths.afterReturnPath!);
      clock.advance(1_000);
      const { messages } = await done;
      expect(existsSync(paths.path!)).toBe(true);
      outcomes.push(messages[0]!.isError ? `error: ${textOf(messages[0]!)}` : textOf(messages[0]!));
      for (const generation of runtime.diagnose().pools[0]!.generations) for (const thread of generation.threads) threadIds.add(thread.threadId);
    }
    expect(outcomes).toEqual(Array.from({ length: 8 }, (_, round) => `wrote ${join(dir, `path-${round}`)}`));
    // The thread was never terminated: one thread served all eight calls.
    expect(threadIds.size).toBe(1);
  }, 120_000);

  it("keeps an aborted call's result when the tool finished before the abort's grace ran out", async () => {
    const clock = new FakeClock();
    const runtime = open({ tools: [tool("write", "writeFile")], clock, pool: { maxThreads: 1, abortGraceMs: 500 } });
    const paths = Object.fromEntries(["startedPath", "goPath", "path", "afterReturnPath"].map((key) => [key, join(dir, key)]));
    const controller = new AbortController();
    const done = runtime.executeToolCalls(batch(["w", "write", paths]), { signal: controller.signal });
    await untilExists(paths.startedPath!);
    controller.abort();
    writeFileSync(paths.goPath!, "go");
    blockUntilExists(paths.afterReturnPath!);
    clock.advance(500);
    const { messages } = await done;
    expect([messages[0]!.isError, textOf(messages[0]!)]).toEqual([false, `wrote ${paths.path}`]);
  }, 60_000);

  it("says a call timed out only while its tool ran, and that it may have had effects", async () => {
    const clock = new FakeClock();
    const runtime = open({ tools: [tool("write", "writeFile", 1_000)], clock, pool: { maxThreads: 1 } });
    const paths = Object.fromEntries(["startedPath", "goPath", "path", "afterReturnPath"].map((key) => [key, join(dir, key)]));
    const done = runtime.executeToolCalls(batch(["w", "write", paths]));
    await untilExists(paths.startedPath!);
    clock.advance(1_000); // the tool is still waiting for its go
    const { messages } = await done;
    expect(messages[0]!.details).toEqual({ code: "TP_ERR_TIMEOUT" });
    expect(textOf(messages[0]!)).toBe(
      'Tool "write" timed out after 1000 ms; its worker was terminated while the tool was still running, so it may have had some of its effects',
    );
  }, 60_000);

  it("reports a finished call whose reply never comes as TP_ERR_REPLY_LOST, not as timed out", async () => {
    const clock = new FakeClock();
    const runtime = open({ tools: [tool("write", "writeFileThenBlock", 1_000)], clock, pool: { maxThreads: 1, leftoverGraceMs: 50 } });
    const args = { path: join(dir, "written"), blockedPath: join(dir, "blocked") };
    const done = runtime.executeToolCalls(batch(["w", "write", args]));
    await untilExists(args.blockedPath);
    let settled = false;
    void done.then(() => (settled = true));
    clock.advance(1_000);
    // The deadline found the tool finished: it waits for the reply.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBe(false);
    clock.advance(5_050);
    const { messages } = await done;
    expect(messages[0]!.details).toEqual({ code: "TP_ERR_REPLY_LOST" });
    expect(textOf(messages[0]!)).toMatch(
      /^Tool "write" finished, but its reply did not arrive within 5050 ms .* the tool ran to its end and had its effects, but its result is lost$/,
    );
    expect(existsSync(args.path)).toBe(true);
  }, 60_000);
});

describe("partials of a call that outruns its reader", () => {
  const partialBytes = 64 * 1024;

  it("are held back by the worker while the main thread takes none, latest wins", async () => {
    const runtime = open({ tools: [tool("stream", "stream")], pool: { maxThreads: 1 } });
    const count = 400;
    const args = { startedPath: join(dir, "started"), goPath: join(dir, "go"), donePath: join(dir, "done"), count, bytes: partialBytes };
    const updates: number[] = [];
    const done = runtime.executeToolCalls(batch(["s", "stream", args]), {
      emit: (event: BatchEvent) => {
        if (event.type === "tool_execution_update") updates.push((event.partialResult.details as { index: number }).index);
      },
    });
    await untilExists(args.startedPath);
    writeFileSync(args.goPath, "go");
    // The main thread takes nothing off the port while the tool sends all 400.
    blockUntilExists(args.donePath);
    const { messages } = await done;
    expect(textOf(messages[0]!)).toBe(`sent ${count}`);
    // 16 in flight (maxUpdatesInFlight), then the newest one held and sent before the reply.
    expect(updates).toEqual([...Array.from({ length: 16 }, (_, index) => index), count - 1]);
  }, 60_000);

  it("wait in the mailbox at most 16 a call while the event sink is slow, latest wins", async () => {
    const count = 500;
    const streaming: AgentTool = {
      name: "stream",
      label: "stream",
      description: "sends partials",
      parameters: anyArgs as AgentTool["parameters"],
      execute: async (_id, _args, _signal, onUpdate) => {
        for (let index = 0; index < count; index++) onUpdate?.({ content: [{ type: "text", text: "x".repeat(partialBytes) }], details: { index } });
        return { content: [{ type: "text", text: `sent ${count}` }], details: {} };
      },
    };
    const runtime = open({ tools: [streaming] });
    let release!: () => void;
    const sinkOpen = new Promise<void>((resolve) => (release = resolve));
    const updates: number[] = [];
    let waiting = 0;
    let mostWaiting = 0;
    const done = runtime.executeToolCalls(batch(["s", "stream", {}]), {
      emit: async (event: BatchEvent) => {
        if (event.type !== "tool_execution_update") return;
        waiting += 1;
        mostWaiting = Math.max(mostWaiting, waiting);
        await sinkOpen;
        waiting -= 1;
        updates.push((event.partialResult.details as { index: number }).index);
      },
    });
    for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
    release();
    const { messages } = await done;
    expect(textOf(messages[0]!)).toBe(`sent ${count}`);
    expect(mostWaiting).toBe(1); // the mailbox delivers one at a time
    expect(updates).toEqual([...Array.from({ length: 16 }, (_, index) => index), count - 1]);
  }, 60_000);
});
