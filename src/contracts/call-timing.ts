/** When a worker call waited and ran, on the pool's clock (ms); `startedAt` and `threadId` absent if it never reached a thread. */
export interface CallTiming {
  submittedAt: number;
  /** The end of its queue wait. */
  startedAt?: number;
  endedAt: number;
  threadId?: number;
  /** Set by a pool whose calls run on another machine. */
  node?: string;
  /** Timed where it ran: `endedAt - startedAt` also holds the trips between threads. */
  runMs?: number;
}
