import type { Redis } from "ioredis";

import { type Clock, every, type Repeating } from "../clock.js";

/**
 * A coordinator's sign of life in Redis, twice over. Every job carries its
 * name; a node starts no call whose coordinator shows no sign of life, and
 * stops a running one, so that no call runs for nobody.
 *
 * - A connection of its own subscribed to a channel of that name. Redis
 *   drops a connection the moment its process dies (SIGKILL, crash, out of
 *   memory: the kernel closes the socket), so `PUBSUB NUMSUB` of the channel
 *   falls to 0 at once; a node asks it in the round trip that reads the
 *   call's keys, so the check costs no extra round trip.
 * - A key that expires unless renewed, for what no socket tells: a
 *   coordinator cut off from Redis by a partition keeps its connections
 *   open in Redis's eyes until TCP gives up. The key lives
 *   `lockDurationMs + 2 × stalledIntervalMs`, the same bound a coordinator
 *   gives a node before it reports the node lost, and is renewed three times
 *   per lock duration.
 *
 * The channel decides whether a call *starts*: while the subscribed
 * connection is down and reconnecting (ioredis subscribes again once it is
 * back), a node starts none of the coordinator's calls, for Redis cannot
 * tell a coordinator it cannot reach from a dead one. A *running* call is
 * stopped only once the key is gone (or the coordinator's close announced
 * it), so that a coordinator's brief disconnection does not cost the calls
 * it is waiting for.
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

  /**
   * Subscribes `subscriber` (a connection used for nothing else) to the
   * presence channel, sets the key and renews it until {@link end}.
   * Resolves once both hold (rejects if Redis refused).
   */
  async start(commands: Redis, subscriber: Redis): Promise<void> {
    this.#commands = commands;
    this.#renewal ??= every(this.#clock, this.#renewEveryMs, () => void this.renew().catch(() => {}));
    await Promise.all([subscriber.subscribe(this.key), this.renew()]);
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
