import type { Redis } from "ioredis";

import { type Clock, every, type Repeating } from "../clock.js";

/**
 * A coordinator's sign of life, named in every job: a node starts no call, and stops running ones, of a coordinator
 * without one, so that no call runs for nobody. Two signs:
 * - A subscribed channel: Redis drops the connection the moment the process dies, so `PUBSUB NUMSUB` falls to 0 at once
 *   (asked in the round trip that reads the call's keys).
 * - A key renewed until it expires (`lockDurationMs + 2 × stalledIntervalMs`, the bound a node gets before it is
 *   reported lost), for a partition no socket tells of.
 * The channel decides whether a call starts (Redis cannot tell an unreachable coordinator from a dead one); a running
 * call stops only once the key is gone, so a brief disconnection does not cost the calls it waits for.
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

  /** Subscribes `subscriber` (used for nothing else), sets the key and renews it until {@link end}. */
  async start(commands: Redis, subscriber: Redis): Promise<void> {
    this.#commands = commands;
    this.#renewal ??= every(this.#clock, this.#renewEveryMs, () => void this.renew().catch(() => {}));
    await Promise.all([subscriber.subscribe(this.key), this.renew()]);
  }

  /** Also at once after a reconnection: a restarted Redis has lost it. */
  async renew(): Promise<void> {
    await this.#commands?.set(this.key, "1", "PX", this.#ttlMs);
  }

  /** Deletes the key; `cancelChannel` tells nodes to stop this coordinator's calls that still run. */
  async end(cancelChannel: string): Promise<void> {
    this.#renewal?.stop();
    await this.#commands?.multi().del(this.key).publish(cancelChannel, this.key).exec();
  }
}
