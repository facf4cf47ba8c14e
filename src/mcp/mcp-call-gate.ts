/**
 * Admission of MCP tool calls: how many are handed to the runtime at once,
 * how many may wait, and how many one session may have.
 *
 * @module
 */
import { invalidOption, refuseUnknownOptions } from "../option-checks.js";
import { mcpCallGateOptionNames } from "./mcp-option-names.js";
import { integerOption } from "./mcp-options.js";
import { McpRefusal } from "./mcp-refusal.js";

/** Options of {@link McpCallGate}. */
export interface McpCallGateOptions {
  /**
   * Calls that use a thread (worker tools) handed to the runtime at once;
   * the others wait here, sessions taking turns. Set it to the threads the
   * calls can use: the pool's `maxThreads` (plus `fleet.maxOutstanding`
   * with a fleet), so that the pool's own queue stays empty.
   */
  maxRunning: number;
  /**
   * Calls waiting for a thread, all sessions together; a call past it is
   * refused with a JSON-RPC error (`data.code` `TP_ERR_QUEUE_FULL`).
   * @default 1024
   */
  maxQueue?: number;
  /**
   * Calls one session may have waiting or running, inline tools included;
   * a call past it is refused with a JSON-RPC error (`data.code`
   * `TP_ERR_QUEUE_FULL`).
   * @default 128
   */
  maxSessionCalls?: number;
  /** Seconds a refused client is told to wait (`data.retryAfterSeconds`). @default 1 */
  retryAfterSeconds?: number;
}

/** A call's place: it runs now, and must `release` it once it has ended. */
export interface McpCallSlot {
  release(): void;
}

interface Waiter {
  readonly session: string;
  readonly grant: (slot: McpCallSlot | undefined) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

/**
 * Where MCP calls wait for a thread. They wait here rather than in the
 * pool's queue because a call handed to the pool always starts, even once
 * aborted (pi's rule: the tool sees its signal and decides), while a call
 * that waits here and whose client is gone (its signal aborted) leaves
 * without ever starting. Waiting calls get threads with sessions taking
 * turns, one call each, so one session's hundred calls do not hold up
 * another session's one.
 *
 * @example
 * ```ts
 * const gate = new McpCallGate({ maxRunning: runtime.options.pool.maxThreads });
 * const server = createMcpServer(runtime, { callGate: gate });
 * ```
 */
export class McpCallGate {
  readonly #maxRunning: number;
  readonly #maxQueue: number;
  readonly #maxSessionCalls: number;
  readonly #retryAfterSeconds: number;
  #running = 0;
  #waiting = 0;
  /** Calls waiting or running, inline ones included, by session. */
  readonly #sessionCalls = new Map<string, number>();
  /** Waiting calls by session, the sessions in the order of their turns. */
  readonly #turns = new Map<string, Waiter[]>();

  constructor(options: McpCallGateOptions) {
    if (typeof options !== "object" || options === null) throw invalidOption("options", "an object", options);
    refuseUnknownOptions(options, mcpCallGateOptionNames);
    this.#maxRunning = integerOption(options.maxRunning, "maxRunning", 1, undefined);
    this.#maxQueue = integerOption(options.maxQueue, "maxQueue", 0, 1024);
    this.#maxSessionCalls = integerOption(options.maxSessionCalls, "maxSessionCalls", 1, 128);
    this.#retryAfterSeconds = integerOption(options.retryAfterSeconds, "retryAfterSeconds", 0, 1);
  }

  /** Calls handed on now that use a thread. */
  get running(): number {
    return this.#running;
  }

  /** Calls waiting for a thread. */
  get waiting(): number {
    return this.#waiting;
  }

  /**
   * A place for one call of `session`: at once for a call that uses no
   * thread (`usesThread` false) or while a thread is free, else once its
   * turn comes. Resolves `undefined` if `signal` aborts first: the call
   * never starts. Throws an {@link McpRefusal} when the session has
   * `maxSessionCalls` calls, or `maxQueue` calls already wait.
   */
  async acquire(session: string, signal: AbortSignal, usesThread: boolean): Promise<McpCallSlot | undefined> {
    if (signal.aborted) return undefined;
    const calls = this.#sessionCalls.get(session) ?? 0;
    if (calls >= this.#maxSessionCalls) {
      throw this.#refusal(
        `This MCP session already has ${calls} calls waiting or running, the most one session may have (maxSessionCalls ${this.#maxSessionCalls}); wait for some to end`,
      );
    }
    if (!usesThread) return this.#admit(session, false);
    if (this.#running < this.#maxRunning && this.#waiting === 0) return this.#admit(session, true);
    if (this.#waiting >= this.#maxQueue) {
      throw this.#refusal(`The call queue is full (maxQueue ${this.#maxQueue} calls waiting for a thread); retry later`);
    }
    this.#sessionCalls.set(session, calls + 1);
    this.#waiting += 1;
    return new Promise<McpCallSlot | undefined>((resolve) => {
      const waiter: Waiter = {
        session,
        grant: resolve,
        signal,
        onAbort: () => {
          this.#leave(waiter);
          resolve(undefined);
        },
      };
      signal.addEventListener("abort", waiter.onAbort, { once: true });
      const line = this.#turns.get(session);
      if (line === undefined) this.#turns.set(session, [waiter]);
      else line.push(waiter);
    });
  }

  #admit(session: string, usesThread: boolean): McpCallSlot {
    this.#sessionCalls.set(session, (this.#sessionCalls.get(session) ?? 0) + 1);
    if (usesThread) this.#running += 1;
    return this.#slot(session, usesThread);
  }

  #slot(session: string, usesThread: boolean): McpCallSlot {
    let isReleased = false;
    return {
      release: () => {
        if (isReleased) return;
        isReleased = true;
        this.#forget(session);
        if (usesThread) {
          this.#running -= 1;
          this.#grantNext();
        }
      },
    };
  }

  /** Hands the free thread to the session whose turn it is. */
  #grantNext(): void {
    const next = this.#turns.entries().next();
    if (next.done === true) return;
    const [session, line] = next.value;
    const waiter = line.shift()!;
    // Its turn is used: it goes to the back of the line of sessions.
    this.#turns.delete(session);
    if (line.length > 0) this.#turns.set(session, line);
    this.#waiting -= 1;
    waiter.signal.removeEventListener("abort", waiter.onAbort);
    this.#running += 1;
    waiter.grant(this.#slot(session, true));
  }

  #leave(waiter: Waiter): void {
    const line = this.#turns.get(waiter.session);
    const index = line?.indexOf(waiter) ?? -1;
    if (index < 0) return;
    line!.splice(index, 1);
    if (line!.length === 0) this.#turns.delete(waiter.session);
    this.#waiting -= 1;
    this.#forget(waiter.session);
  }

  #forget(session: string): void {
    const calls = (this.#sessionCalls.get(session) ?? 1) - 1;
    if (calls === 0) this.#sessionCalls.delete(session);
    else this.#sessionCalls.set(session, calls);
  }

  #refusal(message: string): McpRefusal {
    return new McpRefusal("TP_ERR_QUEUE_FULL", message, { retryAfterSeconds: this.#retryAfterSeconds });
  }
}
