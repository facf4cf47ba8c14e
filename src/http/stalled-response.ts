/**
 * The bound on a response whose client stopped reading, shared by the
 * streams of toolpool's HTTP fronts: the live view's watchers and MCP's
 * responses.
 *
 * @module
 */
import { once } from "node:events";
import type { ServerResponse } from "node:http";

import { systemClock, type Clock } from "../clock.js";

/**
 * Resolves once `response`, which refused a write (`write()` returned
 * false), drains or closes. If it does neither within `stalledMs`, its
 * client has read nothing for that long: the connection is reset, which
 * closes the response (so this resolves) and frees at once what the kernel
 * still held to send it. A plain close would keep those bytes queued, up to
 * megabytes a socket, while the kernel waits on a peer that never reads.
 *
 * @example
 * ```ts
 * if (!response.write(frame)) await whenDrained(response, 30_000);
 * ```
 */
export async function whenDrained(response: ServerResponse, stalledMs: number, clock: Clock = systemClock): Promise<void> {
  if (response.destroyed || !response.writableNeedDrain) return;
  const ac = new AbortController();
  const stalled = clock.setTimeout(() => resetResponse(response), stalledMs);
  try {
    // `drain` never comes to a socket that closes instead, so wait for either.
    await Promise.race([once(response, "drain", { signal: ac.signal }), once(response, "close", { signal: ac.signal })]);
  } catch {
    // Aborted below, once either came.
  } finally {
    clock.clearTimeout(stalled);
    ac.abort();
  }
}

/** Closes `response`'s connection with a reset (RST), dropping what is queued for it. */
function resetResponse(response: ServerResponse): void {
  const socket = response.socket;
  if (socket !== null && !socket.destroyed) socket.resetAndDestroy();
  else response.destroy();
}
