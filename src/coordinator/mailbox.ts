/**
 * The coordinator actor's serial mailbox. A job that throws rejects only its
 * own promise; `post` never runs a job inside the call.
 */
export class Mailbox {
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;

  get size(): number {
    return this.#pending;
  }

  /** A job must not post to its own mailbox and await that: it would wait for itself. */
  post<T>(job: () => T | PromiseLike<T>): Promise<T> {
    this.#pending += 1;
    const run = this.#tail.then(job);
    this.#tail = run.then(this.#settle, this.#settle);
    return run;
  }

  /**
   * For the one job pi runs synchronously (an update event, inside the tool's
   * `onUpdate`): now when the mailbox is idle, its throw thrown to the caller
   * as pi's sink throws into `onUpdate`; else posted. `undefined` when it ran
   * now and returned nothing to wait for.
   */
  runOrPost(job: () => unknown): Promise<unknown> | undefined {
    if (this.#pending > 0) return this.post(job);
    const outcome = job();
    if (outcome === null || (typeof outcome !== "object" && typeof outcome !== "function")) return undefined;
    const run = Promise.resolve(outcome);
    this.#pending += 1;
    this.#tail = run.then(this.#settle, this.#settle);
    return run;
  }

  /** Runs `job` now when the mailbox is idle (as pi runs a stage inside the call that starts it), else posts it. */
  runNowOrPost<T>(job: () => Promise<T>): Promise<T> {
    if (this.#pending > 0) return this.post(job);
    this.#pending += 1;
    let run: Promise<T>;
    try {
      run = job();
    } catch (error) {
      run = Promise.reject(error);
    }
    this.#tail = run.then(this.#settle, this.#settle);
    return run;
  }

  readonly #settle = (): void => {
    this.#pending -= 1;
  };
}
