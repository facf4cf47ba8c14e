import { serialize } from "node:v8";

import { describe, expect, it } from "vitest";

import { createRuntime, workerTool, type AssistantMessage } from "toolpool";
import { decodeReply, encodeEnd, readWorkerReply, repeatMinChars, shareRepeatedStrings, type WorkerReply } from "./support/built.js";

// @ts-expect-error: a plain .mjs fixture, typed loosely here
import { repeatedResult } from "./fixtures/tools/repeated.mjs";

type OkReply = Extract<WorkerReply, { kind: "ok" }>;

/** Equal as structured clone sees values: the same shape, sharing and holes. */
const v8Equal = (a: unknown, b: unknown) => serialize(a).equals(serialize(b));

const long = (char: string) => char.repeat(repeatMinChars);

/** What the pool reads of a result that crossed the thread boundary: the worker's posting, cloned, read back. */
function crossed(result: unknown): { reply: WorkerReply; posted: OkReply } {
  const shared = shareRepeatedStrings(result);
  const posted: OkReply =
    shared === undefined ? { kind: "ok", result, updates: 0 } : { kind: "ok", result: shared.result, repeats: shared.repeats, updates: 0 };
  return { reply: readWorkerReply(structuredClone(posted)), posted };
}

/** pi's read of an image: its base64 data in content and again in structuredContent. */
function imageResult(data: string) {
  return {
    content: [
      { type: "text", text: "Read image file [image/png]" },
      { type: "image", data, mimeType: "image/png" },
    ],
    structuredContent: { type: "image", data, mimeType: "image/png", note: "Read image file [image/png]" },
  };
}

