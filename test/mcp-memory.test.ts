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

  it("keeps nothing of refused calls whose POSTs were dropped: floods of 5,000 leave the heap where it was", async () => {
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
      // One flood first: the server's first dropped POSTs compile code, and the first flood grows V8's
      // young generation to the size it keeps (committed, not used: on Node 22 and 26 the heap's
      // committed size rises by 25-40 MB while the heap in use after a collection stays within
      // 1 MB), which is RSS once, whatever comes after, and not what refused calls keep.
      await flood();
      const start = await memoryOf(control);
      const startRss = vmRss(server.child.pid!);
      await flood();
      const warmed = await memoryOf(control);
      const warmedRss = vmRss(server.child.pid!);
      // The bounds, over a flood on a warmed server: the process's resident set as /proc shows it, and the heap.
      expect(warmedRss - startRss).toBeLessThan(60 * 1024 * 1024);
      expect(warmed.heapUsed - start.heapUsed).toBeLessThan(10 * 1024 * 1024);
      // Three more floods, 15,000 refused calls: refused calls add nothing.
      for (let round = 0; round < 3; round++) await flood();
      const after = await memoryOf(control);
      const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
      console.log(
        `a flood after a first one: VmRSS +${mb(warmedRss - startRss)} MB, heap after GC +${mb(warmed.heapUsed - start.heapUsed)} MB; three more: heap after GC +${mb(after.heapUsed - warmed.heapUsed)} MB`,
      );
      expect(after.heapUsed - warmed.heapUsed).toBeLessThan(1024 * 1024);
      await gates(control, { open: ["held"] });
      expect((await held).isError).toBe(false);
    } finally {
      await stop(server);
    }
  }, 300_000);
});
