/**
 * The source of `GET /v1/pool/events`: listens to the runtime and looks at
 * its pools only while at least one client watches.
 *
 * @module
 */
import type { ServerResponse } from "node:http";

import { errorCodes } from "../../errors.js";
import type { EventMeta, ToolExecutionEndEvent, ToolExecutionStartEvent } from "../../events.js";
import type { Runtime } from "../../runtime.js";
import type { PoolCallDiagnosis } from "../../contracts/pool-contract.js";
import { toJsonText } from "../../http/json-text.js";
import { maxPendingCalls, PoolEventClient, type PoolEventClientState } from "./pool-event-client.js";
import type {
  PoolCallRecord,
  PoolEventsHelloFrame,
  PoolRunningCall,
  PoolSessionView,
  PoolSnapshotFrame,
  PoolThreadView,
} from "./pool-event-frames.js";
import { PoolTallies } from "./pool-tallies.js";

/** Milliseconds between two snapshots (and two flushes of ended calls). */
const poolEventsIntervalMs = 250;

/** Milliseconds after which a snapshot goes out even if nothing changed: the stream's heartbeat. */
const snapshotHeartbeatMs = 5000;

/** Most watchers at once; one more is answered 503. */
export const maxPoolEventWatchers = 32;

/** Retired threads kept in snapshots. */
const retiredThreadsKept = 16;

/** Sessions listed in a snapshot. */
const sessionsListed = 64;

/**
 * Calls under way that the hub tracks, at most. Every call ends with an
 * event, so the runtime bounds them; this bound holds whatever happens.
 */
const trackedMost = 16_384;

/** A call between its `tool_execution_start` and its end. */
interface LiveCall {
  readonly batchId: string;
  readonly toolCallId: string;
  readonly tool: string;
  readonly session: string | undefined;
  readonly startedAt: number;
}

/** What {@link PoolEventHub.diagnose} returns. */
export interface PoolEventsDiagnosis {
  /** Whether the hub listens to the runtime and takes snapshots (only while someone watches). */
  isAttached: boolean;
  watchers: PoolEventClientState[];
}

/**
 * Fans the runtime's events and periodic snapshots of its pools out to every
 * watcher. With no watcher it holds no listener and no timer: the pool pays
 * nothing for a view no one looks at. Everything it keeps is bounded: the
 * calls under way (which the runtime bounds), the tallies (per
 * tool of the runtime), a few retired threads and faults, and per watcher
 * what {@link PoolEventClient} holds.
 */
export class PoolEventHub {
  readonly #runtime: Runtime;
  /** Milliseconds a watcher's stream may stay full before its connection is reset. */
  readonly #stalledWatcherMs: number;
  readonly #toolNames: string[];
  readonly #clients = new Set<PoolEventClient>();
  #timer: NodeJS.Timeout | undefined;
  /** Everything below lives only while attached. */
  #liveCalls = new Map<string, LiveCall>();
  #tallies: PoolTallies;
  /** Threads seen in earlier snapshots, to show the ones that went as retired. */
  #lastThreads = new Map<number, PoolThreadView>();
  /** The last snapshot sent, without its time, and when: an unchanged pool is not sent again at once. */
  #lastSnapshotContent = "";
  #lastSnapshotAt = 0;
  #retired: PoolThreadView[] = [];

