/**
 * `ctx.spread` on the main thread: answers a call's request to run parts of
 * it on the pool's idle threads. The pool creates one host on the first
 * spread request it sees, so that pools whose tools never spread keep none.
 *
 * Rules:
 * - parts go only to threads idle at the request (no queue wait: an input
 *   that finds no idle thread is answered `ran: false` at once), at most
 *   {@link maxSpreadInputs} per request, and no more than the calling
 *   session's fair share of the pool's threads (the pool's `partSlots`);
 * - a running part is asked to give its thread back (`ctx.shouldYield()`)
 *   when a call of another session waits for a thread (the pool asks); one
 *   that has not within the pool's `abortGraceMs`, while such a call still
 *   waits, is preempted: its thread is terminated (and replaced), and its
 *   outcome is a `TP_ERR_ABORTED` error, so the calling call does its work;
 * - a part cannot spread further;
 * - a part is an ordinary pool call of the calling tool's module (its
 *   faults, time and abort handled as any call's), but its outcome, error or
 *   fault alike, becomes one outcome of the answer, never the calling call's
 *   failure;
 * - parts see their signal abort when the calling call is aborted, and are
 *   stopped when it ends (a part still queued ends at once);
 * - the answer goes once, when every part has ended, on the requesting
 *   thread's own port, and only while the calling call still runs.
 *
 * @module
 */
import type { SpreadOutcome } from "../types.js";
import type { WorkerCallOutcome } from "../contracts/pool-contract.js";
import { maxSpreadInputs, type SpreadReply, type SpreadRequest } from "./protocol.js";

/** A part the pool runs: its outcome, and how to stop it. */
export interface SpreadPart {
  readonly seq: number;
  readonly outcome: Promise<WorkerCallOutcome>;
  /** Aborts it (a queued part ends at once; a running one sees its signal abort, then is terminated after the grace period). */
  stop(): void;
}

/** What the host needs of the pool. */
interface SpreadPool {
  /** Whether call `seq` is running on a thread now (dispatched, not settled), on thread `threadId` if given. */
  isRunning(seq: number, threadId?: number): boolean;
  /** Parts call `seq` may start now: threads that would take a call at once, within its session's cap. */
  partSlots(seq: number): number;
  /** Whether the pool takes no new calls. */
  isClosed(): boolean;
  /** Runs `exportName(input)` of call `parentSeq`'s module as a call of its own, at once (no admission, no queue limit). */
  runPart(parentSeq: number, exportName: string, input: unknown): SpreadPart;
  /** Sends `reply` on thread `threadId`'s own port (nothing if the thread is gone). */
  send(threadId: number, reply: SpreadReply): void;
}

export class SpreadHost {
  readonly #pool: SpreadPool;
  /** Per calling call, its parts not yet ended. */
  readonly #parts = new Map<number, Set<SpreadPart>>();
  /** The sequence numbers of running parts. */
  readonly #partSeqs = new Set<number>();
  /** Calling calls that were aborted: a part started for them later starts aborted. */
  readonly #aborted = new Set<number>();

  constructor(pool: SpreadPool) {
    this.#pool = pool;
  }

  /** Whether call `seq` is a part of another call. */
  isPart(seq: number): boolean {
    return this.#partSeqs.has(seq);
  }

  /** The sequence numbers of the parts not yet ended. */
  get parts(): ReadonlySet<number> {
    return this.#partSeqs;
  }

  onRequest(request: SpreadRequest): void {
    const { seq, id, threadId } = request;
    const answer = (reply: Omit<SpreadReply, "id">): void => {
      // A call that has ended waits for nothing; its thread may serve another call by now.
      if (!this.#pool.isRunning(seq, threadId)) return;
      try {
        this.#pool.send(threadId, { id, ...reply });
      } catch (error) {
        // An outcome that cannot be cloned again: the call learns why instead.
        this.#pool.send(threadId, { id, error: `the parts' outcomes cannot be sent back: ${String(error)}` });
      }
    };
    if (typeof threadId !== "number" || typeof id !== "number") return;
    // Only the thread running the call may spread it: an answer says so to any other request.
    if (!this.#pool.isRunning(seq, threadId)) {
      this.#pool.send(threadId, { id, error: "the call is not running on this thread (it has ended)" });
      return;
    }
    if (this.#partSeqs.has(seq)) {
      answer({ error: "a part cannot spread further" });
      return;
    }
    const { exportName, inputs } = request;
    if (typeof exportName !== "string" || exportName === "" || !Array.isArray(inputs) || inputs.length > maxSpreadInputs) {
      answer({ error: `expected an export name and at most ${maxSpreadInputs} inputs` });
      return;
    }
    const notRun = (error: string): SpreadOutcome => ({ ok: false, error, ran: false });
    if (this.#pool.isClosed()) {
      answer({ outcomes: inputs.map(() => notRun("not run: the pool is closing")) });
      return;
    }
    const idle = this.#pool.partSlots(seq);
    const outcomes: SpreadOutcome[] = new Array(inputs.length);
    const running: Promise<void>[] = [];
    let parts = this.#parts.get(seq);
    for (let index = 0; index < inputs.length; index++) {
      if (index >= idle) {
        outcomes[index] = notRun("not run: no idle thread");
        continue;
      }
      let part: SpreadPart;
      try {
        part = this.#pool.runPart(seq, exportName, inputs[index]);
      } catch (error) {
        outcomes[index] = notRun(`not run: ${error instanceof Error ? error.message : String(error)}`);
        continue;
      }
      if (parts === undefined) this.#parts.set(seq, (parts = new Set()));
      parts.add(part);
      this.#partSeqs.add(part.seq);
      if (this.#aborted.has(seq)) part.stop();
      const own = parts;
      running.push(
        part.outcome.then((outcome) => {
          own.delete(part);
          this.#partSeqs.delete(part.seq);
          outcomes[index] = toSpreadOutcome(outcome);
        }),
      );
    }
    if (running.length === 0) {
      answer({ outcomes });
      return;
    }
    void Promise.all(running).then(() => answer({ outcomes }));
  }

  /** The calling call was aborted: so are its parts, and any it starts later. */
  onCallAborted(seq: number): void {
    if (!this.#pool.isRunning(seq) && !this.#parts.has(seq)) return;
    this.#aborted.add(seq);
    for (const part of this.#parts.get(seq) ?? []) part.stop();
  }

  /** Call `seq` has ended: its parts are stopped. */
  onCallEnded(seq: number): void {
    this.#aborted.delete(seq);
    const parts = this.#parts.get(seq);
    if (parts === undefined) return;
    this.#parts.delete(seq);
    for (const part of parts) part.stop();
  }
}

function toSpreadOutcome(outcome: WorkerCallOutcome): SpreadOutcome {
  if (outcome.kind === "ok") return { ok: true, value: outcome.result };
  const error = outcome.code === undefined ? outcome.message : `${outcome.code}: ${outcome.message}`;
  return { ok: false, error, ran: outcome.timing?.startedAt !== undefined };
}
