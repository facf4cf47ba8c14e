/**
 * The smallest `resourceLimits` toolpool gives a worker thread, and the check
 * that enforces them where limits enter: `pool.resourceLimits`
 * (src/options.ts) and a worker tool's own (src/contracts/worker-tool.ts).
 *
 * Why refuse rather than let the worker fail: a worker whose limits are too
 * small to start does not always fail as a worker. From Node 22 on, an old
 * generation too small to deserialize V8's startup snapshot aborts the whole
 * process ("Fatal JavaScript out of memory: GC during deserialization",
 * SIGTRAP); on every Node from 20 on, a stack too small to start ends the
 * whole process (an exit code of Node's fatal-error handler, or SIGSEGV on
 * Node 22). Nothing a pool does can catch either, so such limits are refused
 * when the runtime (or the tool) is created.
 *
 * The floors are about twice the largest limit with which a worker of
 * toolpool's pool started and ran a call on any Node measured
 * (`scripts/measure-worker-heap-floor.mjs`; figures in docs/node-versions.md,
 * "Worker heap limits"). `maxYoungGenerationSizeMb` and `codeRangeSizeMb` have none:
 * V8 raises too-small values to what it needs by itself.
 *
 * @module
 */
/** The smallest value toolpool accepts for each limit that has a floor, in MiB. */
export const minimumResourceLimits = Object.freeze({
  maxOldGenerationSizeMb: 16,
  stackSizeMb: 1,
} as const);

/** What each floor guards against, for the error message. */
const floorReasons: Record<keyof typeof minimumResourceLimits, string> = {
  maxOldGenerationSizeMb: "a worker needs about half of that to start, and with too little Node 22 and later abort the whole process",
  stackSizeMb: "a worker needs about a third of that to start, and with too little the whole process dies",
};

/** A limit below its floor: which one, what it must be, and what it is. */
interface TooSmallResourceLimit {
  readonly name: keyof typeof minimumResourceLimits;
  /** What was expected, as in ``Expected `NAME` to be EXPECTED``. */
  readonly expected: string;
  readonly received: number;
}

/**
 * The first limit of `limits` below {@link minimumResourceLimits}, or
 * `undefined` when none is. `limits` has passed the schema already (numbers
 * > 0 where present).
 */
export function findTooSmallResourceLimit(
  limits: {
    readonly [name in keyof typeof minimumResourceLimits]?: number;
  },
): TooSmallResourceLimit | undefined {
  for (const name of Object.keys(minimumResourceLimits) as (keyof typeof minimumResourceLimits)[]) {
    const received = limits[name];
    const minimum = minimumResourceLimits[name];
    if (received !== undefined && received < minimum) {
      return { name, expected: `a number >= ${minimum} (${floorReasons[name]})`, received };
    }
  }
  return undefined;
}
