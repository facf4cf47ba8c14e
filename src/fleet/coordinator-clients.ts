import type { Queue, QueueEvents, Worker } from "bullmq";
import type { Redis } from "ioredis";

import { reconnectDelay, redisOptionsFromUrl, type RemoteJobData } from "./fleet-protocol.js";
import { loadRedisLibraries, type RedisLibraries } from "./redis-libraries.js";

interface CoordinatorClientsOptions {
  redis: string;
  prefix: string;
  queueName: string;
  redisTimeoutMs: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  onStalled: (jobId: string) => void;
  /** Its processor threw, or it was failed as stalled. */
  onFailed: (jobId: string, failedReason: string) => void;
  onRedisLost: () => void;
  onRedisBack: () => void;
}

/**
 * A fail-fast command connection (shared with the `Queue` that adds jobs), a blocking reader for the reply stream, a
 * `QueueEvents` for the loss signals only, and a stalled checker that processes nothing.
 */
export class CoordinatorClients {
  readonly commands: Redis;
  readonly reader: Redis;
  /** Subscribed to the presence channel and nothing else (see `CoordinatorPresence`). */
  readonly presence: Redis;
  readonly queue: Queue<RemoteJobData>;
  readonly events: QueueEvents;
  readonly stalledChecker: Worker;

  private constructor(commands: Redis, options: CoordinatorClientsOptions, { Queue, QueueEvents, Worker, Redis }: RedisLibraries) {
    const redisOptions = { ...redisOptionsFromUrl(options.redis), retryStrategy: reconnectDelay };
    const connection = { ...redisOptions, maxRetriesPerRequest: null };
    this.commands = commands;
    this.queue = new Queue<RemoteJobData>(options.queueName, { connection: commands, prefix: options.prefix });
    this.queue.on("error", () => {});
    // Results take the reply stream: QueueEvents is best-effort (trimmed), and every listener reads all of it.
    this.events = new QueueEvents(options.queueName, { connection, prefix: options.prefix });
    this.events.on("error", () => {});
    this.events.on("stalled", ({ jobId }) => options.onStalled(jobId));
    this.events.on("failed", ({ jobId, failedReason }) => options.onFailed(jobId, failedReason));
    // Finds a lost call even when no node survives. A pass only confirms what the previous one marked, so checking twice
    // per interval keeps the loss within lock + 2 × interval even when timers run late.
    this.stalledChecker = new Worker(options.queueName, null, {
      connection,
      prefix: options.prefix,
      autorun: false,
      lockDuration: options.lockDurationMs,
      stalledInterval: Math.max(25, Math.floor(options.stalledIntervalMs / 2)),
      maxStalledCount: 0,
    });
    this.stalledChecker.on("error", () => {});
    this.reader = new Redis(connection);
    this.reader.on("error", () => {});
    // Named for CLIENT LIST; ioredis subscribes it again after a reconnection.
    this.presence = new Redis({ ...connection, connectionName: "toolpool-coordinator-presence" });
    this.presence.on("error", () => {});
    commands.on("close", options.onRedisLost);
    commands.on("ready", options.onRedisBack);
  }

  /** Resolves undefined when Redis does not answer within `redisTimeoutMs`. */
  static async connect(options: CoordinatorClientsOptions): Promise<CoordinatorClients | undefined> {
    const libraries = await loadRedisLibraries();
    const { Redis } = libraries;
    const redisOptions = { ...redisOptionsFromUrl(options.redis), retryStrategy: reconnectDelay };
    // Fail fast: a command while Redis is down rejects at once instead of waiting in a queue.
    const commands = new Redis({
      ...redisOptions,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      enableAutoPipelining: true,
      // A Redis that stops answering without closing the connection fails commands instead of hanging them.
      commandTimeout: options.redisTimeoutMs,
      connectionName: "toolpool-coordinator",
    });
    commands.on("error", () => {});
    try {
      await withTimeout(commands.connect(), options.redisTimeoutMs);
    } catch {
      commands.disconnect();
      return undefined;
    }
    const clients = new CoordinatorClients(commands, options, libraries);
    // Redis may go away meanwhile: later calls then find it down, or back.
    await withTimeout(clients.events.waitUntilReady(), options.redisTimeoutMs).catch(() => {});
    void clients.stalledChecker.startStalledCheckTimer().catch(() => {});
    return clients;
  }

  /** Each step within `timeoutMs`. */
  async close(replyKey: string, timeoutMs: number): Promise<void> {
    this.reader.disconnect();
    this.presence.disconnect();
    const bounded = (promise: Promise<unknown>) => withTimeout(promise, timeoutMs).catch(() => {});
    await bounded(this.commands.del(replyKey));
    await Promise.all([bounded(this.events.close()), bounded(this.stalledChecker.close(true)), bounded(this.queue.close())]);
    this.commands.disconnect();
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
