/**
 * The fleet's side of a runtime: a pool whose calls run on fleet nodes
 * through BullMQ and Redis (submit, admission, replies, aborts, node loss).
 *
 * Longer than the house's ~400 lines: a remote call's life (admitted,
 * submitted, replied or lost, retried) is one state machine over one reply
 * stream, read best in one class; its watchdog, abort announcer, presence
 * key, admission checks and failure texts are modules of their own.
 *
 * @module
 */
import { randomUUID } from "node:crypto";

import { type Clock, every, type Repeating } from "../clock.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { describeThrown, outcomeTexts } from "../errors.js";
import type { RemoteCallRecord } from "../events.js";
import type { PiVersion } from "../options.js";
import type { FleetStats, PoolStats, ToolCallPool, WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import type { WorkerTool } from "../contracts/worker-tool.js";
import type { ResolvedFleetOptions } from "../contracts/fleet-options.js";
import type { CallTiming } from "../contracts/call-timing.js";
import { callEventBase, endedOutcomeOf, PoolEventSource } from "../contracts/pool-events.js";
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
import { ReplyStream } from "./reply-stream.js";
import { describeToolset, type Toolset } from "./toolset.js";

/**
 * The `failedReason` texts by which BullMQ (pinned: see
 * test/pinned-dependencies.test.ts) fails a job whose node was lost: "job
 * stalled more than allowable limit", "job started more than allowable limit".
 */
export const lostNodeReason = /stalled|attempts started|started more than allowable/i;

interface RemoteCall {
  readonly jobId: string;
  /** Its number in this pool, for its pool events. */
  readonly seq: number;
  readonly request: WorkerCallRequest;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  readonly group: CallGroup | undefined;
  /** The session it takes turns as (see `WorkerCallRequest.session`). */
  readonly sessionKey: unknown;
  readonly sentAt: number;
  /** Resubmissions left after a node loss (idempotent tools only). */
  readonly retriesLeft: number;
  /** Submitted after its batch's abort: its node starts it aborted, as pi runs such a call. */
  readonly startsAborted: boolean;
  isAdded: boolean;
  isSettled: boolean;
  abortTimer: unknown;
  /** When its node said it started it, and which node (only while the pool's events are observed). */
  startedAt?: number;
  node?: string;
}

/** The calls of one batch signal: an abort reaches them all through one key. */
interface CallGroup {
  readonly id: number;
  readonly calls: Set<RemoteCall>;
  isAborted: boolean;
}

/** BullMQ job states in which no node holds the job. */
const waitingStates = new Set(["waiting", "prioritized", "delayed"]);

/** BullMQ's highest priority number (lowest precedence). */
const maxPriority = 2_097_151;

/**
 * The fleet as a pool: the same contract as the local {@link WorkerPool}
 * (`run` never rejects, faults are outcomes), with each call run on a node
 * (`toolpool node`) through a BullMQ queue on Redis.
 *
 * - Partials and the end come back on this coordinator's own reply stream, in
 *   order (BullMQ's QueueEvents is best-effort and shared by every listener).
 * - At most once: a call whose node is lost ends with `TP_ERR_NODE_LOST` and
 *   is never run again, unless its tool is `idempotent` (then resubmitted).
 *   BullMQ's stalled-job detection finds the loss; this pool runs a stalled
 *   checker too, so a loss is found even when no node survives.
 * - Sessions take turns: a call's BullMQ priority is its session's count of
 *   outstanding calls, so every session's k-th call goes before anyone's k+1-th.
 * - Nothing hangs: Redis unreachable, or no live node for the toolset, ends
 *   calls with `TP_ERR_FLEET_UNAVAILABLE` within the configured bounds.
 * - Nothing runs for nobody: a call waiting in the queue when its batch is
 *   aborted is taken back (or refused by the node that fetched it), and nodes
 *   start no call of a coordinator whose presence key lapsed.
 * - Truthful ends: before this pool reports a call lost, aborted past its
 *   bound or failed, it reads its reply stream up to now; an end the node
 *   already wrote wins.
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
  readonly #calls = new Map<string, RemoteCall>();
  readonly #outstanding = new Map<unknown, number>();
  readonly #groups = new WeakMap<AbortSignal, CallGroup>();
  readonly #onCall: (record: RemoteCallRecord) => void;
  readonly #onError: (error: unknown) => void;
  readonly #presence: CoordinatorPresence;
  readonly #announcer: AbortAnnouncer;
  readonly #replies: ReplyStream;
  readonly #watchdog: CallWatchdog<RemoteCall>;
  /**
   * The pool's lifecycle events, as a local pool's: `queued` when a call is
   * submitted, `started` when its node starts it (with `node`, no
   * `threadId`), `ended`; no thread events. Nodes write a start entry only
   * for calls submitted while someone listens.
   */
  readonly events = new PoolEventSource();
  /** Calls past the `maxOutstanding` check and not yet registered (waiting for the connection or the node registry). */
  #admitting = 0;
  #seq = 0;
  #groupSeq = 0;
  #completed = 0;
  #started: Promise<boolean> | undefined;
  #clients: CoordinatorClients | undefined;
  /** Why the last start failed other than by Redis not answering (the fleet's libraries did not load). */
  #startError: string | undefined;
  #timers: Repeating[] = [];
  #isRedisUp = false;
  #redisLostTimer: unknown;
  readonly #directory: NodeDirectory;
  #isClosed = false;
  #drained: Deferred<void> | undefined;
  #shutdown: Promise<void> | undefined;

  /**
   * `settings.pi` is the runtime's `pi`: only nodes started with the same
   * `--pi` take this pool's calls (it is part of the toolset hash).
   * Absent, "0.73", the runtime's default.
   */
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
    const now = () => this.#clock.now();
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

  /** Remote calls in flight; threads are the live nodes' threads. */
  get stats(): PoolStats {
    // Waiting happens in Redis and on the nodes, where this coordinator does not see it.
    return {
      threads: this.#directory.threads,
      running: this.#calls.size,
      queued: 0,
      completed: this.#completed,
      utilization: 0,
      sessionsWaiting: 0,
      longestWaitMs: 0,
    };
  }

  /** The fleet as this coordinator sees it. */
  get fleetStats(): FleetStats {
    return { nodes: this.#directory.nodes, threads: this.#directory.threads, inFlight: this.#calls.size, toolsetHash: this.#toolset.hash };
  }

  /** Whether a call handed to `run` now would be refused: `fleet.maxOutstanding` calls in flight. */
  isQueueFull(): boolean {
    // Calls still being admitted count too: calls started in the same tick cannot pass the limit together.
    return this.#calls.size + this.#admitting >= this.#options.maxOutstanding;
  }

  /** Runs one call on a node. Resolves with its outcome; never rejects. */
  run(request: WorkerCallRequest): Promise<WorkerCallOutcome> {
    return this.#run(request, request.tool.idempotent ? this.#options.nodeLossRetries : 0);
  }

  /** {@link run}, with `retriesLeft` more tries on another node should the call's node be lost (idempotent tools only). */
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
    // Registered by #submit before it awaits anything: the slot passes from #admitting to #calls at once.
    return refusal ?? this.#submit(request, retriesLeft);
  }

  /** Why a call cannot be submitted now (Redis, no node, closed meanwhile), or undefined. */
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
   * Calls in flight finish first, unless `force` is set: then each ends at
   * once with `TP_ERR_CLOSED`, and nodes are told to stop them. Either way
   * this coordinator's presence key goes, so nodes start none of its calls.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    this.#isClosed = true;
    if (options.force) {
      for (const call of [...this.#calls.values()]) {
        // A call still waiting in the queue is taken back; a running one is stopped when the presence key goes.
        if (call.isAdded) this.#clients?.queue.remove(call.jobId).catch(() => {});
        this.#settle(call, closedByForce(call.request.tool.name, call.isAdded));
      }
    }
    if (this.#calls.size > 0) await (this.#drained ??= createDeferred()).promise;
    this.#shutdown ??= this.#stop();
    await this.#shutdown;
  }

  async #submit(request: WorkerCallRequest, retriesLeft: number): Promise<WorkerCallOutcome> {
    const seq = ++this.#seq;
    const jobId = `${this.#coordinatorId}-${seq}`;
    const isObserved = this.events.isObserved;
    const sessionKey = request.session ?? this.#coordinatorId;
    const group = request.signal === undefined ? undefined : this.#groupOf(request.signal);
    const startsAborted = group?.isAborted === true;
    let resolveCall!: (outcome: WorkerCallOutcome) => void;
    const done = new Promise<WorkerCallOutcome>((resolve) => (resolveCall = resolve));
    const call: RemoteCall = {
      jobId,
      seq,
      request,
      resolve: resolveCall,
      group,
      sessionKey,
      sentAt: this.#clock.now(),
      retriesLeft,
      startsAborted,
      isAdded: false,
      isSettled: false,
      abortTimer: undefined,
    };
    // Registered before the job exists: its end may be read before add() returns.
    this.#calls.set(jobId, call);
    group?.calls.add(call);
    const outstanding = (this.#outstanding.get(sessionKey) ?? 0) + 1;
    this.#outstanding.set(sessionKey, outstanding);
    if (isObserved) this.events.emit({ type: "queued", ...callEventBase(call.seq, call.request, call.sentAt) });
    // Bounded like any aborted call: its node may not answer.
    if (startsAborted) this.#startAbortBound(call);
    try {
      const data = encodeJobData({
        tool: request.tool.name,
        fingerprint: this.#toolset.fingerprints.get(request.tool.name)!,
        args: request.args,
        toolCallId: request.toolCallId,
        replyTo: this.#replyKey,
        presenceKey: this.#presence.key,
        ...(group === undefined ? {} : { abortKey: this.#keys.abort(this.#coordinatorId, group.id) }),
        ...(startsAborted ? { startsAborted: true as const } : {}),
        ...(isObserved ? { reportsStart: true as const } : {}),
      });
      await this.#clients!.queue.add(request.tool.name, data, {
        jobId,
        // Every job prioritized (priority 0 would go before all of them): sessions take turns.
        priority: Math.min(maxPriority, outstanding),
        attempts: 1,
        removeOnComplete: true,
        removeOnFail: { age: 3_600, count: 1_000 },
      });
      call.isAdded = true;
    } catch (error) {
      this.#settle(
        call,
        fault("TP_ERR_FLEET_UNAVAILABLE", `Tool "${request.tool.name}" was not run: the fleet's Redis refused the call (${describeThrown(error)})`),
      );
    }
    return done;
  }

  #groupOf(signal: AbortSignal): CallGroup {
    let group = this.#groups.get(signal);
    if (group === undefined) {
      const created: CallGroup = { id: ++this.#groupSeq, calls: new Set(), isAborted: signal.aborted };
      group = created;
      this.#groups.set(signal, created);
      if (!signal.aborted) signal.addEventListener("abort", () => this.#abortGroup(created), { once: true });
    }
    return group;
  }

  #abortGroup(group: CallGroup): void {
    group.isAborted = true;
    if (group.calls.size === 0) return;
    for (const call of group.calls) this.#startAbortBound(call);
    // The abort key first: a node that fetches one of these calls from now on does not start it.
    this.#announcer.announce(this.#keys.abort(this.#coordinatorId, group.id), () => this.#takeBackWaiting(group));
  }

  /** Calls of an aborted batch still waiting in the queue are taken back: they never start (a node holding one heard the abort). */
  #takeBackWaiting(group: CallGroup): void {
    for (const call of group.calls) if (!call.startsAborted) void this.#takeBack(call, () => abortedBeforeStart(call.request.tool.name));
  }

  /**
   * Takes the call's job back from the queue; if it was still waiting, the
   * call ends with `outcome()`. The state is read first: BullMQ removes an
   * active job whose node let its lock lapse (busy, or dying) too, and that
   * job may be running.
   */
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

  /**
   * Runs `giveUp` (which ends the call as failed) unless the call's end is
   * in the reply stream: the stream is read up to now first, so an end the
   * node already wrote wins over the coordinator's own verdict. With Redis
   * unreachable the verdict stands (its text says the call may have run).
   */
  async #unlessAnswered(call: RemoteCall, giveUp: () => void): Promise<void> {
    if (call.isSettled) return;
    const commands = this.#clients?.commands;
    if (call.isAdded && commands !== undefined && this.#isRedisUp) {
      await withTimeout(this.#replies.catchUp(commands), this.#options.redisTimeoutMs).catch(() => {});
    }
    if (!call.isSettled) giveUp();
  }

  /** Connects once; resolves false when Redis cannot be reached within `redisTimeoutMs`. */
  #start(): Promise<boolean> {
    this.#started ??= this.#connect();
    return this.#started.then((isStarted) => {
      // A failed first attempt is retried by the next call (Redis may be back).
      if (!isStarted) this.#started = undefined;
      return isStarted;
    });
  }

  async #connect(): Promise<boolean> {
    let clients: CoordinatorClients | undefined;
    try {
      clients = await this.#connectClients();
    } catch (error) {
      // The fleet's libraries failed to load: every call ends with the cause, and the next one tries again.
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
      isDone: () => this.#isClosed && this.#calls.size === 0,
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
        void this.#watchdog.pass(queue, this.#calls.values(), (call) => void this.#unlessAnswered(call, () => this.#onNodeLost(call)));
      }
    });
    // A Redis that stops answering without closing the connection: a PING that
    // times out counts as lost, and the connection is made anew.
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

  /** A reply stream entry: a partial goes to its call (in stream order), an end settles it. */
  #onReply(entry: ReplyEntry): void {
    const call = this.#calls.get(entry.jobId);
    if (call === undefined || call.isSettled) return; // a call already settled (lost, aborted, closed)
    if (entry.kind === "start") {
      call.startedAt = this.#clock.now();
      call.node = entry.node;
      if (this.events.isObserved) {
        const queueWaitMs = call.startedAt - call.sentAt;
        this.events.emit({
          type: "started",
          ...callEventBase(call.seq, call.request, call.startedAt),
          threadId: undefined,
          node: entry.node,
          queueWaitMs,
        });
      }
      return;
    }
    if (entry.kind === "update") {
      call.request.onUpdate?.(entry.partial as never);
      return;
    }
    const overhead = (this.#clock.now() - call.sentAt - entry.executionMs) / 1_000;
    this.#settle(call, entry.outcome, Math.max(0, overhead));
  }

  #onStalled(jobId: string): void {
    const call = this.#calls.get(jobId);
    if (call === undefined || call.isSettled) return;
    // The stalled job is back in the queue with a deferred failure: remove it
    // so that no node even fetches it (it would not run it anyway).
    this.#clients?.queue.remove(jobId).catch(() => {});
    void this.#unlessAnswered(call, () => this.#onNodeLost(call));
  }

  #onFailed(jobId: string, failedReason: string): void {
    const call = this.#calls.get(jobId);
    if (call === undefined || call.isSettled) return;
    const isLost = lostNodeReason.test(failedReason);
    void this.#unlessAnswered(call, () => (isLost ? this.#onNodeLost(call) : this.#settle(call, nodeFailed(call.request.tool.name, failedReason))));
  }

  #onNodeLost(call: RemoteCall): void {
    const lost = nodeLost(call.request.tool.name, this.#clock.now() - call.sentAt);
    if (call.retriesLeft > 0 && !this.#isClosed && call.group?.isAborted !== true) {
      // Idempotent: running it again is harmless. Partials of the lost attempt stay delivered.
      this.#forget(call);
      // This attempt ends lost; the next one is a call of its own, from `queued` on.
      this.#emitEnded(call, lost);
      void this.#run(call.request, call.retriesLeft - 1).then((outcome) =>
        // A resubmission that never reached a node (none left, Redis gone, closed) ends as the loss it is.
        call.resolve(isUnsubmitted(outcome) ? lost : outcome),
      );
      return;
    }
    this.#settle(call, lost);
  }

  /** Reads the node registry, while Redis is up. */
  async #lookAtNodes(): Promise<void> {
    if (this.#clients !== undefined && this.#isRedisUp) await this.#directory.refresh(this.#clients.commands);
  }

  /** No node for `noNodeGraceMs`: calls still waiting in the queue are taken back and end unavailable. */
  #dropUnserved(): void {
    if (this.#directory.unservedForMs <= this.#options.noNodeGraceMs) return;
    // A job a node holds stays: that one is left to the stalled check.
    for (const call of [...this.#calls.values()])
      void this.#takeBack(call, () => unservedOutcome(call.request.tool.name, this.#directory, this.#toolset, this.#tools));
  }

  #onRedisLost(): void {
    if (!this.#isRedisUp) return;
    this.#isRedisUp = false;
    this.#redisLostTimer = this.#clock.setTimeout(() => {
      for (const call of [...this.#calls.values()])
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

  /** The `ended` event of `call`, timed on this pool's clock (the node's own timing stays with the outcome). */
  #emitEnded(call: RemoteCall, outcome: WorkerCallOutcome): void {
    if (!this.events.isObserved) return;
    const timing: CallTiming = { submittedAt: call.sentAt, endedAt: this.#clock.now() };
    if (call.startedAt !== undefined) timing.startedAt = call.startedAt;
    if (call.node !== undefined) timing.node = call.node;
    if (outcome.timing?.runMs !== undefined) timing.runMs = outcome.timing.runMs;
    this.events.emit({
      type: "ended",
      ...callEventBase(call.seq, call.request, timing.endedAt),
      ...endedOutcomeOf(outcome),
      threadId: undefined,
      ...(call.node === undefined ? {} : { node: call.node }),
      timing,
    });
  }

  /** Takes a call out of the books without resolving it (it is resubmitted). */
  #forget(call: RemoteCall): void {
    call.isSettled = true;
    if (call.abortTimer !== undefined) this.#clock.clearTimeout(call.abortTimer);
    this.#calls.delete(call.jobId);
    call.group?.calls.delete(call);
    const outstanding = (this.#outstanding.get(call.sessionKey) ?? 1) - 1;
    if (outstanding === 0) this.#outstanding.delete(call.sessionKey);
    else this.#outstanding.set(call.sessionKey, outstanding);
  }

  #settle(call: RemoteCall, outcome: WorkerCallOutcome, overheadSeconds?: number): void {
    if (call.isSettled) return;
    this.#forget(call);
    this.#completed += 1;
    if (this.#calls.size === 0) this.#drained?.resolve();
    this.#emitEnded(call, outcome);
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
    // A start still under way adds its timers when it ends: clear them after it.
    if (this.#started !== undefined) await this.#started;
    for (const timer of this.#timers) timer.stop();
    if (this.#redisLostTimer !== undefined) this.#clock.clearTimeout(this.#redisLostTimer);
    if (this.#clients !== undefined) {
      await withTimeout(this.#presence.end(this.#keys.cancelChannel), this.#options.redisTimeoutMs).catch(() => {});
    }
    await this.#clients?.close(this.#replyKey, this.#options.redisTimeoutMs);
  }
}
