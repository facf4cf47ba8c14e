/** What the pool-event stream counts while someone watches, per tool and in recent faults; bounded whatever clients send. */
import type { PoolCallRecord, PoolFaultView, PoolToolView } from "./pool-event-frames.js";

const runTimesKept = 512;

const faultsKept = 20;

/** Calls of tools the runtime lacks share one tally: their names are the clients'. */
const unknownToolName = "(unknown tool)";

interface ToolTally {
  count: number;
  errors: number;
  faults: Map<string, number>;
  runTimes: number[];
  next: number;
}

/** Per-tool counts and recent faults, fed with every ended call. */
export class PoolTallies {
  readonly #tools = new Map<string, ToolTally>();
  readonly #faults: PoolFaultView[] = [];

  /** `tools`: the runtime's tools; a call of any other name counts under {@link unknownToolName}. */
  constructor(tools: readonly string[]) {
    for (const tool of tools) this.#tools.set(tool, newTally());
  }

  addCall(record: PoolCallRecord): void {
    let tally = this.#tools.get(record.tool);
    if (tally === undefined) {
      tally = this.#tools.get(unknownToolName) ?? newTally();
      this.#tools.set(unknownToolName, tally);
    }
    tally.count += 1;
    if (record.outcome === "error") tally.errors += 1;
    if (record.outcome === "fault") {
      const code = record.code ?? "fault";
      tally.faults.set(code, (tally.faults.get(code) ?? 0) + 1);
      this.addFault({
        at: record.endedAt,
        code,
        message: record.message ?? "",
        tool: record.tool,
        toolCallId: record.toolCallId,
        ...(record.session === undefined ? {} : { session: record.session }),
        ...(record.threadId === undefined ? {} : { threadId: record.threadId }),
      });
    }
    if (record.runMs !== undefined) {
      tally.runTimes[tally.next] = record.runMs;
      tally.next = (tally.next + 1) % runTimesKept;
    }
  }

  addFault(fault: PoolFaultView): void {
    this.#faults.push(fault);
    if (this.#faults.length > faultsKept) this.#faults.shift();
  }

  /** The tools' view, in the runtime's order. */
  toolViews(): PoolToolView[] {
    return [...this.#tools].map(([tool, tally]) => {
      const sorted = [...tally.runTimes].sort((a, b) => a - b);
      return {
        tool,
        count: tally.count,
        errors: tally.errors,
        faults: Object.fromEntries(tally.faults),
        ...(sorted.length === 0 ? {} : { p50RunMs: percentile(sorted, 0.5), p99RunMs: percentile(sorted, 0.99) }),
      };
    });
  }

  /** The recent faults, oldest first. */
  faultViews(): PoolFaultView[] {
    return [...this.#faults];
  }
}

function newTally(): ToolTally {
  return { count: 0, errors: 0, faults: new Map(), runTimes: [], next: 0 };
}

function percentile(sorted: readonly number[], share: number): number {
  const rank = Math.max(1, Math.ceil(share * sorted.length));
  return Math.round(sorted[rank - 1]! * 10) / 10;
}
