/** `runtime.poolEvents`: every pool's events in one set, listening to the pools only while it has listeners itself. */
import { PoolEventSource, type PoolCallListener, type PoolThreadListener } from "../contracts/pool-events.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

interface EmittingPool {
  readonly events: PoolEventSource;
}

/** Each event's `pool` is set to its pool's key, or the tool's name for a tool's own pool. */
export function createPoolEventRelay(pools: ReadonlyMap<WorkerTool | string, EmittingPool>): PoolEventSource {
  const detachers: (() => void)[] = [];
  const named = [...pools].map(([key, pool]) => [typeof key === "string" ? key : key.name, pool] as const);
  const relay = new PoolEventSource(
    (isObserved) => {
      if (!isObserved) {
        for (const detach of detachers) detach();
        detachers.length = 0;
        return;
      }
      for (const [name, pool] of named) {
        const forwarder: PoolCallListener = (event) => {
          event.pool = name;
          relay.emit(event);
        };
        const threadForwarder: PoolThreadListener = (event) => {
          event.pool = name;
          relay.emitThread(event);
        };
        pool.events.on(forwarder);
        pool.events.onThread(threadForwarder);
        detachers.push(() => {
          pool.events.off(forwarder);
          pool.events.offThread(threadForwarder);
        });
      }
    },
    () =>
      named.flatMap(([name, pool]) =>
        pool.events.threads().map((entry) => {
          entry.pool = name;
          if (entry.running !== undefined) entry.running.pool = name;
          return entry;
        }),
      ),
  );
  return relay;
}
