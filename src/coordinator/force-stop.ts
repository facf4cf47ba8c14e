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

  /** Stops every call waiting, and every later one at once. */
  stop(): void {
    if (this.#isStopped) return;
    this.#isStopped = true;
    for (const onStop of this.#waiting) onStop();
    this.#waiting.clear();
  }
}
