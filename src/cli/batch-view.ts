/** What the command line shows of a batch: its events while it runs, then its outcome. */
import type { BatchOutcome, EmitFunction } from "../index.js";

/** The runtime awaits `emit` as pi awaits its sink; exactly one of `finish` (it ran) or `dispose` (it could not) comes last. */
export interface BatchView {
  readonly emit: EmitFunction;
  /** `wallMs`: the batch's wall time in milliseconds. */
  finish(outcome: BatchOutcome, wallMs: number): Promise<void>;
  /** Releases the view (a progress bar holds the terminal) after a failure. */
  dispose(): void;
}
