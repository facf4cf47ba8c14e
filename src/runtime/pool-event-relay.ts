/**
 * `runtime.poolEvents`: the pool events of every local pool of a runtime, in
 * one listener set. It listens to the pools only while it has a listener of
 * its own, so pools with no one watching make no event objects.
 *
 * @module
 */
import { PoolEventSource, type PoolCallListener } from "../contracts/pool-events.js";
import type { WorkerTool } from "../contracts/worker-tool.js";

/** A pool that emits pool events (the fleet's remote pool does not yet). */
interface EmittingPool {
  readonly events: PoolEventSource;
}

/**
 * The aggregate of `pools`' events, each event's `pool` set to the pool's
 * name (its key, or the tool's name for a tool's own pool). The pools are
 * the runtime's, all made before this is.
 */
export function createPoolEventRelay(pools: ReadonlyMap<WorkerTool | string, EmittingPool>): PoolEventSource {
  const forwarders: [PoolEventSource, PoolCallListener][] = [];
  const relay = new PoolEventSource((isObserved) => {
    if (!isObserved) {
      for (const [source, forwarder] of forwarders) source.off(forwarder);
      forwarders.length = 0;
      return;
    }
    for (const [key, pool] of pools) {
      const name = typeof key === "string" ? key : key.name;
      const forwarder: PoolCallListener = (event) => {
        event.pool = name;
        relay.emit(event);
      };
      pool.events.on(forwarder);
      forwarders.push([pool.events, forwarder]);
    }
  });
  return relay;
}
