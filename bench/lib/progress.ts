/**
 * Progress on stderr, so stdout stays a clean markdown report. On a terminal:
 * one cli-progress bar over the whole run, weighted by each step's expected
 * duration, with log lines printed above it. Elsewhere (CI, a pipe): one
 * plain line per step, prefixed with the elapsed time and the share done.
 *
 * The bar redraws twice a second from the main thread's event loop; that is
 * a few hundred microseconds a second, the same for every contender.
 */
import { MultiBar, Presets, type SingleBar } from "cli-progress";

interface ProgressState {
  multibar: MultiBar | undefined;
  bar: SingleBar | undefined;
  total: number;
  done: number;
}

const state: ProgressState = { multibar: undefined, bar: undefined, total: 0, done: 0 };

function elapsed(): string {
  return `${(performance.now() / 1000).toFixed(1)}s`;
}

function share(): string {
  return state.total > 0 ? ` ${Math.min(100, Math.round((state.done / state.total) * 100))}%` : "";
}

/** Starts the bar over `total` units of expected work (any unit; the suites use expected ms). */
export function startProgress(total: number): void {
  state.total = total;
  state.done = 0;
  if (!process.stderr.isTTY) return;
  state.multibar = new MultiBar(
    {
      stream: process.stderr,
      fps: 2,
      hideCursor: true,
      clearOnComplete: true,
      format: "{bar} {percentage}% | {duration_formatted} elapsed, ~{eta_formatted} left | {step}",
      etaBuffer: 4,
      gracefulExit: true,
    },
    Presets.shades_classic,
  );
  state.bar = state.multibar.create(total, 0, { step: "starting" });
}

/** Marks `units` of work done, with a label for what just finished. */
export function advanceProgress(units: number, label: string): void {
  state.done += units;
  if (state.bar !== undefined) {
    state.bar.update(Math.min(state.done, state.total), { step: label });
  } else {
    process.stderr.write(`[bench ${elapsed()}${share()}] ${label}\n`);
  }
}

/** One log line on stderr, above the bar when there is one. */
export function logStep(message: string): void {
  const line = `[bench ${elapsed()}${share()}] ${message}\n`;
  if (state.multibar !== undefined) state.multibar.log(line);
  else process.stderr.write(line);
}

/** Removes the bar; later log lines go straight to stderr. */
export function stopProgress(): void {
  // cli-progress 3.12 draws pending log lines only on a redraw: force one before stopping.
  state.multibar?.update();
  state.multibar?.stop();
  state.multibar = undefined;
  state.bar = undefined;
}
