/**
 * `runtime.poolEvents`: the pool events of every pool of a runtime (the fleet's included), in
 * one listener set. It listens to the pools only while it has a listener of
 * its own, so pools with no one watching make no event objects.
 *
 * @module
 */
import { PoolEventSource, type PoolCallListener, type PoolThreadListener } from "../contracts/pool-events.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

/** A pool that emits pool events. */
interface EmittingPool {
  readonly events: PoolEventSource;
}

/**
 * The aggregate of `pools`' events, each event's `pool` set to the pool's
 * name (its key, or the tool's name for a tool's own pool). The pools are
 * the runtime's, all made before this is. Its `threads()` lists every
 * pool's threads, named the same way.
 */
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
