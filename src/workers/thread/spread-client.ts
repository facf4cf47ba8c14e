/**
 * `ctx.spread` in the worker: posts a call's spread request to the pool at
 * once (so parts start while the call goes on) and resolves with the pool's
 * answer, which comes on this thread's port.
 *
 * @module
 */
import { parentPort, threadId } from "node:worker_threads";

import { describeThrown } from "../../errors.js";
import type { SpreadOutcome } from "../../types.js";
import { maxSpreadInputs, spreadTag, type SpreadReply, type SpreadRequest } from "../protocol.js";

const waiting = new Map<number, { seq: number; resolve: (outcomes: SpreadOutcome[]) => void; reject: (error: Error) => void }>();
let lastId = 0;

export function takeSpreadReply(reply: SpreadReply): void {
  const entry = waiting.get(reply.id);
  if (entry === undefined) return;
  waiting.delete(reply.id);
  if (reply.outcomes !== undefined) entry.resolve(reply.outcomes);
  else entry.reject(new Error(`ctx.spread: ${reply.error ?? "no answer"}`));
}

/** Nothing is kept for answers still due to an ended call. */
export function dropSpreadsOf(seq: number): void {
  if (waiting.size === 0) return;
  for (const [id, entry] of waiting) if (entry.seq === seq) waiting.delete(id);
}

export function requestSpread(seq: number, exportName: unknown, inputs: unknown): Promise<SpreadOutcome[]> {
  if (typeof exportName !== "string" || exportName === "") {
    return Promise.reject(new TypeError("ctx.spread: exportName must be a non-empty string"));
  }
  if (!Array.isArray(inputs) || inputs.length > maxSpreadInputs) {
    return Promise.reject(new TypeError(`ctx.spread: inputs must be an array of at most ${maxSpreadInputs} inputs`));
  }
  if (inputs.length === 0) return Promise.resolve([]);
  const id = ++lastId;
  return new Promise<SpreadOutcome[]>((resolve, reject) => {
    const request: SpreadRequest = { [spreadTag]: true, seq, id, threadId, exportName, inputs };
    try {
      parentPort!.postMessage(request);
    } catch (error) {
      reject(new Error(`ctx.spread: the inputs cannot be cloned across threads: ${describeThrown(error)}`));
      return;
    }
    waiting.set(id, { seq, resolve, reject });
  });
}
