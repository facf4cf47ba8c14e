import type { Redis } from "ioredis";

/** How long an abort key lives in Redis; an announcement still pending after this long is dropped. */
const abortKeyTtlMs = 600_000;

interface Announcement {
  readonly key: string;
  readonly since: number;
  readonly onAnnounced: () => void;
  isSending: boolean;
}

/**
 * Announces batch aborts to the fleet: sets the abort key (read by a node
 * when it fetches a call) and publishes it (for calls running now). An
 * announcement Redis did not take (it was down, or the connection was being
 * made anew) stays pending and is sent again by {@link retry}, which the
 * coordinator calls when Redis is back and on every watch pass: an abort is
 * never lost to a brief outage. Pending announcements are at most one per
 * aborted batch, and dropped once their key would have expired.
 */
export class AbortAnnouncer {
  readonly #cancelChannel: string;
  readonly #pending = new Map<string, Announcement>();
  #commands: Redis | undefined;
  readonly #now: () => number;

  /** @param now The coordinator's clock. */
  constructor(cancelChannel: string, now: () => number) {
    this.#cancelChannel = cancelChannel;
    this.#now = now;
  }

  /** Announcements Redis has not taken yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /** The connection to announce on (the coordinator's command connection, once made). */
  useConnection(commands: Redis): void {
    this.#commands = commands;
    this.retry();
  }

  /** Announces `key`; `onAnnounced` runs once Redis took it. */
  announce(key: string, onAnnounced: () => void): void {
    if (this.#pending.has(key)) return;
    const announcement: Announcement = { key, since: this.#now(), onAnnounced, isSending: false };
    this.#pending.set(key, announcement);
    this.#send(announcement);
  }

  /** Sends every pending announcement again. */
  retry(): void {
    const now = this.#now();
    for (const announcement of this.#pending.values()) {
      if (now - announcement.since > abortKeyTtlMs) this.#pending.delete(announcement.key);
      else this.#send(announcement);
    }
  }

  #send(announcement: Announcement): void {
    const commands = this.#commands;
    if (commands === undefined || announcement.isSending) return;
    announcement.isSending = true;
    void (async () => {
      let isTaken = false;
      try {
        const results = await commands.multi().set(announcement.key, "1", "PX", abortKeyTtlMs).publish(this.#cancelChannel, announcement.key).exec();
        isTaken = results?.every(([error]) => error === null) ?? false;
      } catch {
        // Redis down: stays pending for the next retry.
      }
      announcement.isSending = false;
      if (!isTaken || !this.#pending.delete(announcement.key)) return;
      announcement.onAnnounced();
    })();
  }
}
