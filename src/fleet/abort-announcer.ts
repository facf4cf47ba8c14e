import type { Redis } from "ioredis";

/** An announcement still pending after the abort key's lifetime is dropped. */
const abortKeyTtlMs = 600_000;

interface Announcement {
  readonly key: string;
  readonly since: number;
  readonly onAnnounced: () => void;
  isSending: boolean;
}

/**
 * Sets a batch's abort key (read by a node as it fetches a call) and publishes it (for calls running now). One Redis
 * did not take stays pending and is resent by {@link retry} (on reconnection and every watch pass): a brief outage
 * never loses an abort. At most one pending per batch, dropped once its key would have expired.
 */
export class AbortAnnouncer {
  readonly #cancelChannel: string;
  readonly #pending = new Map<string, Announcement>();
  #commands: Redis | undefined;
  readonly #now: () => number;

  constructor(cancelChannel: string, now: () => number) {
    this.#cancelChannel = cancelChannel;
    this.#now = now;
  }

  get pending(): number {
    return this.#pending.size;
  }

  /** The coordinator's command connection, once made. */
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
