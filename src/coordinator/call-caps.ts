/**
 * The caps of a call's execute stage (its tool's, batch's and session's, in
 * one {@link CapGate} per runtime) and the parent of a nested call.
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

/** A runtime's caps. */
export interface RuntimeCaps {
  readonly gate: CapGate;
  readonly tools: ReadonlyMap<string, ToolCap>;
  readonly perSession: number | undefined;
}

/** The caps one batch's calls count against. */
export interface BatchCaps {
  readonly runtime: RuntimeCaps;
  /** The batch's key in the gate: a nested call's batch counts against its parent's. */
  readonly batchKey: CapKey;
  readonly perBatch: number | undefined;
  /** The session's key in the gate (a nested call's is its parent's unless it names one); `batchKey` for a batch without a `sessionKey`. */
  readonly session: unknown;
  readonly poolSession: unknown;
  /** The claim of the call whose execute made this (nested) batch. */
  readonly parent: CapClaim | undefined;
}

/** A call waiting for a cap, as `Runtime.capWaits()` lists it. */
export interface CapWait {
  tool: string;
  toolCallId: string;
  /** Its batch's id as its events carry it; empty for a call made through `agentTools()`. */
  batchId: string;
  sessionKey?: string;
  /** Unix milliseconds. */
  since: number;
}

/** What a capped call's execute runs in, found by a nested call; its spread parts take their slots through it. */
export class CapContext implements PartCaps {
  readonly claim: CapClaim;
  readonly caps: BatchCaps;

  constructor(claim: CapClaim, caps: BatchCaps) {
    this.claim = claim;
    this.caps = caps;
  }

  take(): (() => void) | undefined {
    const { gate } = this.caps.runtime;
    const part = new CapClaim(this.claim.keys, this.claim.caps);
    return gate.enterNow(part) ? () => gate.leave(part) : undefined;
  }
}

const capContexts = new AsyncLocalStorage<CapContext>();

/** Node 20 and 22: while a hook-based storage is on, every promise of the process pays for it; so it goes off when idle. */
const isHookBased = Object.hasOwn(capContexts, "enabled");

let openContexts = 0;
let hasEnteredSinceCheck = false;
let idleCheck: NodeJS.Timeout | undefined;
const idleCheckMs = 100;

/** The capped call of `runtime` whose execute runs now. */
export function currentCapContext(runtime: RuntimeCaps): CapContext | undefined {
  const context = capContexts.getStore();
  return context?.caps.runtime === runtime ? context : undefined;
}

/** Runs `execute` as the call holding `context.claim` (its nested calls are its children); {@link leaveCapContext} once it settled. */
export function enterCapContext<T>(context: CapContext, execute: () => T): T {
  openContexts += 1;
  hasEnteredSinceCheck = true;
  if (isHookBased && idleCheck === undefined) {
    idleCheck = setInterval(checkIdle, idleCheckMs);
    idleCheck.unref();
  }
  return capContexts.run(context, execute);
}

export function leaveCapContext(): void {
  openContexts -= 1;
}

/** Not at each call's end: switching the hook off and on again costs more than a no-op inline call saves. */
function checkIdle(): void {
  if (openContexts > 0 || hasEnteredSinceCheck) {
    hasEnteredSinceCheck = false;
    return;
  }
  clearInterval(idleCheck);
  idleCheck = undefined;
  capContexts.disable();
}

/** Whether the storage is on now (for tests). */
export function isCapContextStorageOn(): boolean {
  return isHookBased ? (capContexts as unknown as { enabled: boolean }).enabled : true;
}

/**
 * Runs a call made outside any batch (`Runtime.agentTools()`) under its caps,
 * as a batch's call runs. Admitted at once, it gives back what `run`
 * returned, itself (pi awaits the tool's own promise, in pi's turns). Closed
 * by force, the runtime frees its slots; a call still waiting then fails
 * with `TP_ERR_CLOSED` without running.
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

/** A slot of each cap that applies to a call of `toolName`; undefined where none does. */
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

/** Whether `value` is a thenable (what a tool returned may be one without being a promise). */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}
