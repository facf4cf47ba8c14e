/** Limits too small to start a worker kill the whole process, uncatchably, so they are refused up front (docs/node-versions.md). @module */
export const minimumResourceLimits = Object.freeze({
  maxOldGenerationSizeMb: 16,
  stackSizeMb: 1,
} as const);

const floorReasons: Record<keyof typeof minimumResourceLimits, string> = {
  maxOldGenerationSizeMb: "a worker needs about half of that to start, and with too little Node 22 and later abort the whole process",
  stackSizeMb: "a worker needs about a third of that to start, and with too little the whole process dies",
};

interface TooSmallResourceLimit {
  readonly name: keyof typeof minimumResourceLimits;
  /** As in ``Expected `NAME` to be EXPECTED``. */
  readonly expected: string;
  readonly received: number;
}

/** The first limit below its floor; `limits` has passed the schema already. */
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
