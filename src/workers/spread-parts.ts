/**
 * `SpreadParts`: a worker pool's scheduling of spread calls' parts (`ctx.spread`).
 * @module
 */
import type { WorkerCallOutcome, WorkerCallRequest } from "../contracts/pool-contract.js";
import type { CallBook } from "./call-book.js";
import type { CallQueue } from "./call-queue.js";
import type { CallSignals } from "./call-signals.js";
import type { CallTimers } from "./call-timers.js";
import type { PoolCall } from "./pool-call.js";
import type { SpreadReply, SpreadRequest } from "./protocol.js";
import type { SessionAdmission } from "./session-admission.js";
import { SpreadHost, type SpreadPart } from "./spread-host.js";
import type { ToolNumbering } from "./tool-numbering.js";

export interface PartPool {
  /** A new call, in the book and not yet submitted. */
  enqueue(request: WorkerCallRequest, session: unknown, resolve: (outcome: WorkerCallOutcome) => void): PoolCall;
  submit(call: PoolCall): void;
  abort(call: PoolCall): void;
  settle(call: PoolCall, outcome: WorkerCallOutcome): void;
  /** Idle threads that no waiting call needs; 0 while threads cannot be kept up. */
  spareThreads(): number;
  isClosed(): boolean;
  send(threadId: number, reply: SpreadReply): void;
}

export interface PartSettings {
  book: CallBook<PoolCall>;
  queue: CallQueue<PoolCall>;
  admission: SessionAdmission<PoolCall> | undefined;
  tools: ToolNumbering;
  signals: CallSignals;
  timers: CallTimers;
  maxThreads: number;
}

/**
 * Parts go to idle threads only. A waiting call of another session asks
 * running parts to give their threads back; a part that does not within an
 * abort's grace (stuck in one step) is preempted, and its caller does the work.
 */
export class SpreadParts {
  readonly #settings: PartSettings;
  readonly #pool: PartPool;
  readonly #host: SpreadHost;

  constructor(settings: PartSettings, pool: PartPool) {
    this.#settings = settings;
    this.#pool = pool;
    const { book } = settings;
    this.#host = new SpreadHost({
      isRunning: (seq, threadId) => {
        const call = book.get(seq);
        return (
          call !== undefined && (call.phase === "running" || call.phase === "finished") && (threadId === undefined || call.threadId === threadId)
        );
      },
      partSlots: (seq) => this.#partSlots(seq),
      isClosed: () => pool.isClosed(),
      runPart: (parentSeq, exportName, input) => this.#runPart(book.get(parentSeq)!, exportName, input),
      send: (threadId, reply) => pool.send(threadId, reply),
    });
  }

  onRequest(request: SpreadRequest): void {
    this.#host.onRequest(request);
  }

  onCallAborted(seq: number): void {
    this.#host.onCallAborted(seq);
  }

  onCallEnded(seq: number): void {
    this.#host.onCallEnded(seq);
  }

  /** A call of `session` waits: other sessions' running parts are asked to give their threads back. */
  askToYield(session: unknown): void {
    const { book, signals, timers } = this.#settings;
    for (const seq of this.#host.parts) {
      const part = book.get(seq);
      if (part === undefined || part.phase !== "running" || part.session === session) continue;
      signals.askToYield(seq);
      timers.startYield(part);
    }
  }

  /** Whether a part that did not yield is preempted: a call of another session still waits. */
  shouldPreempt(part: PoolCall): boolean {
    // An aborted part has its abort's own grace, whole, from the abort on.
    if (part.isAborted) return false;
    const { queue } = this.#settings;
    return queue.sessionsWaiting - (queue.hasSession(part.session) ? 1 : 0) > 0;
  }

  /** Spare threads, within the session's share of the pool and under its cap (parts run in the caller's session). */
  #partSlots(seq: number): number {
    const idle = this.#pool.spareThreads();
    if (idle === 0) return 0;
    const { book, admission, maxThreads } = this.#settings;
    const session = book.get(seq)?.session;
    const sessions = new Set<unknown>([session]);
    let own = 0;
    for (const call of book.values()) {
      sessions.add(call.session);
      if (call.session === session && call.phase !== "waiting" && call.phase !== "settled") own += 1;
    }
    const slots = Math.min(idle, Math.max(0, Math.ceil(maxThreads / sessions.size) - own));
    return admission === undefined ? slots : Math.min(slots, admission.room(session));
  }

  /** A call of its own in the caller's session, submitted at once. */
  #runPart(parent: PoolCall, exportName: string, input: unknown): SpreadPart {
    const pool = this.#pool;
    const tool = this.#settings.tools.partTool(parent.tool, exportName);
    // A slot of each of the caller's caps, or the part does not run.
    const partCaps = parent.request.partCaps;
    const release = partCaps?.take();
    if (partCaps !== undefined && release === undefined) throw new Error("a cap of the call is full");
    let call: PoolCall | undefined;
    const outcome = new Promise<WorkerCallOutcome>((resolve) => {
      const { toolCallId, batchId, sessionKey } = parent.request;
      call = pool.enqueue({ tool, toolCallId, args: input, batchId, sessionKey }, parent.session, resolve);
    });
    const part = call!;
    if (release !== undefined) void outcome.then(release);
    // Counted under the session's cap (partSlots left room for it), released when it settles.
    this.#settings.admission?.count(part.session);
    pool.submit(part);
    return {
      seq: part.seq,
      outcome,
      stop: () => {
        if (part.phase === "settled") return;
        if (part.phase !== "waiting") pool.abort(part);
        else
          pool.settle(part, {
            kind: "error",
            code: "TP_ERR_ABORTED",
            message: `${tool.name} was stopped before it ran: its call ended or was aborted`,
          });
      },
    };
  }
}
