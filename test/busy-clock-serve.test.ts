import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { spawnServe, type ServeProcess } from "./support/serve-process.js";

const children: ChildProcess[] = [];
let dir: string;
let served: ServeProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "toolpool-busy-serve-"));
  // The busy tool makes the event loop lag on purpose: no load shedding here.
  const config = join(dir, "config.json");
  writeFileSync(config, JSON.stringify({ maxEventLoopDelayMs: 0 }));
  served = await spawnServe(
    ["--port", "0", "--tools", "test/fixtures/server/busy-patch-tools.mjs", "--mode", "parallel", "--threads", "1", "--config", config],
    { BUSY_TEST_ROOT: dir },
    children,
  );
}, 60_000);

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

interface Message {
  toolCallId: string;
  isError: boolean;
  content: { type: string; text?: string }[];
  details?: unknown;
}

describe("toolpool serve with its main thread busy across a call's deadline", () => {
  it("reports each patch that was written as written, never as timed out, so no retry applies it twice (replay: 8 rounds)", async () => {
    const post = (content: unknown[]) =>
      fetch(`${served.url}/v1/batches`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ assistantMessage: { role: "assistant", content } }),
      });
    const outcomes: string[] = [];
    for (let round = 0; round < 8; round++) {
      const file = `file-${round}.txt`;
      writeFileSync(join(dir, file), "alpha\nbeta\n");
      const patch = `--- a/${file}\n+++ b/${file}\n@@ -1,2 +1,3 @@\n alpha\n+inserted\n beta\n`;
      // Two clients at once: one patches a file (on a worker, 1 s deadline),
      // the other runs an inline tool that holds the main thread for 2.5 s,
      // so the patch's reply and its deadline meet behind a busy main thread.
      const [patched, busy] = await Promise.all([
        post([{ type: "toolCall", id: "p", name: "patch", arguments: { path: file, patch, write: true } }]),
        post([{ type: "toolCall", id: "b", name: "busy", arguments: { ms: 2_500 } }]),
      ]);
      expect([patched.status, busy.status]).toEqual([200, 200]);
      await busy.text();
      const { messages } = (await patched.json()) as { messages: Message[] };
      const result = messages[0]!;
      const content = readFileSync(join(dir, file), "utf8");
      outcomes.push(
        `${result.isError ? "error" : "ok"}: ${result.content.map((part) => part.text ?? "").join("")} (file ${content === "alpha\nbeta\n" ? "unchanged" : "patched"})`,
      );
      // The answer tells the truth about the file: patched and reported so,
      // or (a worker starved of CPU past its deadline) timed out and unchanged.
      if (result.isError) {
        expect(result.details).toEqual({ code: "TP_ERR_TIMEOUT" });
        expect(content).toBe("alpha\nbeta\n");
      } else expect(content).toBe("alpha\ninserted\nbeta\n");
    }
    console.log(outcomes.join("\n"));
    expect(outcomes.filter((outcome) => outcome.startsWith("ok:")).length, outcomes.join("\n")).toBeGreaterThan(0);
  }, 180_000);
});
