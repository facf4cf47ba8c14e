/**
 * BullMQ and ioredis, loaded on first use: only a runtime with `fleet` (when
 * it first connects) and a fleet node need them, and together they are ~290
 * files that took ~300 ms to import, which `import("toolpool")` must not pay.
 *
 * @module
 */
import type * as BullMQ from "bullmq";
import type * as IORedis from "ioredis";

import { ToolpoolError, describeThrown } from "../errors.js";
import { installLine, isPackageMissing } from "../optional-packages.js";

/** The classes toolpool's fleet code constructs. */
export interface RedisLibraries {
  Queue: typeof BullMQ.Queue;
  QueueEvents: typeof BullMQ.QueueEvents;
  Worker: typeof BullMQ.Worker;
  Redis: typeof IORedis.Redis;
}

let libraries: Promise<RedisLibraries> | undefined;

/** The start of the message when the fleet's libraries cannot be imported. */
const librariesFailedToLoad = "The fleet's libraries (bullmq, ioredis) failed to load";

/**
 * BullMQ and ioredis, imported once per process. A failed import rejects with
 * `TP_ERR_FLEET_UNAVAILABLE` naming the cause, and the next call tries again.
 */
export function loadRedisLibraries(): Promise<RedisLibraries> {
  libraries ??= Promise.all([import("bullmq"), import("ioredis")]).then(
    ([bullmq, ioredis]) => ({
      Queue: bullmq.Queue,
      QueueEvents: bullmq.QueueEvents,
      Worker: bullmq.Worker,
      Redis: ioredis.Redis,
    }),
    (error: unknown) => {
      libraries = undefined;
      // Optional peer dependencies: a library-only install of toolpool has neither.
      const missing = ["bullmq", "ioredis"].find((name) => isPackageMissing(error, name));
      const hint =
        missing === undefined ? "" : ` (${missing} is an optional package, not installed; install the fleet's with: ${installLine("fleet")})`;
      throw new ToolpoolError("TP_ERR_FLEET_UNAVAILABLE", `${librariesFailedToLoad}: ${describeThrown(error)}${hint}`, { cause: error });
    },
  );
  return libraries;
}
