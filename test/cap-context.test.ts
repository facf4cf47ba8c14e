import { AsyncLocalStorage } from "node:async_hooks";

import { describe, expect, it } from "vitest";

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
    const runtime = runtimeCaps();
    const first = contextOf(runtime);
    let open!: () => void;
    const seen = runHeld(first, runtime, new Promise<void>((resolve) => (open = resolve)));
    expect(isCapContextStorageOn()).toBe(true);
    // The idle check looks every 100 ms: several looks while the execute is held leave it on.
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(isCapContextStorageOn()).toBe(true);
    open();
    // After an await inside the execute, the store is still the call's own.
    expect(await seen).toBe(first);
    await until(() => !isCapContextStorageOn(), "the storage switched off", { limitMs: 10_000 });
    expect(currentCapContext(runtime)).toBeUndefined();
    const second = contextOf(runtime);
    let openNext!: () => void;
    const seenNext = runHeld(second, runtime, new Promise<void>((resolve) => (openNext = resolve)));
    expect(isCapContextStorageOn()).toBe(true);
    openNext();
    expect(await seenNext).toBe(second);
  });
});
