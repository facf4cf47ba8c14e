/**
 * The seam between the worker pool and its threads: the pool keeps the
 * calls, their queue and timers; a host keeps the threads. Types only;
 * `piscina-host.ts` is the host over Piscina, the unit tests drive a fake.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import type { PoolDiagnosis } from "../contracts/pool-contract.js";
import type { ThreadMessage, WorkerReply, WorkerTask } from "./protocol.js";

/** What a host tells its pool, on the main thread, never from inside a host method. */
export interface ThreadHostEvents<Token> {
  /** Thread `threadId` may take a task. */
  ready(threadId: number): void;
  /** Thread `threadId` may take a task before its `replied` comes; a host may never say it (the Piscina host does not). */
  freed(threadId: number): void;
  /** The task posted with `token` replied; its thread may take another (unless `freed` said so first). */
  replied(token: Token, reply: WorkerReply): void;
  /** The task posted with `token` failed with `error`: its thread is gone. */
  failed(token: Token, threadId: number, error: unknown): void;
  /** Thread `threadId` is gone, idle or not. */
  lost(threadId: number): void;
  /** A thread's message besides its replies and boot message. */
  message(message: unknown): void;
  /** A thread's error outside any task. */
  error(error: unknown): void;
  /** Threads fail to start: the pool calls `restart` when it wants threads again, or ends the calls waiting. */
  stalled(): void;
}

/** What the pool asks of the threads under it. */
export interface ThreadHost<Token> {
  /**
   * Posts `task` to thread `threadId`, which the pool knows idle; `false`,
   * posting nothing, if the thread is going away. The outcome comes as
   * `replied` or `failed` with `token`.
   */
  post(threadId: number, task: WorkerTask, token: Token): boolean;
  /** Sends `message` to the call thread `threadId` runs, on its own port; nothing if the thread is gone. */
  send(threadId: number, message: ThreadMessage): void;
  /** Starts one more thread if below the maximum. */
  grow(): void;
  /** Terminates thread `threadId` (its task then `failed`); a thread already gone is ignored. */
  terminate(threadId: number): void;
  /** Starts a fresh set of threads after `stalled`. */
  restart(): void;
  /** Threads lost in a row before they finished starting. */
  readonly bootFailures: number;
  resetBootFailures(): void;
  readonly threadCount: number;
  /** The live threads, for supervision (and tests that kill one from outside). */
  readonly workers: Worker[];
  describe(): Pick<PoolDiagnosis, "generations" | "generationsStarted" | "bootFailures">;
  /** Terminates every thread. */
  destroy(): Promise<void>;
}
