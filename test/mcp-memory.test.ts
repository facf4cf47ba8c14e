import { readFileSync } from "node:fs";

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";

import { callTool, closeClients, connect, gates, initialize, killChildren, post, startMcp, stop, toolCall } from "./support/mcp-http.js";

afterEach(closeClients);
afterAll(killChildren);

/** The resident set of process `pid` as an operator's monitoring reads it (`VmRSS` of /proc/PID/status), in bytes. */
function vmRss(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
}

describe("toolpool mcp --http: memory", () => {
  /** The server's memory after a full collection (see `memory` in fixtures/mcp/load-tools.mjs). */
  async function memoryOf(client: Client): Promise<{ rss: number; heapUsed: number }> {
    const result = await callTool(client, "memory", {});
    const details = (result.structuredContent as { details: { rss: number; heapUsed: number; hasGc: boolean } }).details;
    expect(details.hasGc).toBe(true);
    return details;
  }

  it("keeps nothing of refused calls whose POSTs were dropped: a flood grows a fresh server's RSS by less than 60 MB, and floods of 5,000 leave the heap where it was", async () => {
    // One thread, held by one call; ten calls may wait: of each POST's 100 calls, 90 are refused at once.
    const server = await startMcp(["--threads", "1", "--max-queue", "10"], ["--expose-gc"]);
    try {
      const control = await connect(server);
      const held = callTool(control, "hold", { key: "held" });
      held.catch(() => {});
      await gates(control, { waitFor: ["started:held"] });
      const { sessionId } = await initialize(server);
      let dropped = 0;
      /** `posts` POSTs of 100 calls (50: 5,000 calls), each dropped by its client once a refusal came. */
      const flood = async (posts = 50) => {
        for (let index = 0; index < posts; index++) {
          const first = dropped * 100 + 1;
          const batch = Array.from({ length: 100 }, (_, call) => toolCall(first + call, "hold", { key: `flood-${first + call}` }));
          const sent = post(server, sessionId!, batch);
          const refused = await sent.until((message) => message.error !== undefined);
          expect(refused.error).toMatchObject({ code: -32000, data: { code: "TP_ERR_QUEUE_FULL" } });
          sent.request.destroy();
          dropped += 1;
          // The server has seen the client go: the ten waiting calls of the POST are cancelled.
          await server.untilStderr({ test: (text) => text.split("went away before 10 of its requests").length > dropped });
        }
      };
      // A fresh server that has served calls (and collected its garbage), then its first flood: the
      // resident set as /proc shows it, as an operator's monitoring reads it, and the heap.
      const start = await memoryOf(control);
      const startRss = vmRss(server.child.pid!);
      await flood();
      const flooded = await memoryOf(control);
      const floodedRss = vmRss(server.child.pid!);
      expect(floodedRss - startRss).toBeLessThan(60 * 1024 * 1024);
      expect(flooded.heapUsed - start.heapUsed).toBeLessThan(10 * 1024 * 1024);
      // A second flood finds the server at its plateau: what the first one grew is reused.
      await flood();
      const warmed = await memoryOf(control);
      const warmedRss = vmRss(server.child.pid!);
      expect(warmedRss - floodedRss).toBeLessThan(20 * 1024 * 1024);
      // Three more floods, 15,000 refused calls: refused calls add nothing.
      for (let round = 0; round < 3; round++) await flood();
      const after = await memoryOf(control);
      const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
      console.log(
        `a first flood: VmRSS +${mb(floodedRss - startRss)} MB, heap after GC +${mb(flooded.heapUsed - start.heapUsed)} MB; a second: VmRSS +${mb(warmedRss - floodedRss)} MB; three more: heap after GC +${mb(after.heapUsed - warmed.heapUsed)} MB`,
      );
      expect(after.heapUsed - warmed.heapUsed).toBeLessThan(1024 * 1024);
      await gates(control, { open: ["held"] });
      expect((await held).isError).toBe(false);
    } finally {
      await stop(server);
    }
  }, 300_000);
});