  readonly #onCallStart = (event: ToolExecutionStartEvent, meta: EventMeta): void => {
    setBounded(this.#liveCalls, callKey(meta.batchId, event.toolCallId), {
      batchId: meta.batchId,
      toolCallId: event.toolCallId,
      tool: event.toolName,
      session: meta.sessionKey === undefined ? undefined : cut(meta.sessionKey, 256),
      startedAt: Date.now(),
    });
  };
  readonly #onCallEnd = (event: ToolExecutionEndEvent, meta: EventMeta): void => {
    this.#liveCalls.delete(callKey(meta.batchId, event.toolCallId));
    const record = callRecord(event, meta, meta.sessionKey === undefined ? undefined : cut(meta.sessionKey, 256));
    this.#tallies.addCall(record);
    for (const client of this.#clients) client.pushCall(record);
  };
  readonly #onPoolError = (error: unknown): void => {
    const code = (error as { code?: unknown } | null)?.code;
    this.#tallies.addFault({
      at: Date.now(),
      ...(typeof code === "string" && code in errorCodes ? { code } : {}),
      message: cut(error instanceof Error ? error.message : String(error), 200),
    });
  };

  /** @param stalledWatcherMs Milliseconds a watcher's stream may stay full (the watcher reading nothing) before its connection is reset, on the runtime's clock. */
  constructor(runtime: Runtime, stalledWatcherMs: number) {
    this.#runtime = runtime;
    this.#stalledWatcherMs = stalledWatcherMs;
    this.#toolNames = runtime.agentTools().map((tool) => tool.name);
    this.#tallies = new PoolTallies(this.#toolNames);
  }

  /** How many watch now. */
  get watcherCount(): number {
    return this.#clients.size;
  }

  /** Starts streaming to `response` (its headers already sent); it stops when the response closes. */
  addWatcher(response: ServerResponse): void {
    const client = new PoolEventClient(response, this.#stalledWatcherMs, this.#runtime.options.clock);
    if (this.#clients.size === 0) this.#attach();
    this.#clients.add(client);
    const hello: PoolEventsHelloFrame = { type: "hello", intervalMs: poolEventsIntervalMs, maxPendingCalls, tools: this.#toolNames };
    client.writeFrame("hello", hello);
    client.offerSnapshot(this.#snapshotText());
    client.flush();
    response.once("close", () => {
      client.end();
      this.#clients.delete(client);
      if (this.#clients.size === 0) this.#detach();
    });
  }

  /** Ends every stream (the server is closing). */
  close(): void {
    for (const client of this.#clients) client.end();
  }

  /** The hub's state, for diagnosis and tests. */
  diagnose(): PoolEventsDiagnosis {
    return { isAttached: this.#timer !== undefined, watchers: [...this.#clients].map((client) => client.state) };
  }

  #attach(): void {
    const runtime = this.#runtime;
    runtime.on("tool_execution_start", this.#onCallStart);
    runtime.on("tool_execution_end", this.#onCallEnd);
    runtime.on("pool_error", this.#onPoolError);
    this.#timer = setInterval(() => this.#tick(), poolEventsIntervalMs);
    // A watcher is no reason to keep the process alive.
    this.#timer.unref();
  }

  #detach(): void {
    const runtime = this.#runtime;
    runtime.off("tool_execution_start", this.#onCallStart);
    runtime.off("tool_execution_end", this.#onCallEnd);
    runtime.off("pool_error", this.#onPoolError);
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#liveCalls = new Map();
    this.#tallies = new PoolTallies(this.#toolNames);
    this.#lastThreads = new Map();
    this.#retired = [];
    this.#lastSnapshotContent = "";
  }

  #tick(): void {
    if (this.#runtime.isClosed) {
      // Nothing more will happen: the watchers' streams end.
      this.close();
      return;
    }
    const snapshot = this.#snapshot();
    // An unchanged pool sends no snapshot, but one goes out every few seconds all the same.
    const { at, ...content } = snapshot;
    const contentText = toJsonText(content);
    const isDue = contentText !== this.#lastSnapshotContent || at - this.#lastSnapshotAt >= snapshotHeartbeatMs;
    if (isDue) {
      this.#lastSnapshotContent = contentText;
      this.#lastSnapshotAt = at;
    }
    const text = isDue ? `event: snapshot\ndata: ${toJsonText(snapshot)}\n\n` : undefined;
    for (const client of this.#clients) {
      if (text !== undefined) client.offerSnapshot(text);
      client.flush();
    }
  }

  #snapshotText(): string {
    return `event: snapshot\ndata: ${toJsonText(this.#snapshot())}\n\n`;
  }

  #snapshot(): PoolSnapshotFrame {
    const now = Date.now();
    const diagnosis = this.#runtime.isClosed ? { pools: [] } : this.#runtime.diagnose();
    const poolCalls = diagnosis.pools.flatMap((pool) => pool.calls);
    const states = this.#matchLiveCalls(poolCalls);
    const threads: PoolThreadView[] = [];
    const seen = new Map<number, PoolThreadView>();
    for (const pool of diagnosis.pools) {
      for (const generation of pool.generations) {
        for (const thread of generation.threads) {
          const running = poolCalls.find((call) => call.state === "running" && call.threadId === thread.threadId);
          const view: PoolThreadView = {
            pool: pool.pool,
            threadId: thread.threadId,
            state: generation.isRetired ? "retired" : !thread.isBooted ? "starting" : running !== undefined ? "busy" : "idle",
            ...(running === undefined ? {} : { call: this.#runningCall(running, states.running.get(running)) }),
          };
          threads.push(view);
          seen.set(view.threadId, view);
        }
      }
    }
    for (const [threadId, view] of this.#lastThreads) {
      if (!seen.has(threadId) && view.state !== "retired") {
        this.#retired.push({ ...view, state: "retired" });
        if (this.#retired.length > retiredThreadsKept) this.#retired.shift();
      }
    }
    this.#lastThreads = seen;
    const sessions = this.#sessionViews(states.waiting, now);
    const stats = this.#runtime.poolStats;
    const fleet = this.#runtime.fleetStats;
    return {
      type: "snapshot",
      at: now,
      stats: stats ?? null,
      fleet: fleet ?? null,
      threads: [...threads, ...this.#retired.filter((view) => !seen.has(view.threadId))],
      sessions: sessions.slice(0, sessionsListed),
      sessionsOmitted: Math.max(0, sessions.length - sessionsListed),
      tools: this.#tallies.toolViews(),
      faults: this.#tallies.faultViews(),
    };
  }

  /**
   * Which live calls the pools hold waiting and which running: the pools
   * know a call by its tool and id only, so calls of several batches with
   * one id are told apart by their order.
   */
  #matchLiveCalls(poolCalls: PoolCallDiagnosis[]): { waiting: Set<LiveCall>; running: Map<PoolCallDiagnosis, LiveCall> } {
    const byId = new Map<string, LiveCall[]>();
    for (const call of this.#liveCalls.values()) {
      const key = callKey(call.tool, call.toolCallId);
      const list = byId.get(key);
      if (list === undefined) byId.set(key, [call]);
      else list.push(call);
    }
    const waiting = new Set<LiveCall>();
    const running = new Map<PoolCallDiagnosis, LiveCall>();
    for (const poolCall of poolCalls) {
      const live = byId.get(callKey(poolCall.tool, poolCall.toolCallId))?.shift();
      if (live === undefined) continue;
      if (poolCall.state === "waiting") waiting.add(live);
      else running.set(poolCall, live);
    }
    return { waiting, running };
  }

  #runningCall(poolCall: PoolCallDiagnosis, live: LiveCall | undefined): PoolRunningCall {
    return {
      tool: poolCall.tool,
      toolCallId: cut(poolCall.toolCallId, 256),
      ...(live === undefined ? {} : { batchId: live.batchId }),
      ...(live?.session === undefined ? {} : { session: live.session }),
    };
  }

  /** Sessions with calls under way, most waiting first. */
  #sessionViews(waiting: Set<LiveCall>, now: number): PoolSessionView[] {
    const views = new Map<string, PoolSessionView>();
    for (const call of this.#liveCalls.values()) {
      const key = call.session === undefined ? `\0${call.batchId}` : call.session;
      let view = views.get(key);
      if (view === undefined) {
        view = { ...(call.session === undefined ? { batchId: call.batchId } : { session: call.session }), waiting: 0, running: 0, longestWaitMs: 0 };
        views.set(key, view);
      }
      if (waiting.has(call)) {
        view.waiting += 1;
        view.longestWaitMs = Math.max(view.longestWaitMs, now - call.startedAt);
      } else {
        view.running += 1;
      }
    }
    return [...views.values()].sort((a, b) => b.waiting - a.waiting || b.running - a.running);
  }
}

/** The stream's record of an ended call. */
function callRecord(event: ToolExecutionEndEvent, meta: EventMeta, session: string | undefined): PoolCallRecord {
  const details = event.result.details as { code?: unknown } | undefined;
  const code = event.isError && typeof details?.code === "string" && details.code in errorCodes ? details.code : undefined;
  const text = event.result.content?.find((block) => block.type === "text")?.text;
  return {
    batchId: meta.batchId,
    toolCallId: cut(event.toolCallId, 256),
    tool: cut(event.toolName, 128),
    ...(session === undefined ? {} : { session }),
    outcome: !event.isError ? "ok" : code === undefined ? "error" : "fault",
    ...(code === undefined ? {} : { code }),
    ...(event.isError && text !== undefined ? { message: cut(text, 200) } : {}),
    ...(meta.threadId === undefined ? {} : { threadId: meta.threadId }),
    ...(meta.node === undefined ? {} : { node: cut(meta.node, 128) }),
    ...(meta.queueWaitMs === undefined ? {} : { queueWaitMs: tenths(meta.queueWaitMs) }),
    ...(meta.runMs === undefined ? {} : { runMs: tenths(meta.runMs) }),
    endedAt: Date.now(),
  };
}

/** `map.set(key, value)`, first dropping the oldest entry when the map holds {@link trackedMost}. */
function setBounded<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= trackedMost && !map.has(key)) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/** Milliseconds to a tenth: finer is noise, and costs bytes in every frame. */
function tenths(value: number): number {
  return Math.round(value * 10) / 10;
}

function callKey(first: string, second: string): string {
  return `${first}\0${second}`;
}

/**
 * At most `length` characters of `text`, control characters as "�": in a
 * frame's JSON each character then takes at most two (`"` and `\\` are
 * escaped), never the six of `\u0001`, so a record's size is bounded.
 */
function cut(text: string, length: number): string {
  const clipped = text.length <= length ? text : `${text.slice(0, length - 1)}…`;
  return clipped.replace(controlCharacters, "\ufffd");
}

const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
