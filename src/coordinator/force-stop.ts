/**
 * `ForceStop`: how a runtime closed by force tells its running inline calls
 * to stop being awaited.
 *
 * @module
 */

/**
 * Stopped once, when the runtime is closed by force; until then, every
 * inline call under way waits on it. An `AbortSignal` would do the same, but
 * adding and removing an event listener for every call costs more than the
 * whole rest of a no-op call's way through the pipeline; a `Set` does not.
 */
export class ForceStop {
  #isStopped = false;
  readonly #waiting = new Set<() => void>();

  get isStopped(): boolean {
    return this.#isStopped;
  }

  /** Settles like `execution`, or with `stopped` once the runtime is stopped by force (at once if it is already). */
  race<T, S>(execution: Promise<T>, stopped: S): Promise<T | S> {
    if (this.#isStopped) return Promise.resolve(stopped);
    return new Promise((resolve, reject) => {
      const onStop = (): void => resolve(stopped);
      this.#waiting.add(onStop);
      execution.then(
        (value) => {
          this.#waiting.delete(onStop);
          resolve(value);
        },
        (error: unknown) => {
          this.#waiting.delete(onStop);
          reject(error);
        },
      );
    });
  }

  /**
   * Calls `callback` once: a turn after `value` settles (a value that is no
   * promise counts as settled), or when the runtime is stopped by force,
   * whichever comes first (a turn from now, if it is stopped already). What
   * a call holds (a cap's slots, its count for `close()`) is given back
   * then, as a runtime closed by force no longer waits for the call.
   */
  whenSettled(value: unknown, callback: () => void): void {
    if (this.#isStopped) {
      void Promise.resolve().then(callback);
      return;
    }
    const done = (): void => {
      if (!this.#waiting.delete(done)) return;
      callback();
    };
    this.#waiting.add(done);
    Promise.resolve(value).then(done, done);
  }

  /** Stops every call waiting, and every later one at once. */
  stop(): void {
    if (this.#isStopped) return;
    this.#isStopped = true;
    for (const onStop of this.#waiting) onStop();
    this.#waiting.clear();
  }
}
