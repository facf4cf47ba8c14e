/** The source of `GET /v1/pool/events`: listens only while watched, and shows what the pools' events say (begun from their threads), never a poll. */
import type { ServerResponse } from "node:http";

import { errorCodes } from "../../errors.js";
import type { EventMeta, ToolExecutionEndEvent, ToolExecutionStartEvent } from "../../events.js";
import type { Runtime } from "../../runtime.js";
import type { PoolCallEvent, PoolThreadEvent } from "../../contracts/pool-events.js";
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

const poolEventsIntervalMs = 250;

/** A snapshot goes out this often even if nothing changed: the stream's heartbeat. */
const snapshotHeartbeatMs = 5000;

const retiredThreadsKept = 16;

const sessionsListed = 64;

/** Every call ends with an event, so the runtime bounds the calls tracked; this bound holds whatever happens. */
const trackedMost = 16_384;

interface LiveCall {
  readonly batchId: string;
  readonly toolCallId: string;
  readonly tool: string;
  readonly session: string | undefined;
  readonly startedAt: number;
}

interface PoolCallState {
  readonly pool: string;
  readonly batchId: string | undefined;
  readonly toolCallId: string;
  readonly tool: string;
  readonly session: string | undefined;
  isRunning: boolean;
  threadId: number | undefined;
  startedAt: number;
}

export interface PoolEventsDiagnosis {
  /** Whether the hub listens to the runtime and takes snapshots (only while someone watches). */
  isAttached: boolean;
  watchers: PoolEventClientState[];
}

/**
 * Fans the runtime's events and periodic snapshots out to every watcher. With none it holds no listener and no timer,
 * so an unwatched view costs nothing; everything it keeps is bounded.
 */
