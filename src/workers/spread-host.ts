/**
 * `ctx.spread` on the main thread; its rules are in docs/guide.md. Created
 * on the first request, so pools whose tools never spread keep none. Parts
 * go only to threads idle at the request (never queued), and the answer goes
 * once, when every part has ended, only while the calling call still runs.
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
  stop(): void;
}

interface SpreadPool {
  /** Dispatched and not settled, on `threadId` if given. */
  isRunning(seq: number, threadId?: number): boolean;
  /** Threads that would take a call at once, within the session's fair share. */
  partSlots(seq: number): number;
  isClosed(): boolean;
  /** Starts at once: no admission, no queue limit. */
  runPart(parentSeq: number, exportName: string, input: unknown): SpreadPart;
  send(threadId: number, reply: SpreadReply): void;
}

export class SpreadHost {
  readonly #pool: SpreadPool;
  readonly #parts = new Map<number, Set<SpreadPart>>();
  readonly #partSeqs = new Set<number>();
  /** A part started later for one of these starts aborted. */
  readonly #aborted = new Set<number>();

  constructor(pool: SpreadPool) {
    this.#pool = pool;
  }

  isPart(seq: number): boolean {
    return this.#partSeqs.has(seq);
  }

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
        // An outcome that cannot be cloned: the call learns why instead.
        this.#pool.send(threadId, { id, error: `the parts' outcomes cannot be sent back: ${String(error)}` });
      }
    };
    if (typeof threadId !== "number" || typeof id !== "number") return;
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

  onCallAborted(seq: number): void {
    if (!this.#pool.isRunning(seq) && !this.#parts.has(seq)) return;
    this.#aborted.add(seq);
    for (const part of this.#parts.get(seq) ?? []) part.stop();
  }

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
