import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";

import type { Clock } from "../clock.js";
import { createDeferred, type Deferred } from "../deferred.js";
import { describeThrown, type ErrorCode } from "../errors.js";
import type { PiVersion } from "../options.js";
import type { PoolStats, ToolCallPool, WorkerCallOutcome, WorkerCallRequest } from "../workers/pool-contract.js";
import type { WorkerTool } from "../workers/worker-tool.js";
import type { ResolvedFleetOptions } from "./fleet-options.js";
import { CoordinatorClients, withTimeout } from "./coordinator-clients.js";
import { encodeJobData, FleetKeys, type ReplyEntry } from "./fleet-protocol.js";
import { NodeDirectory } from "./node-directory.js";
import { readReplyStream } from "./reply-stream.js";
import { describeToolset, type Toolset } from "./toolset.js";

/** How one remote call ended, for metrics. */
export interface RemoteCallRecord {
  tool: string;
  /** `ok`, `error` (the tool's own failure), or the fault's code in lower case (`tp_err_node_lost`). */
  outcome: string;
  /** Round trip minus the node's own time for the call, in seconds; absent when no node answered. */
  overheadSeconds: number | undefined;
}

/** A snapshot of the fleet as a coordinator sees it. */
export interface FleetStats {
  /** Live nodes serving the runtime's toolset, at the last look. */
  nodes: number;
  /** Their threads, added up. */
  threads: number;
  /** Remote calls of this runtime in flight. */
  inFlight: number;
  /** The hash of the runtime's worker tools: nodes with the same hash take its calls. */
  toolsetHash: string;
}

interface RemoteCall {
  readonly jobId: string;
  readonly request: WorkerCallRequest;
  readonly resolve: (outcome: WorkerCallOutcome) => void;
  readonly group: CallGroup | undefined;
  /** The session it takes turns as (see `WorkerCallRequest.session`). */
  readonly sessionKey: unknown;
  readonly sentAt: number;
  /** Resubmissions left after a node loss (idempotent tools only). */
  readonly retriesLeft: number;
  isAdded: boolean;
  isSettled: boolean;
  /** Watchdog passes in a row that found the job gone without an end. */
  missingPasses: number;
  abortTimer: unknown;
}

