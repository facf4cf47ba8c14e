import type { ErrorObject } from "ajv";

import { compiledValidator } from "../compiled-validators.js";
import { invalidOption, invalidOptionFromSchema, maxTimerMs } from "../option-checks.js";

/** Options of a runtime's fleet: where its remote worker calls go. */
export interface FleetOptions {
  /** The Redis the fleet shares, as a `redis://host:port[/db]` URL. */
  redis: string;
  /**
   * The worker tools whose calls run on the fleet: `"all"`, or a list of
   * worker tool names. The others run on the local pool.
   * @default "all"
   */
  remote?: "all" | string[];
  /**
   * How long a node's hold on a running call lasts without renewal (BullMQ's
   * `lockDuration`; renewed every half of it). With `stalledIntervalMs` it
   * bounds how soon a lost node is noticed: within
   * `lockDurationMs + 2 × stalledIntervalMs`. The same bound holds the other
   * way: the coordinator's presence key lives that long unless renewed, and
   * nodes start none of its calls (and stop its running ones) once it lapsed.
   * Nodes must use the same value.
   * @default 10000
   */
  lockDurationMs?: number;
  /**
   * How often the fleet looks for calls whose node lost its hold (BullMQ's
   * `stalledInterval`). The coordinator looks too, so that a call is reported
   * lost even when no node survives.
   * @default 5000
   */
  stalledIntervalMs?: number;
  /**
   * Most remote calls of this runtime in flight at once (calls still being
   * admitted count too); past it a call ends at once with `TP_ERR_QUEUE_FULL`.
   * @default 10000
   */
  maxOutstanding?: number;
  /**
   * How long a call waits for Redis before it ends with
   * `TP_ERR_FLEET_UNAVAILABLE`: at the first call while the connection is
   * made, and while Redis is unreachable with calls in flight (they then end,
   * as their outcome can no longer be learned). A call submitted while Redis
   * is known to be down ends at once.
   * @default 5000
   */
  redisTimeoutMs?: number;
  /**
   * How long calls may wait in the fleet's queue while no live node serves
   * the runtime's toolset; then the calls not yet started end with
   * `TP_ERR_FLEET_UNAVAILABLE`. A call submitted while no node is known ends at once.
   * @default 10000
   */
  noNodeGraceMs?: number;
  /**
   * After a batch abort, how long past the pool's `abortGraceMs` the
   * coordinator waits for a remote call's end before it ends it with
   * `TP_ERR_ABORTED` itself (the node may be unreachable).
   * @default 2000
   */
  abortSlackMs?: number;
  /**
   * How many times a call of an `idempotent: true` tool is resubmitted after
   * its node was lost. Other tools' calls are never run twice.
   * @default 1
   */
  nodeLossRetries?: number;
  /**
   * The prefix of every Redis key the fleet uses (BullMQ's `prefix`).
   * Coordinators and nodes must agree on it.
   * @default "toolpool"
   */
  prefix?: string;
}

/** Fleet options after defaults; frozen. */
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

/** The schema of `fleet`; defaults live here and nowhere else (compiled at build time: see compiled-validators.ts). */
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

/**
 * Validates a runtime's `fleet` option once, applies defaults and freezes the
 * result. Throws `TP_ERR_INVALID_OPTION` naming the option.
 */
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

/** ajv's error for `fleet` itself, with its path as seen from the runtime's options. */
function prefixed(error: ErrorObject): ErrorObject {
  return { ...error, instancePath: `/fleet${error.instancePath}` };
}
