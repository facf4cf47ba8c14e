/**
 * When a worker call waited and ran: what every pool reports with an
 * outcome, and what the coordinator and the tracing read. Types only.
 *
 * @module
 */
/**
 * When a worker call waited and ran, on the pool's clock (milliseconds).
 * `startedAt` and `threadId` are absent for a call that never reached a
 * thread; `node` is set by a pool whose calls run on another machine.
 */
export interface CallTiming {
  /** When the call was handed to the pool. */
  submittedAt: number;
  /** When a thread was picked for it: the end of its queue wait. */
  startedAt?: number;
  /** When its outcome was known. */
  endedAt: number;
  /** The thread that ran it. */
  threadId?: number;
  /** The node that ran it, for a pool of several machines. */
  node?: string;
  /**
   * How long the tool's execute took, timed where it ran: `endedAt - startedAt`
   * also holds the trips of its arguments and result between threads, and
   * the main thread's own work meanwhile (such as sending the next call).
   */
  runMs?: number;
}
