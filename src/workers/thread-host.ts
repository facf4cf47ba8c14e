/**
 * The seam between the pool (calls, queue, timers) and its threads; tests
 * drive a fake host.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";

import type { PoolDiagnosis } from "../contracts/pool-contract.js";
import type { ThreadMessage, WorkerReply, WorkerTask } from "./protocol.js";

/** Delivered on the main thread, never from inside a host method (but `take`, which `stage` may ask at once). */
export interface ThreadHostEvents<Token> {
  ready(threadId: number): void;
  /**
   * Thread `threadId` is free before its last reply is read: the next
   * waiting call to run there, now, or none (a host that stages calls asks).
   */
  take(threadId: number): { task: WorkerTask; token: Token } | undefined;
  replied(token: Token, reply: WorkerReply): void;
  /** The thread is gone. */
  failed(token: Token, threadId: number, error: unknown): void;
  lost(threadId: number): void;
  message(message: unknown): void;
  error(error: unknown): void;
  /** Threads fail to start: the pool calls `restart` or ends the waiting calls. */
  stalled(): void;
}

export interface ThreadHost<Token> {
  /** `false`, posting nothing, if the thread is going away. */
  post(threadId: number, task: WorkerTask, token: Token): boolean;
  /** Keeps `count` placeholders for waiting calls, each bound through `take` by the next thread to free up; optional. */
  stage?(count: number): void;
  send(threadId: number, message: ThreadMessage): void;
  grow(): void;
  terminate(threadId: number): void;
  restart(): void;
  /** Threads lost in a row before they finished starting. */
  readonly bootFailures: number;
  resetBootFailures(): void;
  readonly threadCount: number;
  readonly workers: Worker[];
  describe(): Pick<PoolDiagnosis, "generations" | "generationsStarted" | "bootFailures">;
  destroy(): Promise<void>;
}