/** The calls of one batch signal: an abort reaches them all through one key. */
interface CallGroup {
  readonly id: number;
  readonly calls: Set<RemoteCall>;
  isAborted: boolean;
}

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
  #seq = 0;
  #groupSeq = 0;
  #completed = 0;
  #started: Promise<boolean> | undefined;
  #clients: CoordinatorClients | undefined;
  /** Why the last start failed other than by Redis not answering (the fleet's libraries did not load). */
  #startError: string | undefined;
  #timers: NodeJS.Timeout[] = [];
  #isRedisUp = false;
  #isWatching = false;
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
    this.#directory = new NodeDirectory(this.#keys, this.#toolset.hash);
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

  /** Runs one call on a node. Resolves with its outcome; never rejects. */
  async run(request: WorkerCallRequest, retriesLeft = request.tool.idempotent ? this.#options.nodeLossRetries : 0): Promise<WorkerCallOutcome> {
    const name = request.tool.name;
    if (this.#isClosed) return fault("TP_ERR_CLOSED", `Tool "${name}" was not run: the pool is closed`);
    if (this.#calls.size >= this.#options.maxOutstanding) {
      return fault("TP_ERR_QUEUE_FULL", `Tool "${name}" was not run: ${this.#options.maxOutstanding} remote calls are in flight (fleet.maxOutstanding)`);
    }
    if (!(await this.#start()) || !this.#isRedisUp) {
      const why = this.#startError ?? `Redis at ${this.#redisHost()} is unreachable`;
      return fault("TP_ERR_FLEET_UNAVAILABLE", `Tool "${name}" was not run: ${why}`);
    }
    if (this.#directory.nodes === 0) await this.#lookAtNodes().catch(() => {});
    if (this.#directory.nodes === 0) return this.#unservedOutcome(name);
    if (this.#isClosed) return fault("TP_ERR_CLOSED", `Tool "${name}" was not run: the pool is closed`);
    return this.#submit(request, retriesLeft);
  }

  /**
   * Stops the pool; calls submitted afterwards end with `TP_ERR_CLOSED`.
   * Calls in flight finish first, unless `force` is set: then each ends at
   * once with `TP_ERR_CLOSED` and its node is told to abort it.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    this.#isClosed = true;
    if (options.force) {
      const groups = new Set<CallGroup>();
      for (const call of [...this.#calls.values()]) {
        if (call.group !== undefined) groups.add(call.group);
        this.#settle(call, fault("TP_ERR_CLOSED", `Tool "${call.request.tool.name}" was stopped: the runtime was closed by force`));
      }
      for (const group of groups) this.#announceAbort(group);
    }
    if (this.#calls.size > 0) await (this.#drained ??= createDeferred()).promise;
    this.#shutdown ??= this.#stop();
    await this.#shutdown;
  }

  async #submit(request: WorkerCallRequest, retriesLeft: number): Promise<WorkerCallOutcome> {
    const jobId = `${this.#coordinatorId}-${++this.#seq}`;
    const sessionKey = request.session ?? this.#coordinatorId;
    const group = request.signal === undefined ? undefined : this.#groupOf(request.signal);
    let resolveCall!: (outcome: WorkerCallOutcome) => void;
    const done = new Promise<WorkerCallOutcome>((resolve) => (resolveCall = resolve));
    const call: RemoteCall = {
      jobId,
      request,
      resolve: resolveCall,
      group,
      sessionKey,
      sentAt: performance.now(),
      retriesLeft,
      isAdded: false,
      isSettled: false,
      missingPasses: 0,
      abortTimer: undefined,
    };
    // Registered before the job exists: its end may be read before add() returns.
    this.#calls.set(jobId, call);
    group?.calls.add(call);
    const outstanding = (this.#outstanding.get(sessionKey) ?? 0) + 1;
    this.#outstanding.set(sessionKey, outstanding);
    try {
      if (group?.isAborted) {
        // Starts aborted on its node, as a queued local call of an aborted batch does.
        this.#startAbortBound(call);
        await this.#clients!.commands.set(this.#keys.abort(this.#coordinatorId, group.id), "1", "PX", 600_000);
      }
      const data = encodeJobData({
        tool: request.tool.name,
        fp: this.#toolset.fingerprints.get(request.tool.name)!,
        args: request.args,
        toolCallId: request.toolCallId,
        replyTo: this.#replyKey,
        ...(group === undefined ? {} : { abortKey: this.#keys.abort(this.#coordinatorId, group.id) }),
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
    this.#announceAbort(group);
  }

  /** Sets the group's abort key (read by calls that start later), then tells every node (for calls running now). */
  #announceAbort(group: CallGroup): void {
    const key = this.#keys.abort(this.#coordinatorId, group.id);
    this.#clients?.commands
      .multi()
      .set(key, "1", "PX", 600_000)
      .publish(this.#keys.cancelChannel, key)
      .exec()
      .catch(() => {}); // Redis down: the bound below ends the calls
  }

  /** A node that cannot be reached must not keep an aborted call running forever. */
  #startAbortBound(call: RemoteCall): void {
    call.abortTimer ??= this.#clock.setTimeout(() => {
      const limit = this.#abortGraceMs + this.#options.abortSlackMs;
      this.#settle(call, fault("TP_ERR_ABORTED", `Tool "${call.request.tool.name}" did not end within ${limit} ms of the abort on its fleet node`));
    }, this.#abortGraceMs + this.#options.abortSlackMs);
  }

  /**
   * No live node for the toolset: a mismatch if nodes serve a tool of that
   * name with other tools or for another pi (both pis named), else unavailable.
   */
  #unservedOutcome(name: string): WorkerCallOutcome {
    const other = this.#directory.otherToolsetOf(name);
    const ours = this.#toolset;
    if (other !== undefined && other.pi !== undefined && other.pi !== ours.pi) {
      // Rare and off the hot path: the tool modules are hashed again to tell "only the pi differs" apart.
      const isPiOnly = describeToolset(this.#tools, other.pi).hash === other.toolsetHash;
      return fault(
        "TP_ERR_TOOL_MISMATCH",
        `Tool "${name}" was not run: the fleet's nodes serve pi ${other.pi} (toolset ${other.toolsetHash.slice(0, 16)}) and this runtime follows pi ${ours.pi} (toolset ${ours.hash.slice(0, 16)}); ` +
          (isPiOnly ? `a fleet speaks one pi: start its nodes with --pi ${ours.pi}` : "they differ beyond the pi too (tools, or Node's major version)"),
      );
    }
    if (other !== undefined) {
      return fault(
        "TP_ERR_TOOL_MISMATCH",
        `Tool "${name}" was not run: the fleet's nodes serve other tools (toolset ${other.toolsetHash.slice(0, 16)}) than this runtime (toolset ${ours.hash.slice(0, 16)})`,
      );
    }
    return fault("TP_ERR_FLEET_UNAVAILABLE", `Tool "${name}" was not run: no live fleet node serves this runtime's tools (toolset ${this.#toolset.hash.slice(0, 16)})`);
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
    await withTimeout(this.#lookAtNodes(), this.#options.redisTimeoutMs).catch(() => {});
    void readReplyStream({
      reader: clients.reader,
      key: this.#replyKey,
      onEntry: (entry) => this.#onReply(entry),
      trim: (lastId) => void clients.commands.xtrim(this.#replyKey, "MINID", lastId).catch(() => {}),
      isDone: () => this.#isClosed && this.#calls.size === 0,
      isStopped: () => this.#shutdown !== undefined,
    });
    const every = (ms: number, task: () => void) => {
      const timer = setInterval(task, ms);
      timer.unref();
      this.#timers.push(timer);
    };
    every(Math.min(1_000, this.#options.stalledIntervalMs), () => void this.#lookAtNodes().then(() => this.#dropUnserved(), () => {}));
    every(this.#options.stalledIntervalMs, () => void this.#watch());
    // A Redis that stops answering without closing the connection: a PING that
    // times out counts as lost, and the connection is made anew.
    every(this.#options.redisTimeoutMs, () => {
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
    if (entry.kind === "update") {
      call.request.onUpdate?.(entry.partial as never);
      return;
    }
    const overhead = (performance.now() - call.sentAt - entry.executionMs) / 1_000;
    this.#settle(call, entry.outcome, Math.max(0, overhead));
  }

  #onStalled(jobId: string): void {
    const call = this.#calls.get(jobId);
    if (call === undefined || call.isSettled) return;
    // The stalled job is back in the queue with a deferred failure: remove it
    // so that no node even fetches it (it would not run it anyway).
    this.#clients?.queue.remove(jobId).catch(() => {});
    this.#onNodeLost(call);
  }

  #onFailed(jobId: string, failedReason: string): void {
    const call = this.#calls.get(jobId);
    if (call === undefined || call.isSettled) return;
    // BullMQ 6.7: "job stalled more than allowable limit", "job started more than allowable limit".
    if (/stalled|attempts started|started more than allowable/i.test(failedReason)) this.#onNodeLost(call);
    else this.#settle(call, fault("TP_ERR_WORKER_CRASH", `Tool "${call.request.tool.name}" failed on its fleet node: ${failedReason}`));
  }

  #onNodeLost(call: RemoteCall): void {
    const name = call.request.tool.name;
    if (call.retriesLeft > 0 && !this.#isClosed && call.group?.isAborted !== true) {
      // Idempotent: running it again is harmless. Partials of the lost attempt stay delivered.
      this.#forget(call);
      const lost = this.#nodeLostOutcome(call);
      void this.run(call.request, call.retriesLeft - 1).then((outcome) =>
        // A resubmission that never reached a node (none left, Redis gone, closed) ends as the loss it is.
        call.resolve(isUnsubmitted(outcome) ? lost : outcome),
      );
      return;
    }
    this.#settle(call, this.#nodeLostOutcome(call));
  }

  #nodeLostOutcome(call: RemoteCall): WorkerCallOutcome {
    const seconds = ((performance.now() - call.sentAt) / 1_000).toFixed(1);
    return fault(
      "TP_ERR_NODE_LOST",
      `Tool "${call.request.tool.name}": the fleet node running the call was lost after ${seconds} s; the call may have run partly or fully`,
    );
  }

  /**
   * The backstop for lost signals (QueueEvents is best-effort): a call whose
   * job has gone, or failed, with no end on the reply stream, twice in a row,
   * was lost with its node.
   */
  async #watch(): Promise<void> {
    const queue = this.#clients?.queue;
    // A slow pass (Redis busy) must not overlap the next: each pass counts once.
    if (queue === undefined || !this.#isRedisUp || this.#isWatching) return;
    this.#isWatching = true;
    try {
      await this.#watchPass(queue);
    } finally {
      this.#isWatching = false;
    }
  }

  async #watchPass(queue: CoordinatorClients["queue"]): Promise<void> {
    const limit = this.#options.lockDurationMs + 2 * this.#options.stalledIntervalMs;
    const now = performance.now();
    for (const call of [...this.#calls.values()]) {
      if (call.isSettled || !call.isAdded || now - call.sentAt < limit) continue;
      const state = await queue.getJobState(call.jobId).catch(() => "error");
      if (state === "unknown" || state === "failed" || state === "completed") {
        call.missingPasses += 1;
        if (call.missingPasses >= 2) this.#onNodeLost(call);
      } else call.missingPasses = 0;
    }
  }

  /** Reads the node registry, while Redis is up. */
  async #lookAtNodes(): Promise<void> {
    if (this.#clients !== undefined && this.#isRedisUp) await this.#directory.refresh(this.#clients.commands);
  }

  /** No node for `noNodeGraceMs`: calls still waiting in the queue are taken back and end unavailable. */
  #dropUnserved(): void {
    if (this.#directory.unservedForMs <= this.#options.noNodeGraceMs) return;
    for (const call of [...this.#calls.values()]) {
      if (call.isSettled || !call.isAdded) continue;
      // remove() fails for a job a node holds: that one is left to the stalled check.
      this.#clients?.queue
        .remove(call.jobId)
        .then((removed) => {
          if (removed === 1) this.#settle(call, this.#unservedOutcome(call.request.tool.name));
        })
        .catch(() => {});
    }
  }

  #onRedisLost(): void {
    if (!this.#isRedisUp) return;
    this.#isRedisUp = false;
    this.#redisLostTimer = this.#clock.setTimeout(() => {
      for (const call of [...this.#calls.values()]) {
        this.#settle(
          call,
          fault(
            "TP_ERR_FLEET_UNAVAILABLE",
            `Tool "${call.request.tool.name}": Redis at ${this.#redisHost()} was unreachable for ${this.#options.redisTimeoutMs} ms while the call was in the fleet; the call may have run partly or fully`,
          ),
        );
      }
    }, this.#options.redisTimeoutMs);
  }

  #onRedisBack(): void {
    if (this.#redisLostTimer !== undefined) this.#clock.clearTimeout(this.#redisLostTimer);
    this.#redisLostTimer = undefined;
    this.#isRedisUp = true;
  }

  #redisHost(): string {
    const url = new URL(this.#options.redis);
    return `${url.hostname}:${url.port || 6379}`;
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
    for (const timer of this.#timers) clearInterval(timer);
    if (this.#redisLostTimer !== undefined) this.#clock.clearTimeout(this.#redisLostTimer);
    await this.#clients?.close(this.#replyKey, this.#options.redisTimeoutMs);
  }
}

function fault(code: ErrorCode, message: string): WorkerCallOutcome {
  return { kind: "error", code, message };
}

/** Outcomes of a call that was turned away before it reached Redis (no node, Redis gone, closed, full). */
function isUnsubmitted(outcome: WorkerCallOutcome): boolean {
  return outcome.kind === "error" && (outcome.code === "TP_ERR_FLEET_UNAVAILABLE" || outcome.code === "TP_ERR_CLOSED" || outcome.code === "TP_ERR_QUEUE_FULL");
}
