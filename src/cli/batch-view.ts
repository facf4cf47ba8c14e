/**
 * What the command line shows of a batch: a view receives the batch's events
 * while it runs, then its outcome.
 *
 * @module
 */
import type { BatchOutcome, EmitFunction } from "../index.js";

/**
 * A way of showing one batch. The runtime awaits `emit` like pi awaits its
 * sink; exactly one of `finish` (the batch ran) or `dispose` (it could not
 * run) is called last.
 */
export interface BatchView {
  /** Receives every event of the batch, in the runtime's order. */
  readonly emit: EmitFunction;
  /** Shows the outcome; `wallMs` is the batch's wall time in milliseconds. */
  finish(outcome: BatchOutcome, wallMs: number): Promise<void>;
  /** Releases the view (a progress bar holds the terminal) after a failure. */
  dispose(): void;
}
