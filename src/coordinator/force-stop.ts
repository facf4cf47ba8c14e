/**
 * How a runtime closed by force stops awaiting its running calls. Not an
 * `AbortSignal`: a listener added and removed per call costs more than the
 * rest of a no-op call's way through the pipeline.
 *
 * @module
 */

/** Stopped once, when the runtime is closed by force. */
export class ForceStop {
  #isStopped = false;
  readonly #waiting = new Set<() => void>();

  get isStopped(): boolean {
    return this.#isStopped;
  }

  /** Settles like `execution`, or with `stopped` once the runtime is stopped by force. */
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

  /** Calls `callback` once, when `value` settles or the runtime is stopped by force: what a call holds goes back then. */
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

  stop(): void {
    if (this.#isStopped) return;
    this.#isStopped = true;
    for (const onStop of this.#waiting) onStop();
    this.#waiting.clear();
  }
}
