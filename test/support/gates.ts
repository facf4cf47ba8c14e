import { BroadcastChannel } from "node:worker_threads";

import { Redis } from "ioredis";

/**
 * The test side of the scripted tools' gates (see fixtures/tools/scripted.mjs):
 * knows which calls wait at a gate and opens them one at a time.
 */
export class GateController {
  readonly #channel = new BroadcastChannel("toolpool-test-gates");
  readonly #waiting = new Set<string>();
  readonly #watchers = new Map<string, () => void>();
  /** With a Redis URL, gates of tools running in fleet nodes too (see fixtures/tools/scripted.mjs). */
  readonly #redis: { publisher: Redis; subscriber: Redis; ready: Promise<unknown> } | undefined;

  constructor(redisUrl?: string) {
    const onWaiting = (data: { waiting?: string } | undefined) => {
      const key = data?.waiting;
      if (key === undefined) return;
      this.#waiting.add(key);
      this.#watchers.get(key)?.();
    };
    this.#channel.onmessage = (event) => onWaiting((event as { data?: { waiting?: string } }).data);
    if (redisUrl !== undefined) {
      const publisher = new Redis(redisUrl);
      const subscriber = new Redis(redisUrl);
      subscriber.on("message", (_name: string, text: string) => onWaiting(JSON.parse(text) as { waiting?: string }));
      this.#redis = { publisher, subscriber, ready: subscriber.subscribe("toolpool-test-gates:waiting") };
    }
  }

  /** Resolves once the Redis side listens (at once without Redis). */
  async ready(): Promise<void> {
    await this.#redis?.ready;
  }

  /** Resolves once the call holding `key` waits at its gate. */
  whenWaiting(key: string): Promise<void> {
    if (this.#waiting.has(key)) return Promise.resolve();
    return new Promise((resolve) => this.#watchers.set(key, resolve));
  }

  /** Whether the call holding `key` waits at its gate now (seen waiting, not opened since). */
  isWaiting(key: string): boolean {
    return this.#waiting.has(key);
  }

  open(key: string): void {
    this.#waiting.delete(key);
    this.#watchers.delete(key);
    this.#channel.postMessage({ open: key });
    void this.#redis?.publisher.publish("toolpool-test-gates:open", JSON.stringify({ open: key }));
  }

  /** Forgets everything seen, between two runs of one scenario. */
  reset(): void {
    this.#waiting.clear();
    this.#watchers.clear();
  }

  close(): void {
    this.#channel.close();
    this.#redis?.publisher.disconnect();
    this.#redis?.subscriber.disconnect();
  }
}

/** A promise with its resolver outside, to drive concurrency without sleeping. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
