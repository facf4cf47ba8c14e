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
  /** Its batch's id, as the batch's events carry it (a call of `runToolCall` has one of its own). */
  batchId: string;
  sessionKey?: string;
  /** When it began to wait, Unix milliseconds. */
  since: number;
}

/** What a capped call's execute runs in: found again by a nested call. */
export interface CapContext {
  readonly claim: CapClaim;
  readonly caps: BatchCaps;
}

/**
 * Set around a capped inline call's execute, so that a nested call finds its
 * parent without any API change. Never entered for a call no cap applies to:
 * on Node 20 an `AsyncLocalStorage` in use makes every promise cost more.
 */
const capContexts = new AsyncLocalStorage<CapContext>();

/** The capped call whose execute is running now, where it belongs to `runtime`. */
export function currentCapContext(runtime: RuntimeCaps): CapContext | undefined {
  const context = capContexts.getStore();
  return context?.caps.runtime === runtime ? context : undefined;
}

/** Runs `execute` as the execute of the call that holds `claim`: nested calls it makes are its children. */
export function runInCapContext<T>(context: CapContext, execute: () => T): T {
  return capContexts.run(context, execute);
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
