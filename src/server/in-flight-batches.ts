/** The batches a server is answering, and what may end them early: the client leaving, the deadline, a shutdown. */
import type { ServerResponse } from "node:http";

import type { Clock } from "../clock.js";
import { createDeferred } from "../deferred.js";

interface TrackedBatch {
  /** Hand it to `executeToolCalls`: it aborts the batch for any of the reasons above. */
  readonly signal: AbortSignal;
  /** The outcome is known: a later disconnect or deadline no longer aborts it; tracked until its response closes (the last bytes). */
  settle(): void;
}

interface Entry {
  readonly controller: AbortController;
  readonly response: ServerResponse;
  isSettled: boolean;
}

/** Time comes from the runtime's clock, so that tests drive deadlines without sleeping. */
export class InFlightBatches {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #destroyGraceMs: number;
  readonly #entries = new Set<Entry>();
  readonly #idleWaiters: (() => void)[] = [];

  /** @param destroyGraceMs Past the deadline, until the socket is destroyed: a client that stops reading would block writes forever. */
  constructor(clock: Clock, timeoutMs: number, destroyGraceMs: number) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
    this.#destroyGraceMs = destroyGraceMs;
  }

  get size(): number {
    return this.#entries.size;
  }

  track(response: ServerResponse): TrackedBatch {
    const entry: Entry = { controller: new AbortController(), response, isSettled: false };
    this.#entries.add(entry);
    const abort = (reason: DOMException): void => {
      if (!entry.isSettled) entry.controller.abort(reason);
    };
    let destroyTimer: unknown;
    const timer = this.#clock.setTimeout(() => {
      abort(new DOMException(`The request ran past its ${this.#timeoutMs} ms deadline`, "TimeoutError"));
      destroyTimer = this.#clock.setTimeout(() => {
        if (!response.writableFinished) response.destroy();
      }, this.#destroyGraceMs);
    }, this.#timeoutMs);
    const settled = createDeferred();
    // `close` comes when the response is done and when the client leaves first; only the second finds the batch unsettled.
    const closed = new Promise<void>((resolve) => {
      response.once("close", () => {
        abort(new DOMException("The client disconnected", "AbortError"));
        if (destroyTimer !== undefined) this.#clock.clearTimeout(destroyTimer);
        resolve();
      });
      if (response.destroyed) {
        abort(new DOMException("The client disconnected", "AbortError"));
        resolve();
      }
    });
    void Promise.all([settled.promise, closed]).then(() => {
      this.#entries.delete(entry);
      if (this.#entries.size === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    });
    return {
      signal: entry.controller.signal,
      settle: () => {
        if (entry.isSettled) return;
        entry.isSettled = true;
        this.#clock.clearTimeout(timer);
        settled.resolve();
      },
    };
  }

  /** Aborts every batch still running; each still ends with its results. */
  abortAll(reason: unknown): void {
    for (const entry of this.#entries) if (!entry.isSettled) entry.controller.abort(reason);
  }

  /** Destroys every tracked batch's response (and socket): the last step of a shutdown whose grace ran out. */
  destroyAll(): void {
    for (const entry of this.#entries) entry.response.destroy();
  }

  whenIdle(): Promise<void> {
    if (this.#entries.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}
