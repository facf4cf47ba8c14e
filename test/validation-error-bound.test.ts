/**
 * The validation error of a call with very many invalid keys, over a real
 * `toolpool serve`: bounded under both pis, in the JSON answer and in every
 * SSE frame that repeats it.
 */
import type { ChildProcess } from "node:child_process";

import { afterAll, describe, expect, it } from "vitest";

import { supportsPi16 } from "toolpool";

import { warnSkippedPi16 } from "./support/pi16.js";
import { spawnServe, type ServeProcess } from "./support/serve-process.js";

warnSkippedPi16("test/validation-error-bound.test.ts");

const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** The body of one `hash` call with `args`. */
function batchBody(args: Record<string, unknown>): string {
  return JSON.stringify({
    assistantMessage: { role: "assistant", content: [{ type: "toolCall", id: "wide", name: "hash", arguments: args }] },
  });
}

async function post(served: ServeProcess, body: string, accept: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${served.url}/v1/batches`, { method: "POST", headers: { "content-type": "application/json", accept }, body });
  return { status: response.status, text: await response.text() };
}

interface Frame {
  event: string;
  bytes: number;
}

const framesOf = (text: string): Frame[] =>
  text
    .split("\n\n")
    .filter((frame) => frame !== "")
    .map((frame) => ({ event: /^event: (.*)$/m.exec(frame)![1]!, bytes: Buffer.byteLength(frame) }));

/** pi 0.73.1 reports a few unknown keys, pi 1.6 every one: long keys for the one, many for the other. */
const cases = [
  { pi: "0.73", args: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`${i}:${"k".repeat(2_000)}`, 0])) },
  { pi: "1.6", args: Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 0])) },
] as const;

describe.each(cases)("toolpool serve --pi $pi: a call with very many invalid keys", ({ pi, args }) => {
  it.skipIf(pi === "1.6" && !supportsPi16())(
    `gets a bounded validation error in JSON and in SSE (pi ${pi})`,
    async () => {
      const served = await spawnServe(["--pi", pi, "--threads", "1"], {}, children);
      const body = batchBody(args);
      expect(body.length).toBeGreaterThan(900_000);

      const json = await post(served, body, "application/json");
      expect(json.status).toBe(200);
      const message = (JSON.parse(json.text) as { messages: { isError: boolean; content: { text: string }[] }[] }).messages[0]!;
      expect(message.isError).toBe(true);
      const text = message.content[0]!.text;
      expect(text).toMatch(/^Validation failed for tool "hash":\n {2}- /);
      expect(text).toMatch(/\n {2}- … \(\d+ more\)\n\nReceived arguments:\n/);
      // 4 KiB of error lines, the count, 4 KiB of echo, the marks.
      expect(Buffer.byteLength(text)).toBeLessThan(9_000);
      expect(json.text.length).toBeLessThan(40_000);

      const sse = await post(served, body, "text/event-stream");
      expect(sse.status).toBe(200);
      const frames = framesOf(sse.text);
      expect(frames.at(-1)!.event).toBe("batch_end");
      // The start event carries the call's arguments, as pi's does; every frame after it is bounded.
      const start = frames.findIndex((frame) => frame.event === "tool_execution_start");
      expect(start).toBeGreaterThanOrEqual(0);
      const after = frames.slice(start + 1);
      expect(after.map((frame) => frame.event)).toContain("tool_execution_end");
      for (const frame of after) expect({ event: frame.event, small: frame.bytes < 20_000 }).toEqual({ event: frame.event, small: true });
      console.info(
        `pi ${pi}: ${body.length}-byte body, error text ${Buffer.byteLength(text)} bytes, JSON ${json.text.length} bytes, SSE ${sse.text.length} bytes`,
      );

      served.child.kill("SIGTERM");
      expect(await served.exited).toEqual([0, null]);
    },
    120_000,
  );
});
