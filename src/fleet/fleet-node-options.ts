/** The options of a fleet node (`FleetNode.start`), and the refusal of unknown ones. */
import { invalidOption, refuseUnknownOptions } from "../option-checks.js";
import type { PiVersion, PoolOptions, ToolDefinition } from "../options.js";

/** Options of a `FleetNode`. */
export interface FleetNodeOptions {
  /** The fleet's Redis, as a `redis://` URL. */
  redis: string;
  /** The tools; the node serves the worker tools among them (inline tools run on coordinators). */
  tools: readonly ToolDefinition[];
  /**
   * The pi of the coordinators it serves (part of the toolset hash): a runtime with the other pi gets
   * `TP_ERR_TOOL_MISMATCH`. pi's rules run on the coordinators; `"1.6"` needs Node >= 22.19, as on a runtime. @default "0.73"
   */
  pi?: PiVersion;
  /** The node's name, unique in the fleet (no `:`). @default `<hostname>-<pid>` */
  name?: string;
  /** Worker threads of the node's local pool. @default the pool's default (the number of CPUs) */
  threads?: number;
  /** Calls the node takes from the queue at once. @default threads */
  concurrency?: number;
  /** BullMQ `lockDuration`; must match the coordinators'. @default 10000 */
  lockDurationMs?: number;
  /** BullMQ `stalledInterval`; must match the coordinators'. @default 5000 */
  stalledIntervalMs?: number;
  /** Key prefix; must match the coordinators'. @default "toolpool" */
  prefix?: string;
  /** Options of the node's local pool (`threads` overrides its thread counts). */
  pool?: PoolOptions;
  /** Receives errors that concern no call (a lost Redis connection, a worker failing while idle). @default ignored */
  onError?: (error: unknown) => void;
}

/** Typed, so that a new option must be listed. */
const fleetNodeOptionNames = Object.keys({
  redis: true,
  tools: true,
  pi: true,
  name: true,
  threads: true,
  concurrency: true,
  lockDurationMs: true,
  stalledIntervalMs: true,
  prefix: true,
  pool: true,
  onError: true,
} satisfies Record<keyof FleetNodeOptions, true>);

/** `TP_ERR_INVALID_OPTION` for a non-object or an unknown key (naming the closest); values are checked where used. */
export function checkFleetNodeOptions(options: unknown): asserts options is object {
  if (typeof options !== "object" || options === null) throw invalidOption("options", "an object", options);
  refuseUnknownOptions(options, fleetNodeOptionNames);
}
