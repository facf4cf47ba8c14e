import type { Redis } from "ioredis";

/**
 * A coordinator's sign of life in Redis: a key that expires unless renewed.
 * Every job carries the key's name; a node starts no call whose coordinator's
 * key is gone (the coordinator died, or closed), and stops a running one, so
 * that no call runs for nobody.
 *
 * The key lives `lockDurationMs + 2 × stalledIntervalMs`, the same bound a
 * coordinator gives a node before it reports the node lost, and is renewed
 * three times per lock duration.
 */
export class CoordinatorPresence {
  readonly key: string;
  readonly #ttlMs: number;
  readonly #renewEveryMs: number;
  #commands: Redis | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(key: string, settings: { lockDurationMs: number; stalledIntervalMs: number }) {
    this.key = key;
    this.#ttlMs = settings.lockDurationMs + 2 * settings.stalledIntervalMs;
    this.#renewEveryMs = Math.max(50, Math.floor(settings.lockDurationMs / 3));
  }

  /** Sets the key now and renews it until {@link end}. Resolves once set (rejects if Redis refused). */
  start(commands: Redis): Promise<void> {
    this.#commands = commands;
    this.#timer ??= setInterval(() => void this.renew().catch(() => {}), this.#renewEveryMs);
    this.#timer.unref();
    return this.renew();
  }

  /** Sets the key again (also at once after a reconnection: a restarted Redis has lost it). */
  async renew(): Promise<void> {
    await this.#commands?.set(this.key, "1", "PX", this.#ttlMs);
  }

  /**
   * The coordinator leaves: the key goes, and `cancelChannel` tells nodes to
   * stop the calls of this coordinator that still run.
   */
  async end(cancelChannel: string): Promise<void> {
    clearInterval(this.#timer);
    await this.#commands?.multi().del(this.key).publish(cancelChannel, this.key).exec();
  }
}
