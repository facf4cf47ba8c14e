import { BroadcastChannel } from "node:worker_threads";

/**
 * The test side of the scripted tools' gates (see fixtures/tools/scripted.mjs):
 * knows which calls wait at a gate and opens them one at a time.
 */
export class GateController {
  readonly #channel = new BroadcastChannel("toolpool-test-gates");
  readonly #waiting = new Set<string>();
  readonly #watchers = new Map<string, () => void>();

  constructor() {
    this.#channel.onmessage = (event) => {
      const key = (event as { data?: { waiting?: string } }).data?.waiting;
      if (key === undefined) return;
      this.#waiting.add(key);
      this.#watchers.get(key)?.();
    };
  }

  /** Resolves once the call holding `key` waits at its gate. */
  whenWaiting(key: string): Promise<void> {
    if (this.#waiting.has(key)) return Promise.resolve();
    return new Promise((resolve) => this.#watchers.set(key, resolve));
  }

  open(key: string): void {
    this.#waiting.delete(key);
    this.#watchers.delete(key);
    this.#channel.postMessage({ open: key });
  }

  /** Forgets everything seen, between two runs of one scenario. */
  reset(): void {
    this.#waiting.clear();
    this.#watchers.clear();
  }

  close(): void {
    this.#channel.close();
  }
}

/** A promise with its resolver outside, to drive concurrency without sleeping. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
