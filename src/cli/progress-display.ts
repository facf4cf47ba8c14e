/** Progress on stderr: a live bar on a terminal, plain lines anywhere else (logs, CI, pipes). */
import { MultiBar, Presets } from "cli-progress";

import type { CliStreams } from "./output-streams.js";

/** Shows calls ending; `stop` must be called before anything else is written. */
export interface ProgressDisplay {
  callEnded(line: string): void;
  /** Idempotent. */
  stop(): void;
}

/** A bar when stderr is a TTY, plain `[n/total] line` lines otherwise. */
export function createProgressDisplay(stderr: CliStreams["stderr"], total: number): ProgressDisplay {
  return stderr.isTTY === true && total > 0 ? createBarDisplay(stderr, total) : createLineDisplay(stderr, total);
}

function createLineDisplay(stderr: CliStreams["stderr"], total: number): ProgressDisplay {
  let ended = 0;
  return {
    callEnded(line) {
      ended++;
      stderr.write(`[${ended}/${total}] ${line}\n`);
    },
    stop() {},
  };
}

function createBarDisplay(stderr: CliStreams["stderr"], total: number): ProgressDisplay {
  // Only a MultiBar can print lines above a live bar (`log`) without the next redraw overwriting them.
  const bars = new MultiBar(
    {
      stream: stderr as NodeJS.WritableStream,
      format: "{bar} {value}/{total} calls ended",
      clearOnComplete: true,
      hideCursor: true,
      barsize: 30,
    },
    Presets.shades_classic,
  );
  const bar = bars.create(total, 0);
  let isStopped = false;
  return {
    callEnded(line) {
      if (isStopped) return;
      bars.log(`${line}\n`);
      bar.increment();
    },
    stop() {
      if (isStopped) return;
      isStopped = true;
      // `stop` drops log lines not yet drawn (cli-progress flushes them only on its timed redraw): redraw first.
      bars.update();
      bars.stop();
    },
  };
}