export class PoolEventHub {
  readonly #runtime: Runtime;
  readonly #stalledWatcherMs: number;
  readonly #maxWatchers: number;
  readonly #toolNames: string[];
  readonly #clients = new Set<PoolEventClient>();
  #timer: NodeJS.Timeout | undefined;
  /** Everything below lives only while attached. */
  #liveCalls = new Map<string, LiveCall>();
  #poolCalls = new Map<string, PoolCallState>();
  #tallies: PoolTallies;
  #threads = new Map<string, { pool: string; threadId: number }>();
  /** Without its time: an unchanged pool is not sent again at once. */
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
  readonly #onPoolEvent = (event: PoolCallEvent): void => {
    const key = `${event.pool}\0${event.seq}`;
    if (event.type === "ended") {
      this.#poolCalls.delete(key);
      return;
    }
    let call = this.#poolCalls.get(key);
    if (call === undefined) {
      call = {
        pool: event.pool,
        batchId: event.batchId,
        toolCallId: event.toolCallId,
        tool: event.tool,
        session: event.sessionKey === undefined ? undefined : cut(event.sessionKey, 256),
        isRunning: false,
        threadId: undefined,
        startedAt: 0,
      };
      setBounded(this.#poolCalls, key, call);
    }
    if (event.type === "started") {
      call.isRunning = true;
      call.threadId = event.threadId;
      call.startedAt = event.at;
    }
  };
  readonly #onThreadEvent = (event: PoolThreadEvent): void => {
    const key = `${event.pool}\0${event.threadId}`;
    if (event.change === "ready") {
      setBounded(this.#threads, key, { pool: event.pool, threadId: event.threadId });
      return;
    }
    if (!this.#threads.delete(key)) return;
    // Shown as retired, with the call it ran when it went (a crash: that call's end comes next).
    const running = this.#callStates().running.get(key);
    this.#retired.push({
      pool: event.pool,
      threadId: event.threadId,
      state: "retired",
      ...(running === undefined ? {} : { call: runningCall(running) }),
    });
    if (this.#retired.length > retiredThreadsKept) this.#retired.shift();
  };
  readonly #onPoolError = (error: unknown): void => {
    const code = (error as { code?: unknown } | null)?.code;
    this.#tallies.addFault({
      at: Date.now(),
      ...(typeof code === "string" && code in errorCodes ? { code } : {}),
      message: cut(error instanceof Error ? error.message : String(error), 200),
    });
  };

  /** @param limits.stalledWatcherMs How long a watcher's socket may take nothing before its connection is reset. */
  constructor(runtime: Runtime, limits: { stalledWatcherMs: number; maxWatchers: number }) {
    this.#runtime = runtime;
    this.#stalledWatcherMs = limits.stalledWatcherMs;
    this.#maxWatchers = limits.maxWatchers;
    this.#toolNames = runtime.agentTools().map((tool) => tool.name);
    this.#tallies = new PoolTallies(this.#toolNames);
  }

  get watcherCount(): number {
    return this.#clients.size;
  }

  get maxWatchers(): number {
    return this.#maxWatchers;
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

  close(): void {
    for (const client of this.#clients) client.end();
  }

  diagnose(): PoolEventsDiagnosis {
    return { isAttached: this.#timer !== undefined, watchers: [...this.#clients].map((client) => client.state) };
  }

  #attach(): void {
    const runtime = this.#runtime;
    runtime.on("tool_execution_start", this.#onCallStart);
    runtime.on("tool_execution_end", this.#onCallEnd);
    runtime.on("pool_error", this.#onPoolError);
    runtime.poolEvents.on(this.#onPoolEvent);
    runtime.poolEvents.onThread(this.#onThreadEvent);
    for (const { pool, threadId, running } of runtime.poolEvents.threads()) {
      setBounded(this.#threads, `${pool}\0${threadId}`, { pool, threadId });
      if (running !== undefined) this.#onPoolEvent(running);
    }
    this.#timer = setInterval(() => this.#tick(), poolEventsIntervalMs);
    // A watcher is no reason to keep the process alive.
    this.#timer.unref();
  }

  #detach(): void {
    const runtime = this.#runtime;
    runtime.off("tool_execution_start", this.#onCallStart);
    runtime.off("tool_execution_end", this.#onCallEnd);
    runtime.off("pool_error", this.#onPoolError);
    runtime.poolEvents.off(this.#onPoolEvent);
    runtime.poolEvents.offThread(this.#onThreadEvent);
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#liveCalls = new Map();
    this.#poolCalls = new Map();
    this.#tallies = new PoolTallies(this.#toolNames);
    this.#threads = new Map();
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
    const states = this.#callStates();
    const threads: PoolThreadView[] = [];
    for (const [key, { pool, threadId }] of this.#threads) {
      const running = states.running.get(key);
      threads.push({
        pool,
        threadId,
        state: running === undefined ? "idle" : "busy",
        ...(running === undefined ? {} : { call: runningCall(running) }),
      });
    }
    const sessions = this.#sessionViews(states.waiting, now);
    const stats = this.#runtime.poolStats;
    const fleet = this.#runtime.fleetStats;
    return {
      type: "snapshot",
      at: now,
      stats: stats ?? null,
      fleet: fleet ?? null,
      threads: [...threads, ...this.#retired],
      sessions: sessions.slice(0, sessionsListed),
      sessionsOmitted: Math.max(0, sessions.length - sessionsListed),
      tools: this.#tallies.toolViews(),
      faults: this.#tallies.faultViews(),
    };
  }

  /** The call each thread runs is the one that started last: a call's end may still be on its way as its thread takes the next. */
  #callStates(): { waiting: Set<string>; running: Map<string, PoolCallState> } {
    const waiting = new Set<string>();
    const running = new Map<string, PoolCallState>();
    for (const call of this.#poolCalls.values()) {
      if (!call.isRunning) {
        if (call.batchId !== undefined) waiting.add(callKey(call.batchId, call.toolCallId));
        continue;
      }
      const key = `${call.pool}\0${call.threadId}`;
      const other = running.get(key);
      if (other === undefined || other.startedAt <= call.startedAt) running.set(key, call);
    }
    return { waiting, running };
  }

  #sessionViews(waiting: Set<string>, now: number): PoolSessionView[] {
    const views = new Map<string, PoolSessionView>();
    // Calls waiting for a cap have started (their start event is out) but reached no pool yet.
    const capped = new Set<string>();
    if (!this.#runtime.isClosed) for (const wait of this.#runtime.capWaits()) capped.add(callKey(wait.batchId, wait.toolCallId));
    for (const call of this.#liveCalls.values()) {
      const key = call.session === undefined ? `\0${call.batchId}` : call.session;
      let view = views.get(key);
      if (view === undefined) {
        view = {
          ...(call.session === undefined ? { batchId: call.batchId } : { session: call.session }),
          waiting: 0,
          capped: 0,
          running: 0,
          longestWaitMs: 0,
        };
        views.set(key, view);
      }
      const id = callKey(call.batchId, call.toolCallId);
      if (capped.has(id)) view.capped += 1;
      else if (waiting.has(id)) view.waiting += 1;
      else {
        view.running += 1;
        continue;
      }
      view.longestWaitMs = Math.max(view.longestWaitMs, now - call.startedAt);
    }
    return [...views.values()].sort((a, b) => b.waiting + b.capped - (a.waiting + a.capped) || b.running - a.running);
  }
}

function runningCall(call: PoolCallState): PoolRunningCall {
  return {
    tool: call.tool,
    toolCallId: cut(call.toolCallId, 256),
    ...(call.batchId === undefined ? {} : { batchId: call.batchId }),
    ...(call.session === undefined ? {} : { session: call.session }),
  };
}

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

/** Control characters become "�" so that each takes at most two characters in JSON, never six (`\u0001`): records stay bounded. */
function cut(text: string, length: number): string {
  const clipped = text.length <= length ? text : `${text.slice(0, length - 1)}…`;
  return clipped.replace(controlCharacters, "\ufffd");
}

const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
