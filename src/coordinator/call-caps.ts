/**
 * The caps of a call's execute stage: its tool's, its batch's and its
 * session's, held in one {@link CapGate} per runtime, and the parent of a
 * nested call (one a tool makes through `runtime.runToolCall` from inside
 * its execute).
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";

import { CapClaim, CapKey, type CapGate } from "../cap-gate.js";
import type { PartCaps } from "../contracts/pool-contract.js";
import { ToolpoolError } from "../errors.js";
import type { ForceStop } from "./force-stop.js";

/** A capped tool: the object is its key in the gate (a tool's name could equal a session's), holding its count. */
export class ToolCap extends CapKey {
  readonly name: string;
  readonly cap: number;

  constructor(name: string, cap: number) {
    super();
    this.name = name;
    this.cap = cap;
  }
}

/** A runtime's caps; a runtime without any has none of this. */
export interface RuntimeCaps {
  readonly gate: CapGate;
  /** The capped tools, by name. */
  readonly tools: ReadonlyMap<string, ToolCap>;
  /** Most calls of one session executing at once. */
  readonly perSession: number | undefined;
}

/** The caps one batch's calls count against. */
export interface BatchCaps {
  readonly runtime: RuntimeCaps;
  /** The batch's key in the gate: a nested call's batch counts against its parent's. */
  readonly batchKey: CapKey;
  readonly perBatch: number | undefined;
  /**
   * The session, as the gate keys it (a nested call's session is its
   * parent's unless it names one). A batch without a `sessionKey` is a
   * session of its own: its key is then `batchKey` itself, one entry of the
   * gate under the lower of the two caps.
   */
  readonly session: unknown;
  /** The session its worker calls take turns as in the pool. */
  readonly poolSession: unknown;
  /** The claim of the call whose execute made this batch (a nested call); undefined for a batch of its own. */
  readonly parent: CapClaim | undefined;
}

/** A call waiting for a cap, as `Runtime.capWaits()` lists it. */
export interface CapWait {
  tool: string;
  toolCallId: string;
  /**
   * Its batch's id, as the batch's events carry it (a call of `runToolCall`
   * has one of its own); empty for a call made through `agentTools()`,
   * which has no batch.
   */
  batchId: string;
  sessionKey?: string;
  /** When it began to wait, Unix milliseconds. */
  since: number;
}

/**
 * What a capped call's execute runs in: found again by a nested call. Also
 * what its spread parts take their slots through (`ctx.spread`), so that a
 * capped worker call costs no object more than this one.
 */
export class CapContext implements PartCaps {
  readonly claim: CapClaim;
  readonly caps: BatchCaps;

  constructor(claim: CapClaim, caps: BatchCaps) {
    this.claim = claim;
    this.caps = caps;
  }

  /** One more slot of each of the call's caps, for a spread part: at once or not at all. */
  take(): (() => void) | undefined {
    const { gate } = this.caps.runtime;
    const part = new CapClaim(this.claim.keys, this.claim.caps);
    return gate.enterNow(part) ? () => gate.leave(part) : undefined;
  }
}

/**
 * Set around a capped inline call's execute, so that a nested call finds its
 * parent without any API change. Never entered for a call no cap applies to.
 */
const capContexts = new AsyncLocalStorage<CapContext>();

/**
 * Whether `AsyncLocalStorage` rides on async hooks here (Node 20 and 22;
 * Node 24 and later keep the store in an async context frame instead).
 * While such a storage is in use, every promise of the process, of any
 * runtime, costs more (a hook runs as it is made), so it is switched off
 * once no capped inline call has run for a while: see {@link leaveCapContext}.
 */
const isHookBased = Object.hasOwn(capContexts, "enabled");

/** Capped inline executes running now, in every runtime of the process. */
let openContexts = 0;
/** Whether a capped inline execute began since the last idle check. */
let hasEnteredSinceCheck = false;
/** The idle check's timer, while the storage is in use (hook-based only). */
let idleCheck: NodeJS.Timeout | undefined;
/** How often the idle check looks; the storage goes off within twice this once capped inline calls stop. */
const idleCheckMs = 100;

/** The capped call whose execute is running now, where it belongs to `runtime`. */
export function currentCapContext(runtime: RuntimeCaps): CapContext | undefined {
  const context = capContexts.getStore();
  return context?.caps.runtime === runtime ? context : undefined;
}

/**
 * Runs `execute` as the execute of the call that holds `context.claim`:
 * nested calls it makes are its children. The caller calls
 * {@link leaveCapContext} once, when the execute has settled.
 */
export function enterCapContext<T>(context: CapContext, execute: () => T): T {
  openContexts += 1;
  hasEnteredSinceCheck = true;
  if (isHookBased && idleCheck === undefined) {
    idleCheck = setInterval(checkIdle, idleCheckMs);
    idleCheck.unref();
  }
  return capContexts.run(context, execute);
}

