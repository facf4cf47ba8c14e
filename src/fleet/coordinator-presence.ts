import type { Redis } from "ioredis";

import { type Clock, every, type Repeating } from "../clock.js";

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
  #renewal: Repeating | undefined;
  readonly #clock: Clock;

  constructor(key: string, settings: { lockDurationMs: number; stalledIntervalMs: number }, clock: Clock) {
    this.key = key;
    this.#clock = clock;
    this.#ttlMs = settings.lockDurationMs + 2 * settings.stalledIntervalMs;
    this.#renewEveryMs = Math.max(50, Math.floor(settings.lockDurationMs / 3));
  }

  /** Sets the key now and renews it until {@link end}. Resolves once set (rejects if Redis refused). */
  start(commands: Redis): Promise<void> {
    this.#commands = commands;
    this.#renewal ??= every(this.#clock, this.#renewEveryMs, () => void this.renew().catch(() => {}));
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
    this.#renewal?.stop();
    await this.#commands?.multi().del(this.key).publish(cancelChannel, this.key).exec();
  }
}
