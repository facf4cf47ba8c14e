/**
 * The fleet's side of a runtime: a pool whose calls run on fleet nodes
 * through BullMQ and Redis (submit, admission, replies, aborts, node loss).
 *
 * @module
 */
import { randomUUID } from "node:crypto";

import { type Clock, every, type Repeating } from "../clock.js";
import { describeThrown, outcomeTexts } from "../errors.js";
import type { RemoteCallRecord } from "../events.js";
import type { PiVersion } from "../options.js";
import type { FleetStats, PoolStats, ToolCallPool, WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import type { ResolvedFleetOptions } from "../contracts/fleet-options.js";
import type { PoolEventSource } from "../contracts/pool-events.js";
import { CallBook } from "../workers/call-book.js";
import { AbortAnnouncer } from "./abort-announcer.js";
import { CallWatchdog } from "./call-watchdog.js";
import { CoordinatorClients, withTimeout } from "./coordinator-clients.js";
import { CoordinatorPresence } from "./coordinator-presence.js";
import {
  abortedBeforeStart,
  closedByForce,
  fault,
  isUnsubmitted,
  noEndAfterAbort,
  nodeFailed,
  nodeLost,
  redisHostOf,
  redisLost,
  unservedOutcome,
} from "./fleet-outcomes.js";
import { encodeJobData, FleetKeys, type ReplyEntry } from "./fleet-protocol.js";
import { NodeDirectory } from "./node-directory.js";
import { jobOptions, lostNodeReason, type RemoteCall, SessionTurns, waitingStates } from "./remote-call.js";
import { ReplyStream } from "./reply-stream.js";
import { describeToolset, type Toolset } from "./toolset.js";

export { lostNodeReason } from "./remote-call.js";

/**
 * The fleet as a pool: the same contract as the local {@link WorkerPool}
 * (`run` never rejects, faults are outcomes), with each call run on a node
 * (`toolpool node`) through a BullMQ queue on Redis.
 *
 * - Partials and the end come back in order on this coordinator's own reply
 *   stream (BullMQ's QueueEvents is best-effort and shared).
 * - At most once: a call whose node is lost ends with `TP_ERR_NODE_LOST`,
 *   unless its tool is `idempotent` (then resubmitted). This pool checks for
 *   stalled jobs too, so a loss is found even when no node survives.
 * - Sessions take turns (see {@link SessionTurns}).
 * - Nothing hangs: Redis unreachable, or no live node for the toolset, ends
 *   calls with `TP_ERR_FLEET_UNAVAILABLE` within the configured bounds.
 * - Nothing runs for nobody: a waiting call of an aborted batch is taken back
 *   (or refused by its node), and nodes start no call of a coordinator whose
 *   presence key lapsed.
 * - Truthful ends: before this pool reports a call lost, aborted past its
 *   bound or failed, it reads its reply stream: an end already written wins.
 */
export class RemotePool implements ToolCallPool {
  readonly #options: ResolvedFleetOptions;
  readonly #abortGraceMs: number;
  readonly #clock: Clock;
  readonly #tools: readonly WorkerTool[];
  readonly #toolset: Toolset;
  readonly #keys: FleetKeys;
  readonly #queueName: string;
  readonly #coordinatorId = randomUUID().replaceAll("-", "");
  readonly #replyKey: string;
  /** A job of this coordinator's is named this and its call's number. */
  readonly #jobPrefix: string;
  readonly #book: CallBook<RemoteCall>;
  readonly #turns = new SessionTurns();
  readonly #onCall: (record: RemoteCallRecord) => void;
  readonly #onError: (error: unknown) => void;
  readonly #presence: CoordinatorPresence;
  readonly #announcer: AbortAnnouncer;
  readonly #replies: ReplyStream;
  readonly #watchdog: CallWatchdog<RemoteCall>;
  /** As a local pool's, with `node` for `threadId` and no thread events; a node reports a start only while someone listens. */
  readonly events: PoolEventSource;
  /** Calls past the `maxOutstanding` check and not yet in the book. */
  #admitting = 0;
  #seq = 0;
  #started: Promise<boolean> | undefined;
  #clients: CoordinatorClients | undefined;
  /** Why the last start failed, other than by Redis not answering. */
  #startError: string | undefined;
  #timers: Repeating[] = [];
  #isRedisUp = false;
  #redisLostTimer: unknown;
  readonly #directory: NodeDirectory;
  #isClosed = false;
  #shutdown: Promise<void> | undefined;

  /** `settings.pi` (default "0.73") is part of the toolset hash: only nodes started with the same `--pi` take the calls. */
  constructor(
    options: ResolvedFleetOptions,
    tools: readonly WorkerTool[],
    settings: {
      abortGraceMs: number;
      clock: Clock;
      pi?: PiVersion;
      onCall?: (record: RemoteCallRecord) => void;
      onError?: (error: unknown) => void;
    },
  ) {
    this.#options = options;
    this.#abortGraceMs = settings.abortGraceMs;
    this.#clock = settings.clock;
    this.#onCall = settings.onCall ?? (() => {});
    this.#onError = settings.onError ?? (() => {});
    this.#tools = tools;
    this.#toolset = describeToolset(tools, settings.pi ?? "0.73");
    this.#keys = new FleetKeys(options.prefix);
    this.#queueName = FleetKeys.queueName(this.#toolset.hash);
    this.#replyKey = this.#keys.reply(this.#coordinatorId);
    this.#jobPrefix = `${this.#coordinatorId}-`;
    const now = () => this.#clock.now();
    this.#book = new CallBook<RemoteCall>({
      now,
      onAbort: (call) => this.#startAbortBound(call),
      onGroupAbort: (groupId, calls) => this.#onGroupAbort(groupId, calls),
    });
    this.events = this.#book.events;
    this.#directory = new NodeDirectory(this.#keys, this.#toolset.hash, now);
    this.#presence = new CoordinatorPresence(this.#keys.presence(this.#coordinatorId), options, this.#clock);
    this.#announcer = new AbortAnnouncer(this.#keys.cancelChannel, now);
    this.#watchdog = new CallWatchdog(options, now);
    this.#replies = new ReplyStream({
      key: this.#replyKey,
      onEntry: (entry) => this.#onReply(entry),
      trim: (lastId) => void this.#clients?.commands.xtrim(this.#replyKey, "MINID", lastId).catch(() => {}),
    });
  }

  /** Calls in flight, all counted running: they wait in Redis and on the nodes, out of sight. */
  get stats(): PoolStats {
    return {
      threads: this.#directory.threads,
      running: this.#book.size,
      queued: 0,
      completed: this.#book.completed,
      utilization: 0,
      sessionsWaiting: 0,
      longestWaitMs: 0,
    };
  }

  /** The fleet as this coordinator sees it. */
  get fleetStats(): FleetStats {
    return { nodes: this.#directory.nodes, threads: this.#directory.threads, inFlight: this.#book.size, toolsetHash: this.#toolset.hash };
  }

  /** Whether `run` would refuse a call now; calls being admitted count, so that a tick's calls cannot pass the limit together. */
  isQueueFull(): boolean {
    return this.#book.size + this.#admitting >= this.#options.maxOutstanding;
  }

  /** Runs one call on a node. Resolves with its outcome; never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome> {
    return this.#run(request, request.tool.idempotent ? this.#options.nodeLossRetries : 0);
  }

  /** {@link run}, with `retriesLeft` more tries should the call's node be lost. */
  async #run(request: WorkerCallRequest, retriesLeft: number): Promise<WorkerCallOutcome> {
    const name = request.tool.name;
    if (this.#isClosed) return fault("TP_ERR_CLOSED", outcomeTexts.poolClosed(name));
    if (this.isQueueFull()) {
      return fault(
        "TP_ERR_QUEUE_FULL",
        `Tool "${name}" was not run: ${this.#options.maxOutstanding} remote calls are in flight (fleet.maxOutstanding)`,
      );
    }
    this.#admitting += 1;
    let refusal: WorkerCallOutcome | undefined;
    try {
      refusal = await this.#admit(name);
    } finally {
      this.#admitting -= 1;
    }
    // In the book before #submit awaits anything: the slot passes from #admitting to the book at once.
    return refusal ?? this.#submit(request, retriesLeft);
  }

  async #admit(name: string): Promise<WorkerCallOutcome | undefined> {
    if (!(await this.#start()) || !this.#isRedisUp) {
      const why = this.#startError ?? `Redis at ${redisHostOf(this.#options.redis)} is unreachable`;
      return fault("TP_ERR_FLEET_UNAVAILABLE", `Tool "${name}" was not run: ${why}`);
    }
    if (this.#directory.nodes === 0) await this.#lookAtNodes().catch(() => {});
    if (this.#directory.nodes === 0) return unservedOutcome(name, this.#directory, this.#toolset, this.#tools);
    if (this.#isClosed) return fault("TP_ERR_CLOSED", outcomeTexts.poolClosed(name));
    return undefined;
  }

  /**
   * Stops the pool; calls submitted afterwards end with `TP_ERR_CLOSED`.
   * Calls in flight finish first, unless `force`: then each ends at once
   * with `TP_ERR_CLOSED`. The presence key goes, so nodes stop its calls.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    this.#isClosed = true;
    if (options.force) {
      for (const call of this.#book.inOrder()) {
        if (call.isAdded) this.#clients?.queue.remove(call.jobId).catch(() => {});
        this.#settle(call, closedByForce(call.request.tool.name, call.isAdded));
      }
    }
    await this.#book.drained();
    this.#shutdown ??= this.#stop();
    await this.#shutdown;
  }

  async #submit(request: WorkerCallRequest, retriesLeft: number): Promise<WorkerCallOutcome> {
    const seq = ++this.#seq;
    const jobId = `${this.#jobPrefix}${seq}`;
    const isObserved = this.events.isObserved;
    const sessionKey = request.session ?? this.#coordinatorId;
    let resolveCall!: (outcome: WorkerCallOutcome) => void;
    const done = new Promise<WorkerCallOutcome>((resolve) => (resolveCall = resolve));
    const call: RemoteCall = {
      jobId,
      seq,
      request,
      resolve: resolveCall,
      sessionKey,
      enqueuedAt: this.#clock.now(),
      startedAt: undefined,
      retriesLeft,
      startsAborted: request.signal?.aborted === true,
      isAdded: false,
      isSettled: false,
      abortTimer: undefined,
    };
    // In the book before the job exists: its end may be read before add() returns.
    const groupId = this.#book.add(call);
    const priority = this.#turns.take(sessionKey);
    try {
      const data = encodeJobData({
        tool: request.tool.name,
        fingerprint: this.#toolset.fingerprints.get(request.tool.name)!,
        args: request.args,
        toolCallId: request.toolCallId,
        replyTo: this.#replyKey,
        presenceKey: this.#presence.key,
        ...(groupId === 0 ? {} : { abortKey: this.#keys.abort(this.#coordinatorId, groupId) }),
        ...(call.startsAborted ? { startsAborted: true as const } : {}),
        ...(isObserved ? { reportsStart: true as const } : {}),
      });
      await this.#clients!.queue.add(request.tool.name, data, jobOptions(jobId, priority));
      call.isAdded = true;
    } catch (error) {
      this.#settle(
        call,
        fault("TP_ERR_FLEET_UNAVAILABLE", `Tool "${request.tool.name}" was not run: the fleet's Redis refused the call (${describeThrown(error)})`),
      );
    }
    return done;
  }

  /** The abort key first, so that a node that fetches one of the calls from now on does not start it. */
  #onGroupAbort(groupId: number, calls: readonly RemoteCall[]): void {
    this.#announcer.announce(this.#keys.abort(this.#coordinatorId, groupId), () => {
      for (const call of calls) void this.#takeBack(call, () => abortedBeforeStart(call.request.tool.name));
    });
  }

  #callOf(jobId: string): RemoteCall | undefined {
    return jobId.startsWith(this.#jobPrefix) ? this.#book.get(Number(jobId.slice(this.#jobPrefix.length))) : undefined;
  }

  /** Only a waiting job: BullMQ also removes an active one whose lock lapsed, which may be running. */
  async #takeBack(call: RemoteCall, outcome: () => WorkerCallOutcome): Promise<void> {
    const queue = this.#clients?.queue;
    if (call.isSettled || !call.isAdded || queue === undefined) return;
    try {
      if (!waitingStates.has(await queue.getJobState(call.jobId))) return;
      if ((await queue.remove(call.jobId)) === 1) this.#settle(call, outcome());
    } catch {
      // Redis down: the call's other bounds end it.
    }
  }

  /** A node that cannot be reached must not keep an aborted call running forever. */
  #startAbortBound(call: RemoteCall): void {
    const limit = this.#abortGraceMs + this.#options.abortSlackMs;
    call.abortTimer ??= this.#clock.setTimeout(
      () => void this.#unlessAnswered(call, () => this.#settle(call, noEndAfterAbort(call.request.tool.name, limit))),
      limit,
    );
  }

  /** An end the node already wrote wins over the pool's verdict; with Redis unreachable the verdict stands. */
  async #unlessAnswered(call: RemoteCall, giveUp: () => void): Promise<void> {
    if (call.isSettled) return;
    const commands = this.#clients?.commands;
    if (call.isAdded && commands !== undefined && this.#isRedisUp) {
      await withTimeout(this.#replies.catchUp(commands), this.#options.redisTimeoutMs).catch(() => {});
    }
    if (!call.isSettled) giveUp();
  }

  /** False when Redis cannot be reached within `redisTimeoutMs`; the next call tries again. */
  #start(): Promise<boolean> {
    this.#started ??= this.#connect();
    return this.#started.then((isStarted) => {
      if (!isStarted) this.#started = undefined;
      return isStarted;
    });
  }

  async #connect(): Promise<boolean> {
    let clients: CoordinatorClients | undefined;
    try {
      clients = await this.#connectClients();
    } catch (error) {
      // The fleet's libraries failed to load.
      const message = error instanceof Error ? error.message : describeThrown(error);
      this.#startError = message.charAt(0).toLowerCase() + message.slice(1);
      return false;
    }
    this.#startError = undefined;
    if (clients === undefined) return false;
    this.#clients = clients;
    this.#isRedisUp = clients.commands.status === "ready";
    // Present before the first job is added (nodes refuse the jobs of an absent coordinator).
    await withTimeout(this.#presence.start(clients.commands, clients.presence), this.#options.redisTimeoutMs).catch(() => {});
    this.#announcer.useConnection(clients.commands);
    await withTimeout(this.#lookAtNodes(), this.#options.redisTimeoutMs).catch(() => {});
    void this.#replies.run(clients.reader, {
      isDone: () => this.#isClosed && this.#book.size === 0,
      isStopped: () => this.#shutdown !== undefined,
    });
    const repeat = (ms: number, task: () => void) => {
      this.#timers.push(every(this.#clock, ms, task));
    };
    repeat(
      Math.min(1_000, this.#options.stalledIntervalMs),
      () =>
        void this.#lookAtNodes().then(
          () => this.#dropUnserved(),
          () => {},
        ),
    );
    repeat(this.#options.stalledIntervalMs, () => {
      this.#announcer.retry();
      const queue = this.#clients?.queue;
      if (queue !== undefined && this.#isRedisUp) {
        void this.#watchdog.pass(queue, this.#book.inOrder(), (call) => void this.#unlessAnswered(call, () => this.#onNodeLost(call)));
      }
    });
    // A Redis that stops answering without closing the connection is lost.
    repeat(this.#options.redisTimeoutMs, () => {
      if (!this.#isRedisUp) return;
      clients.commands.ping().catch(() => {
        this.#onRedisLost();
        clients.commands.disconnect(true);
      });
    });
    return true;
  }

  #connectClients(): Promise<CoordinatorClients | undefined> {
    return CoordinatorClients.connect({
      redis: this.#options.redis,
      prefix: this.#keys.prefix,
      queueName: this.#queueName,
      redisTimeoutMs: this.#options.redisTimeoutMs,
      lockDurationMs: this.#options.lockDurationMs,
      stalledIntervalMs: this.#options.stalledIntervalMs,
      onStalled: (jobId) => this.#onStalled(jobId),
      onFailed: (jobId, failedReason) => this.#onFailed(jobId, failedReason),
      onRedisLost: () => this.#onRedisLost(),
      onRedisBack: () => this.#onRedisBack(),
    });
  }

  #onReply(entry: ReplyEntry): void {
    const call = this.#callOf(entry.jobId);
    if (call === undefined || call.isSettled) return; // a call already settled (lost, aborted, closed)
    if (entry.kind === "start") {
      call.node = entry.node;
      this.#book.start(call, undefined, entry.node);
      return;
    }
    if (entry.kind === "update") {
      call.request.onUpdate?.(entry.partial as never);
      return;
    }
    const overhead = (this.#clock.now() - call.enqueuedAt - entry.executionMs) / 1_000;
    this.#settle(call, entry.outcome, Math.max(0, overhead));
  }

  #onStalled(jobId: string): void {
    const call = this.#callOf(jobId);
    if (call === undefined || call.isSettled) return;
    // Back in the queue with a deferred failure: no node need fetch it.
    this.#clients?.queue.remove(jobId).catch(() => {});
    void this.#unlessAnswered(call, () => this.#onNodeLost(call));
  }

  #onFailed(jobId: string, failedReason: string): void {
    const call = this.#callOf(jobId);
    if (call === undefined || call.isSettled) return;
    const isLost = lostNodeReason.test(failedReason);
    void this.#unlessAnswered(call, () => (isLost ? this.#onNodeLost(call) : this.#settle(call, nodeFailed(call.request.tool.name, failedReason))));
  }

  #onNodeLost(call: RemoteCall): void {
    const lost = nodeLost(call.request.tool.name, this.#clock.now() - call.enqueuedAt);
    if (call.retriesLeft > 0 && !this.#isClosed && call.request.signal?.aborted !== true) {
      // This attempt ends lost, unresolved; the next is a call of its own, from `queued` on.
      this.#end(call, lost);
      void this.#run(call.request, call.retriesLeft - 1).then((outcome) =>
        // A resubmission that never reached a node (none left, Redis gone, closed) ends as the loss it is.
        call.resolve(isUnsubmitted(outcome) ? lost : outcome),
      );
      return;
    }
    this.#settle(call, lost);
  }

  async #lookAtNodes(): Promise<void> {
    if (this.#clients !== undefined && this.#isRedisUp) await this.#directory.refresh(this.#clients.commands);
  }

  /** No node for `noNodeGraceMs`: waiting jobs are taken back (held ones are the stalled check's). */
  #dropUnserved(): void {
    if (this.#directory.unservedForMs <= this.#options.noNodeGraceMs) return;
    for (const call of this.#book.inOrder())
      void this.#takeBack(call, () => unservedOutcome(call.request.tool.name, this.#directory, this.#toolset, this.#tools));
  }

  #onRedisLost(): void {
    if (!this.#isRedisUp) return;
    this.#isRedisUp = false;
    this.#redisLostTimer = this.#clock.setTimeout(() => {
      for (const call of this.#book.inOrder())
        this.#settle(call, redisLost(call.request.tool.name, redisHostOf(this.#options.redis), this.#options.redisTimeoutMs));
    }, this.#options.redisTimeoutMs);
  }

  #onRedisBack(): void {
    if (this.#redisLostTimer !== undefined) this.#clock.clearTimeout(this.#redisLostTimer);
    this.#redisLostTimer = undefined;
    this.#isRedisUp = true;
    // A restarted Redis lost the presence key; aborts it could not take are announced now.
    void this.#presence.renew().catch(() => {});
    this.#announcer.retry();
  }

  /** Out of the book, unresolved; `ended` timed on this pool's clock (the node's timing stays with the outcome). */
  #end(call: RemoteCall, outcome: WorkerCallOutcome): void {
    call.isSettled = true;
    if (call.abortTimer !== undefined) this.#clock.clearTimeout(call.abortTimer);
    this.#turns.leave(call.sessionKey);
    const timing = this.#book.timing(call);
    if (call.node !== undefined) timing.node = call.node;
    if (outcome.timing?.runMs !== undefined) timing.runMs = outcome.timing.runMs;
    this.#book.end(call, outcome, timing);
  }

  #settle(call: RemoteCall, outcome: WorkerCallOutcome, overheadSeconds?: number): void {
    if (call.isSettled) return;
    this.#end(call, outcome);
    try {
      this.#onCall({
        tool: call.request.tool.name,
        outcome: outcome.kind === "ok" ? "ok" : outcome.code === undefined ? "error" : outcome.code.toLowerCase(),
        overheadSeconds,
      });
    } catch (error) {
      this.#onError(error);
    }
    call.resolve(outcome);
  }

  async #stop(): Promise<void> {
    // A start under way adds its timers when it ends.
    if (this.#started !== undefined) await this.#started;
    for (const timer of this.#timers) timer.stop();
    if (this.#redisLostTimer !== undefined) this.#clock.clearTimeout(this.#redisLostTimer);
    if (this.#clients !== undefined) {
      await withTimeout(this.#presence.end(this.#keys.cancelChannel), this.#options.redisTimeoutMs).catch(() => {});
    }
    await this.#clients?.close(this.#replyKey, this.#options.redisTimeoutMs);
  }
}
