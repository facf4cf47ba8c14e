/**
 * The size of `toolpool serve`'s SSE `tool_execution_update` frames with pi's
 * event shape (the call's `args` in every update) and with
 * `--no-update-args` / `updateArgs: false`, against real processes.
 */
import type { ChildProcess } from "node:child_process";
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, describe, expect, it } from "vitest";

import { spawnServe, type ServeProcess } from "./support/serve-process.js";

const TOOLS = fileURLToPath(new URL("fixtures/server/tools.mjs", import.meta.url));
const UPDATES = 16;
/** A large argument, as a long pattern or a file's text would be. */
const bigText = "x".repeat(256 * 1024);

const children: ChildProcess[] = [];
const base = mkdtempSync(join(tmpdir(), "toolpool-update-args-"));

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(base, { recursive: true, force: true });
});

interface Frame {
  event: string;
  bytes: number;
  data: Record<string, unknown>;
}

/** Posts one `work` call that sends 16 updates with a 256 KiB argument; returns the stream's frames. */
async function streamFrames(served: ServeProcess): Promise<Frame[]> {
  const response = await fetch(`${served.url}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({
      assistantMessage: {
        role: "assistant",
        content: [
          {
            type: "toolCall",
            id: "big",
            name: "work",
            arguments: { text: bigText, updates: Array.from({ length: UPDATES }, (_, index) => `step ${index}`) },
          },
        ],
      },
    }),
  });
  expect(response.status).toBe(200);
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((frame) => frame !== "")
    .map((frame) => {
      const data = JSON.parse(/^data: (.*)$/m.exec(frame)![1]!) as Record<string, unknown>;
      return { event: /^event: (.*)$/m.exec(frame)![1]!, bytes: Buffer.byteLength(frame), data };
    });
}

const updatesOf = (frames: Frame[]) => frames.filter((frame) => frame.event === "tool_execution_update");
const sum = (frames: Frame[]) => frames.reduce((total, frame) => total + frame.bytes, 0);

describe("toolpool serve: SSE tool_execution_update frames", () => {
  it("carry the call's args by default, as pi's event does", async () => {
    const served = await spawnServe(["--port", "0", "--tools", TOOLS, "--threads", "1"], {}, children);
    const updates = updatesOf(await streamFrames(served));
    expect(updates).toHaveLength(UPDATES);
    for (const update of updates) {
      expect((update.data.args as { text: string }).text).toBe(bigText);
      expect(update.bytes).toBeGreaterThan(bigText.length);
    }
  }, 60_000);

  it("leave the args out with --no-update-args or updateArgs: false; the start event still carries them", async () => {
    const config = join(base, "no-update-args.json");
    writeFileSync(config, JSON.stringify({ updateArgs: false }));
    for (const args of [["--no-update-args"], ["--config", config]]) {
      const served = await spawnServe(["--port", "0", "--tools", TOOLS, "--threads", "1", ...args], {}, children);
      const frames = await streamFrames(served);
      const updates = updatesOf(frames);
      expect(updates).toHaveLength(UPDATES);
      for (const [index, update] of updates.entries()) {
        expect(update.data).toEqual({
          type: "tool_execution_update",
          toolCallId: "big",
          toolName: "work",
          partialResult: { content: [{ type: "text", text: `step ${index}` }], details: { update: `step ${index}` } },
        });
      }
      // The 16 updates together are smaller than the argument once.
      expect(sum(updates)).toBeLessThan(bigText.length);
      const start = frames.find((frame) => frame.event === "tool_execution_start")!;
      expect((start.data.args as { text: string }).text).toBe(bigText);
      expect(frames.at(-1)!.event).toBe("batch_end");
    }
  }, 60_000);

  it("carry the args with --update-args over a config file's updateArgs: false", async () => {
    const config = join(base, "config-false.json");
    writeFileSync(config, JSON.stringify({ updateArgs: false }));
    const served = await spawnServe(["--port", "0", "--tools", TOOLS, "--threads", "1", "--config", config, "--update-args"], {}, children);
    const updates = updatesOf(await streamFrames(served));
    expect(updates).toHaveLength(UPDATES);
    expect((updates[0]!.data.args as { text: string }).text).toBe(bigText);
  }, 60_000);
});
