/**
 * The serial mailbox of the coordinator actor: jobs run one at a time, in the
 * order they were posted, each after the previous one settled.
 *
 * A job that throws rejects only its own promise; the mailbox goes on with the
 * next job, so a throwing hook can never wedge the actor. Jobs always start
 * asynchronously (never inside `post`), so a hook never runs "sometimes
 * synchronously" depending on whether the mailbox was idle.
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

  readonly #settle = (): void => {
    this.#pending -= 1;
  };
}
