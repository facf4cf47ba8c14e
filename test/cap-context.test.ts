import { AsyncLocalStorage } from "node:async_hooks";

import { describe, expect, it, vi } from "vitest";

import { until } from "./support/helpers.js";
import {
  CapClaim,
  CapContext,
  CapGate,
  CapKey,
  currentCapContext,
  enterCapContext,
  isCapContextStorageOn,
  leaveCapContext,
} from "./support/internals.js";

/** Node 20 and 22 keep an `AsyncLocalStorage`'s store with async hooks, which cost every promise while on; later versions do not. */
const isHookBased = Object.hasOwn(new AsyncLocalStorage(), "enabled");

function contextOf(runtime: ReturnType<typeof runtimeCaps>): CapContext {
  const batchKey = new CapKey();
  const claim = new CapClaim([batchKey], [1]);
  return new CapContext(claim, { runtime, batchKey, perBatch: 1, session: batchKey, poolSession: batchKey, parent: undefined });
}

function runtimeCaps() {
  return { gate: new CapGate(), tools: new Map(), perSession: undefined };
}

/** Runs an execute in `context` that awaits `gate`, then reports the context it sees. */
async function runHeld(context: CapContext, runtime: ReturnType<typeof runtimeCaps>, gate: Promise<void>): Promise<CapContext | undefined> {
  try {
    return await enterCapContext(context, async () => {
      await gate;
      return currentCapContext(runtime);
    });
  } finally {
    leaveCapContext();
  }
}

describe.skipIf(!isHookBased)("the storage nested calls find their parent through (hook-based Node versions)", () => {
  it("stays on while a capped execute runs, goes off once none runs, and comes back on for the next", async () => {
    // Another test's idle check (a real interval) ends first: the storage is off and no check is pending.
    await until(() => !isCapContextStorageOn(), "the storage switched off after the tests before");
    // The idle check is an interval: on fake timers, each of its looks is a step of the test.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const runtime = runtimeCaps();
      const first = contextOf(runtime);
      let open!: () => void;
      const seen = runHeld(first, runtime, new Promise<void>((resolve) => (open = resolve)));
      expect(isCapContextStorageOn()).toBe(true);
      expect(vi.getTimerCount()).toBe(1);
      // Several looks while the execute is held leave it on.
      for (let look = 0; look < 5; look++) vi.advanceTimersToNextTimer();
      expect(isCapContextStorageOn()).toBe(true);
      open();
      // After an await inside the execute, the store is still the call's own.
      expect(await seen).toBe(first);
      // Within two looks once none runs (the first may see an execute that began since the one before).
      vi.advanceTimersToNextTimer().advanceTimersToNextTimer();
      expect(isCapContextStorageOn()).toBe(false);
      expect(vi.getTimerCount()).toBe(0);
      expect(currentCapContext(runtime)).toBeUndefined();
      const second = contextOf(runtime);
      let openNext!: () => void;
      const seenNext = runHeld(second, runtime, new Promise<void>((resolve) => (openNext = resolve)));
      expect(isCapContextStorageOn()).toBe(true);
      openNext();
      expect(await seenNext).toBe(second);
      // Off again, so that the next test starts with no check pending on a fake timer.
      vi.advanceTimersToNextTimer().advanceTimersToNextTimer();
      expect(isCapContextStorageOn()).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