describe("repeated long strings cross the thread boundary once", () => {
  it("sends pi's image data once and puts it back at both places, one string", () => {
    const data = long("A") + long("B");
    const result = imageResult(data);
    const before = structuredClone(result);
    const { reply, posted } = crossed(result);
    // What crosses holds the data once: about half of what the result as it is takes.
    expect(serialize(posted).length).toBeLessThan(data.length * 1.1);
    expect(serialize(result).length).toBeGreaterThan(data.length * 2);
    expect(posted.repeats).toEqual([{ at: ["content", 1, "data"], copies: [["structuredContent", "data"]] }]);
    // The tool's own objects are untouched.
    expect(result).toEqual(before);
    expect(result.structuredContent.data).toBe(data);
    // The pool reads the whole result, one string at both places, as pi in process has it.
    expect(reply.kind === "ok" && reply.result).toEqual(before);
    const read = (reply as { result: ReturnType<typeof imageResult> }).result;
    expect(read.structuredContent.data === read.content[1]!.data).toBe(true);
    expect(reply).not.toHaveProperty("repeats");
  });

  it("leaves short strings, distinct strings and a result without repeats as they are", () => {
    const short = "s".repeat(repeatMinChars - 1);
    expect(shareRepeatedStrings({ a: short, b: short })).toBeUndefined();
    expect(shareRepeatedStrings({ a: long("a"), b: long("b") })).toBeUndefined();
    expect(shareRepeatedStrings({ a: long("a") })).toBeUndefined();
    expect(shareRepeatedStrings(long("a"))).toBeUndefined();
  });

  it("keeps an object reached twice one object, and shares no string through it", () => {
    const result = repeatedResult({ size: repeatMinChars, places: 3, shared: true }) as {
      content: { text: string }[];
      details: { copies: { text: string }[]; sameBlock: unknown };
    };
    const { reply, posted } = crossed(result);
    // The block is reached twice; its string stays in it, and the two copies elsewhere are shared.
    expect(posted.repeats).toEqual([
      {
        at: ["content", 0, "text"],
        copies: [
          ["details", "copies", 0, "text"],
          ["details", "copies", 1, "text"],
        ],
      },
    ]);
    const read = (reply as { result: typeof result }).result;
    expect(read).toEqual(result);
    expect(read.details.sameBlock).toBe(read.content[0]);
  });

  it("keeps an array's holes, and the string whole where no copy can be made of its place", () => {
    const text = long("h");
    const list: unknown[] = [];
    list[2] = text;
    const inner = { text };
    const result = { first: text, shared: inner, again: inner, list };
    const { reply, posted } = crossed(result);
    // `inner` is reached twice: the string stays there and is emptied elsewhere.
    expect(posted.repeats).toEqual([{ at: ["shared", "text"], copies: [["first"], ["list", 2]] }]);
    const read = (reply as { result: typeof result }).result;
    expect(read).toEqual(structuredClone(result));
    expect(0 in read.list).toBe(false);
    expect(read.again).toBe(read.shared);
  });

  it.each([
    [
      "a Map holding an object the result also holds",
      (text: string) => {
        const block = { text };
        return { content: [{ text }], block, byName: new Map([["b", block]]) };
      },
    ],
    [
      "a class instance",
      (text: string) => {
        class Box {
          constructor(readonly text: string) {}
        }
        return { a: text, box: new Box(text) };
      },
    ],
    [
      "an array with a key that is no index",
      (text: string) => {
        const list: unknown[] = [text];
        (list as unknown as Record<string, unknown>).label = text;
        return { a: text, list };
      },
    ],
    [
      "an array element that is not enumerable",
      (text: string) => {
        const list = [text];
        Object.defineProperty(list, 0, { value: text, enumerable: false });
        return { list, b: text };
      },
    ],
    [
      "a getter",
      (text: string) => ({
        a: text,
        get b() {
          return text;
        },
      }),
    ],
  ])("sends a result holding %s as it is, whole", (_what, make) => {
    const result = make(long("g"));
    expect(shareRepeatedStrings(result)).toBeUndefined();
    const { reply } = crossed(result);
    expect(v8Equal((reply as { result: unknown }).result, structuredClone(result))).toBe(true);
  });

  it("never writes through a key named __proto__", () => {
    const text = long("p");
    const result = JSON.parse(`{"a": "${text}", "__proto__": {"b": "${text}"}}`) as Record<string, unknown>;
    const { reply, posted } = crossed(result);
    // The string stays whole under `__proto__` (read there, never written) and is emptied at `a`.
    expect(posted.repeats).toEqual([{ at: ["__proto__", "b"], copies: [["a"]] }]);
    expect(Object.getPrototypeOf((reply as { result: object }).result)).toBe(Object.prototype);
    expect(v8Equal((reply as { result: unknown }).result, structuredClone(result))).toBe(true);
  });

  it("sends a fleet node's result once with its repeated string, and the coordinator reads it whole", () => {
    const data = long("F") + long("G");
    const result = imageResult(data);
    const fields = encodeEnd("job-1", { kind: "ok", result: result as never }, 12);
    // The envelope holds the data once.
    expect(fields[5].length).toBeLessThan(data.length * 1.1);
    const reply = decodeReply(fields.map((field) => Buffer.from(field)));
    expect(reply).toMatchObject({ jobId: "job-1", kind: "end", executionMs: 12 });
    const read = (reply as unknown as { outcome: { result: ReturnType<typeof imageResult> } }).outcome.result;
    expect(read).toEqual(result);
    expect(read.structuredContent.data === read.content[1]!.data).toBe(true);
    // An error outcome crosses as it is.
    const failed = decodeReply(encodeEnd("job-2", { kind: "error", message: data }, 3).map((field) => Buffer.from(field)));
    expect(failed).toMatchObject({ kind: "end", outcome: { kind: "error", message: data } });
  });

  it("gives a worker tool's result whole, through a real pool", async () => {
    const tool = workerTool({
      name: "repeated",
      description: "",
      parameters: { type: "object", properties: { size: { type: "number" }, places: { type: "number" }, shared: { type: "boolean" } } },
      module: new URL("./fixtures/tools/repeated.mjs", import.meta.url),
      exportName: "repeated",
    });
    const runtime = createRuntime({ tools: [tool], pool: { minThreads: 1, maxThreads: 1 } });
    try {
      const message: AssistantMessage = {
        role: "assistant",
        content: [
          { type: "toolCall", id: "a", name: "repeated", arguments: { size: repeatMinChars * 4, places: 3, shared: false } },
          { type: "toolCall", id: "b", name: "repeated", arguments: { size: repeatMinChars * 2, places: 2, shared: true } },
        ],
      };
      const { messages } = await runtime.executeToolCalls(message);
      expect(messages.map((entry) => entry.isError)).toEqual([false, false]);
      const [a, b] = messages as unknown as { content: { text: string }[]; details: { copies: { text: string }[]; sameBlock?: unknown } }[];
      expect(a!.content[0]!.text).toBe("x".repeat(repeatMinChars * 4));
      expect(a!.details.copies.map((copy) => copy.text === a!.content[0]!.text)).toEqual([true, true]);
      expect(b!.details.copies[0]!.text).toBe(b!.content[0]!.text);
      expect(b!.details).toEqual({ copies: [{ text: "x".repeat(repeatMinChars * 2) }], sameBlock: b!.content[0] });
    } finally {
      await runtime.close();
    }
  });
});
