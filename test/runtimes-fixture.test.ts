/**
 * The runtime fixture of test/support/runtimes.ts: what a test opens is
 * closed after it, and a close that never ends fails with a message that
 * says so instead of hanging.
 */
import { describe, expect } from "vitest";

import type { Runtime } from "toolpool";

import { type Closable, closeAll, closeRuntimesNow, open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

const ends: Closable = { close: () => Promise.resolve() };
const neverEnds: Closable = { close: () => new Promise<void>(() => {}) };

describe("closeAll", () => {
  it("resolves once every close has ended, passing force on", async () => {
    const forced: (boolean | undefined)[] = [];
    const recording: Closable = { close: async (options) => void forced.push(options?.force) };
    await closeAll([recording, ends], { force: true });
    expect(forced).toEqual([true]);
  });

  it("rejects, naming how many did not end, when a close never ends", async () => {
    await expect(closeAll([ends, neverEnds, neverEnds], { limitMs: 50 })).rejects.toThrow("2 of 3 runtime.close() did not end within 50 ms");
  });

  it("rejects with a close's own error", async () => {
    const failing: Closable = { close: () => Promise.reject(new Error("close failed")) };
    await expect(closeAll([ends, failing])).rejects.toThrow("close failed");
  });
});

describe("runtimeTest", () => {
  let opened: Runtime | undefined;

  it("hands out runtimes with open() while a test runs", () => {
    opened = open({ tools: [] });
    expect(opened.isClosed).toBe(false);
  });

  it("has closed them once the test that opened them ended", () => {
    expect(opened?.isClosed).toBe(true);
  });
});

describe("closeRuntimesNow", () => {
  it("closes the runtimes the running test opened, before its end", async () => {
    const runtime = open({ tools: [] });
    await closeRuntimesNow();
    expect(runtime.isClosed).toBe(true);
  });
});
