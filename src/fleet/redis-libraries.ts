/** BullMQ and ioredis load on first use: only a fleet runtime or node needs them, and `import("toolpool")` must not pay for them. */
import type * as BullMQ from "bullmq";
import type * as IORedis from "ioredis";

import { ToolpoolError, describeThrown } from "../errors.js";
import { installLine, isPackageMissing } from "../optional-packages.js";

export interface RedisLibraries {
  Queue: typeof BullMQ.Queue;
  QueueEvents: typeof BullMQ.QueueEvents;
  Worker: typeof BullMQ.Worker;
  Redis: typeof IORedis.Redis;
}

let libraries: Promise<RedisLibraries> | undefined;

const librariesFailedToLoad = "The fleet's libraries (bullmq, ioredis) failed to load";

/** Imported once per process; a failure rejects with `TP_ERR_FLEET_UNAVAILABLE` and the next call tries again. */
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
