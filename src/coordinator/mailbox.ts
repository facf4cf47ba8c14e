/**
 * The serial mailbox of the coordinator actor: jobs run one at a time, in the
 * order they were posted, each after the previous one settled.
 *
 * A job that throws rejects only its own promise; the mailbox goes on with the
 * next job, so a throwing hook can never wedge the actor. Jobs posted with
 * `post` always start asynchronously (never inside `post`), so a hook never
 * runs "sometimes synchronously" depending on whether the mailbox was idle;
 * `runOrPost` is for the one job pi runs synchronously where it is asked
 * for (an update event, inside the tool's `onUpdate`).
 */
export class Mailbox {
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;

  /** How many jobs are queued or running. */
  get size(): number {
    return this.#pending;
  }

  /**
   * Queue `job`; resolves or rejects with its outcome once it has run.
   * A job must not post to the same mailbox and await that post: it would wait for itself.
   */
  post<T>(job: () => T | PromiseLike<T>): Promise<T> {
    this.#pending += 1;
    const run = this.#tail.then(job);
    this.#tail = run.then(this.#settle, this.#settle);
    return run;
  }

  /**
   * Runs `job` now, inside this call, when no job is queued or running (the
   * mailbox then stays busy until what it returned settles); otherwise
   * queues it as `post` does. Returns the job's promise, or `undefined` when
   * it ran now and returned no object (nothing to wait for). A job run now
   * that throws throws here, to the caller, as pi's event sink throws into
   * the tool's `onUpdate`.
   */
  runOrPost(job: () => unknown): Promise<unknown> | undefined {
    if (this.#pending > 0) return this.post(job);
    const outcome = job();
    if (outcome === null || (typeof outcome !== "object" && typeof outcome !== "function")) return undefined;
    // Whatever its `then` does (a getter that throws included) settles this promise, as in pi's `Promise.resolve`.
    const run = Promise.resolve(outcome);
    this.#pending += 1;
    this.#tail = run.then(this.#settle, this.#settle);
    return run;
  }

  readonly #settle = (): void => {
    this.#pending -= 1;
  };
}