/** A capped inline execute entered with {@link enterCapContext} has settled. */
export function leaveCapContext(): void {
  openContexts -= 1;
}

/**
 * Switches the hook-based storage off once no capped inline call runs or
 * began since the last look: a process whose capped calls have stopped gets
 * its promises' cost back. Not at each call's end: switching the hook off
 * and on again costs ~1 µs (Node 20), a third of a no-op inline call. The
 * next capped call switches it on again (`run` does).
 */
function checkIdle(): void {
  if (openContexts > 0 || hasEnteredSinceCheck) {
    hasEnteredSinceCheck = false;
    return;
  }
  clearInterval(idleCheck);
  idleCheck = undefined;
  capContexts.disable();
}

/** Whether the storage nested calls are found through is switched on now (hook-based Node versions; for tests). */
export function isCapContextStorageOn(): boolean {
  return isHookBased ? (capContexts as unknown as { enabled: boolean }).enabled : true;
}

/**
 * Runs one call made outside any batch (through `Runtime.agentTools()`, a
 * pi `Agent` running the runtime's tools) under the caps that apply to it,
 * as a batch's call runs: it waits for its slots, first come first served
 * (in an ancestor's slot where it is a nested call and a cap is full, if no
 * other descendant runs in that slot now), then
 * `run` gets its context (for an inline execute's nested calls, a worker
 * call's spread parts). `caps` undefined, or no cap that applies: `run` at
 * once, without a context. Admitted at once, the call gives back what `run`
 * returned, itself (pi awaits the tool's own promise, in the turns pi
 * would). Its slots are left once that has settled, or once the runtime is
 * closed by force, which no longer waits for it; a call still waiting then
 * fails with `TP_ERR_CLOSED` when its turn comes, without running.
 */
export function runCapped<T>(
  caps: BatchCaps | undefined,
  toolName: string,
  toolCallId: string,
  run: (context: CapContext | undefined) => T,
  forceStop: ForceStop,
): T | Promise<T> {
  const claim = caps === undefined ? undefined : claimOf(caps, toolName);
  if (claim === undefined) return run(undefined);
  const { gate } = caps!.runtime;
  const entered = gate.enter(claim);
  if (entered === undefined) return runHolding(claim, caps!, run, forceStop);
  claim.wait = { tool: toolName, toolCallId, batchId: "", since: Date.now() } satisfies CapWait;
  return entered.then(() => {
    if (forceStop.isStopped) {
      gate.leave(claim);
      throw new ToolpoolError("TP_ERR_CLOSED", `Tool "${toolName}" was not run: the runtime was closed by force while the call waited for a cap`);
    }
    return runHolding(claim, caps!, run, forceStop);
  });
}

/** `run` in the call's context, its slots held until what it returned settles (or the runtime is closed by force). */
function runHolding<T>(claim: CapClaim, caps: BatchCaps, run: (context: CapContext) => T, forceStop: ForceStop): T {
  const { gate } = caps.runtime;
  let result: T;
  try {
    result = run(new CapContext(claim, caps));
  } catch (error) {
    gate.leave(claim);
    throw error;
  }
  if (!isPromiseLike(result)) {
    gate.leave(claim);
    return result;
  }
  forceStop.whenSettled(result, () => gate.leave(claim));
  return result;
}

/**
 * The claim of one call of `toolName`: a slot of each cap that applies to
 * it; undefined when none does (the call then costs the gate nothing).
 */
export function claimOf(caps: BatchCaps, toolName: string): CapClaim | undefined {
  const { runtime, perBatch, parent } = caps;
  const tool = runtime.tools.get(toolName);
  if (tool === undefined && perBatch === undefined && runtime.perSession === undefined) return undefined;
  const keys: unknown[] = [];
  const limits: number[] = [];
  if (tool !== undefined) {
    keys.push(tool);
    limits.push(tool.cap);
  }
  const { batchKey, session } = caps;
  const perSession = runtime.perSession;
  if (session === batchKey) {
    // The batch is its session: one key, the lower cap.
    if (perBatch !== undefined || perSession !== undefined) {
      keys.push(batchKey);
      limits.push(Math.min(perBatch ?? Number.POSITIVE_INFINITY, perSession ?? Number.POSITIVE_INFINITY));
    }
  } else {
    if (perBatch !== undefined) {
      keys.push(batchKey);
      limits.push(perBatch);
    }
    if (perSession !== undefined) {
      keys.push(session);
      limits.push(perSession);
    }
  }
  return new CapClaim(keys, limits, parent);
}

/** Whether `value` is a thenable (a promise, or what a tool returned in its place): its slots are then held until it settles. */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}
