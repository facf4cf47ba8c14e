import type { ErrorObject } from "ajv";

import { compiledValidator } from "../compiled-validators.js";
import { invalidOption, invalidOptionFromSchema, maxTimerMs } from "../option-checks.js";

export interface FleetOptions {
  /** A `redis://host:port[/db]` URL. */
  redis: string;
  /** The worker tools whose calls run on the fleet; the others run locally. @default "all" */
  remote?: "all" | string[];
  /** BullMQ's `lockDuration`, the same on every node: a lost node is noticed within `lockDurationMs + 2 × stalledIntervalMs`. @default 10000 */
  lockDurationMs?: number;
  /** BullMQ's `stalledInterval`; the coordinator looks too, so a call is reported lost even when no node survives. @default 5000 */
  stalledIntervalMs?: number;
  /** Most remote calls in flight at once; past it a call ends with `TP_ERR_QUEUE_FULL`. @default 10000 */
  maxOutstanding?: number;
  /** How long a call waits for Redis before it ends with `TP_ERR_FLEET_UNAVAILABLE`; with Redis known to be down, at once. @default 5000 */
  redisTimeoutMs?: number;
  /** How long calls wait while no live node serves the toolset before they end with `TP_ERR_FLEET_UNAVAILABLE`. @default 10000 */
  noNodeGraceMs?: number;
  /** After a batch abort, how long past `abortGraceMs` to wait for a remote call before ending it (`TP_ERR_ABORTED`). @default 2000 */
  abortSlackMs?: number;
  /** Resubmissions of an `idempotent: true` tool's call after its node was lost; other calls never run twice. @default 1 */
  nodeLossRetries?: number;
  /** BullMQ's `prefix` of every Redis key; coordinators and nodes must agree. @default "toolpool" */
  prefix?: string;
}

export interface ResolvedFleetOptions {
  readonly redis: string;
  readonly remote: "all" | readonly string[];
  readonly lockDurationMs: number;
  readonly stalledIntervalMs: number;
  readonly maxOutstanding: number;
  readonly redisTimeoutMs: number;
  readonly noNodeGraceMs: number;
  readonly abortSlackMs: number;
  readonly nodeLossRetries: number;
  readonly prefix: string;
}

const milliseconds = (minimum: number, fallback: number) => ({ type: "number", minimum, maximum: maxTimerMs, default: fallback });

/** Defaults live here and nowhere else (compiled at build time). */
export const fleetOptionsSchema = {
  type: "object",
  additionalProperties: false,
  required: ["redis"],
  properties: {
    redis: { type: "string", pattern: "^rediss?://" },
    remote: {
      anyOf: [{ const: "all" }, { type: "array", items: { type: "string", minLength: 1 }, uniqueItems: true }],
      default: "all",
    },
    lockDurationMs: milliseconds(100, 10_000),
    stalledIntervalMs: milliseconds(50, 5_000),
    maxOutstanding: { type: "integer", minimum: 1, default: 10_000 },
    redisTimeoutMs: milliseconds(1, 5_000),
    noNodeGraceMs: milliseconds(0, 10_000),
    abortSlackMs: milliseconds(0, 2_000),
    nodeLossRetries: { type: "integer", minimum: 0, maximum: 10, default: 1 },
    prefix: { type: "string", pattern: "^[A-Za-z0-9_.-]+$", default: "toolpool" },
  },
} as const;

/** Validates once, applies defaults, freezes; throws `TP_ERR_INVALID_OPTION` naming the option. */
export function resolveFleetOptions(options: FleetOptions): ResolvedFleetOptions {
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw invalidOption("fleet", "an object", options);
  let data: FleetOptions;
  try {
    data = structuredClone(options);
  } catch {
    throw invalidOption("fleet", "plain data", options);
  }
  const validateFleetOptions = compiledValidator("fleet-options");
  if (!validateFleetOptions(data)) {
    const [error] = validateFleetOptions.errors as ErrorObject[];
    if (error!.instancePath === "/redis" && error!.keyword === "pattern") {
      throw invalidOption("fleet.redis", "a redis:// or rediss:// URL", options.redis);
    }
    if (error!.instancePath.startsWith("/remote")) {
      throw invalidOption("fleet.remote", '"all" or a list of distinct worker tool names', options.remote);
    }
    throw invalidOptionFromSchema(prefixed(error!), { fleet: options });
  }
  const resolved = data as Required<FleetOptions>;
  return Object.freeze({
    ...resolved,
    remote: resolved.remote === "all" ? "all" : Object.freeze([...resolved.remote]),
  });
}

function prefixed(error: ErrorObject): ErrorObject {
  return { ...error, instancePath: `/fleet${error.instancePath}` };
}
