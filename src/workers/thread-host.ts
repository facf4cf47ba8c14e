/**
 * The seam between the worker pool and the threads under it: what the pool
 * asks of a thread host (post a task to a thread, start one more thread,
 * terminate a thread) and what a host tells the pool (a thread is ready, a
 * thread is lost, a message came), and the one way the pool speaks to the
 * call a thread runs (`send`, on the thread's own port). Types only.
 *
 * The pool keeps the calls, their queue and their timers; a host keeps the
 * threads. `piscina-host.ts` is the host over Piscina, and the only module
 * that knows Piscina; the pool's unit tests drive a fake one.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import type { PoolDiagnosis } from "../contracts/pool-contract.js";
import type { ThreadMessage, WorkerReply, WorkerTask } from "./protocol.js";

/** What a host tells its pool. Each is called on the main thread, never from inside a host method. */
export interface ThreadHostEvents<Token> {
  /** Thread `threadId` may take a task: it has just started, or replaced a lost one. */
  ready(threadId: number): void;
  /**
   * Thread `threadId` finished its task and may take another, before the
   * task's `replied` comes. A host may skip it (the Piscina host does):
   * `replied` then frees the thread.
   */
  freed(threadId: number): void;
  /** The task posted with `token` ended with a reply; its thread may take another task (if `freed` did not say so first). */
  replied(token: Token, reply: WorkerReply): void;
  /**
   * The task posted with `token` failed: its thread crashed, exited or was
   * terminated (`error` is what the thread ended with). The thread is gone.
   */
  failed(token: Token, threadId: number, error: unknown): void;
  /** Thread `threadId` is gone, whether idle or running a task. */
  lost(threadId: number): void;
  /** A message a thread posted besides its replies and its boot message. */
  message(message: unknown): void;
  /** An error a thread reported outside any task. */
  error(error: unknown): void;
  /**
   * The host can no longer keep its threads up by itself (threads failed to
   * start): the pool calls {@link ThreadHost.restart} when it wants threads
   * again, or ends the calls waiting for one.
   */
  stalled(): void;
}

/** What the pool asks of the threads under it. */
export interface ThreadHost<Token> {
  /**
   * Posts `task` to thread `threadId`, which the pool knows idle (a `ready`
   * event or a `replied` one and nothing posted since). Returns `false`, and
   * posts nothing, if the thread can no longer take it (it is going away);
   * the pool then forgets that thread. The outcome comes as `replied` or
   * `failed` with `token`.
   */
  post(threadId: number, task: WorkerTask, token: Token): boolean;
  /** Sends `message` on thread `threadId`'s own port, to the call it runs; nothing if the thread is gone. */
  send(threadId: number, message: ThreadMessage): void;
  /** Starts one more thread if the host is below its maximum; it says `ready` once the thread may take a task. */
  grow(): void;
  /** Terminates thread `threadId` (the task it runs, if any, then `failed`); a thread already gone is ignored. */
  terminate(threadId: number): void;
  /** Starts a fresh set of threads after `stalled`. */
  restart(): void;
  /** Threads lost in a row before they finished starting, since the last that did (or the last {@link resetBootFailures}). */
  readonly bootFailures: number;
  /** Forgets the failed starts counted so far, once the pool ended the calls they stranded. */
  resetBootFailures(): void;
  /** Threads alive. */
  readonly threadCount: number;
  /** The live threads, for supervision (and tests that kill one from outside). */
  readonly workers: Worker[];
  /** The host's threads, for {@link PoolDiagnosis}. */
  describe(): Pick<PoolDiagnosis, "generations" | "generationsStarted" | "bootFailures">;
  /** Terminates every thread. */
  destroy(): Promise<void>;
}
