import type { AfterToolCallResult } from "toolpool";

import type { Scenario } from "./differential.js";

const work = (id: string, args: Record<string, unknown> = {}) => ({ id, name: "work", arguments: args });
const gated = (id: string, args: Record<string, unknown> = {}) => work(id, { gate: id, ...args });

/**
 * Every rule of the spec, as a batch. Each runs through pi 0.73.1's real loop
 * and through toolpool, with toolpool's tools inline and in workers, in both
 * modes; the traces (events, messages, terminate, the arguments each hook saw)
 * must be identical, timestamps aside.
 */
export const scenarios: Record<string, Scenario> = {
  "ends in completion order, messages in call order": {
    calls: [gated("c1", { text: "one" }), gated("c2", { text: "two" }), gated("c3", { text: "three" })],
    releaseOrder: ["c3", "c1", "c2"],
  },
  "tool not found": {
    calls: [work("c1"), { id: "c2", name: "nope", arguments: { x: 1 } }, work("c3")],
  },
  "invalid arguments": {
    calls: [work("c1", { count: "abc" }), work("c2", { extra: true }), work("c3", { updates: "notalist" }), work("c4")],
  },
  "coerces primitives like pi": {
    calls: [
      work("c1", { count: "5", flag: "true", label: 7 }),
      work("c2", { flag: 0, count: true, label: false }),
      work("c3", { label: null, flag: "false", count: " 12 " }),
    ],
  },
  "applies prepareArguments before validation": {
    calls: [
      { id: "c1", name: "legacy", arguments: { q: "old" } },
      { id: "c2", name: "legacy", arguments: { query: "new", limit: "3" } },
      { id: "c3", name: "legacy", arguments: { q: 42 } },
      { id: "c4", name: "legacy", arguments: { nothing: 1 } },
    ],
  },
  "blocks with and without a reason": {
    calls: [work("c1"), work("c2"), work("c3"), work("c4"), work("c5")],
    beforeToolCall: ({ toolCall }) => {
      if (toolCall.id === "c2") return { block: true, reason: "not allowed here" };
      if (toolCall.id === "c3") return { block: true };
      if (toolCall.id === "c4") return { block: true, reason: "" };
      if (toolCall.id === "c5") return { block: false, reason: "ignored" };
      return undefined;
    },
  },
  "beforeToolCall throws": {
    calls: [work("c1"), work("c2"), work("c3")],
    beforeToolCall: ({ toolCall }) => {
      if (toolCall.id === "c2") throw new Error("policy service down");
      if (toolCall.id === "c3") throw "a thrown string";
      return undefined;
    },
  },
  "execute throws": {
    calls: [work("c1", { fail: "disk on fire" }), work("c2", { throwString: "plain string" }), work("c3")],
  },
  "streams onUpdate partials": {
    calls: [work("c1", { updates: ["10%", "60%", "100%"] }), gated("c2")],
  },
  "afterToolCall overrides each field": {
    calls: [work("c1"), work("c2"), work("c3"), work("c4"), work("c5", { fail: "bad" }), work("c6"), work("c7")],
    afterToolCall: ({ toolCall }) => {
      switch (toolCall.id) {
        case "c1":
          return { content: [{ type: "text", text: "replaced content" }] };
        case "c2":
          return { details: { replaced: true } };
        case "c3":
          return { isError: true };
        case "c4":
          return { terminate: true };
        case "c5":
          return { isError: false, content: [{ type: "text", text: "recovered" }] };
        case "c6":
          // null is not a replacement in pi (it merges with ??).
          return { details: null, content: undefined } as never;
        default:
          return {};
      }
    },
  },
  "afterToolCall throws": {
    calls: [work("c1"), work("c2")],
    afterToolCall: ({ toolCall }) => {
      if (toolCall.id === "c1") throw new Error("after hook exploded");
      return undefined;
    },
  },
  "terminates when every call asks": {
    calls: [work("c1", { terminate: true }), work("c2", { terminate: true })],
  },
  "does not terminate when only some ask": {
    calls: [work("c1", { terminate: true }), work("c2", { terminate: false }), work("c3")],
  },
  "terminates when a hook asks for every call": {
    calls: [work("c1"), work("c2", { terminate: false })],
    afterToolCall: () => ({ terminate: true }),
  },
  "an immediate error prevents termination": {
    calls: [work("c1", { terminate: true }), { id: "c2", name: "nope", arguments: {} }],
  },
  "one sequential tool forces a sequential batch": {
    calls: [gated("c1"), { id: "c2", name: "serial", arguments: { text: "serial" } }, gated("c3")],
    releaseOrder: ["c3", "c1"],
  },
  "mixes immediate and prepared calls": {
    calls: [
      gated("c1"),
      { id: "c2", name: "nope", arguments: {} },
      work("c3", { count: "x" }),
      work("c4"),
      gated("c5"),
      work("c6", { fail: "nope" }),
    ],
    beforeToolCall: ({ toolCall }) => (toolCall.id === "c4" ? { block: true, reason: "c4 blocked" } : undefined),
    releaseOrder: ["c5", "c1"],
  },
  "aborts in the middle of a batch": {
    calls: [gated("c1"), gated("c2"), gated("c3"), work("c4")],
    abortAfter: "c1",
  },
  "an empty batch": {
    calls: [],
  },
};

export const recordOnly = { beforeToolCall: () => undefined, afterToolCall: () => undefined };

/** Scenarios whose outcome needs no hook and no observer: toolpool's lean path must give pi's messages. */
export const unobservable = Object.entries(scenarios).filter(
  ([, scenario]) => !scenario.beforeToolCall && !scenario.afterToolCall && scenario.abortAfter === undefined,
);

const usage = (tokens: number) => ({
  input: tokens,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: tokens + 1,
  cost: { input: 0.5, output: 0.25, cacheRead: 0, cacheWrite: 0, total: 0.75 },
});

/**
 * Every rule of pi 1.6.0 that differs from 0.73.1 (the spec's `pi-1.6.md`),
 * as a batch: each runs through pi 1.6.0's real loop and through toolpool
 * with `pi: "1.6"`, tools inline, in workers and on a fleet, in both modes.
 * The scenarios above run through both too.
 */
export const pi16Scenarios: Record<string, Scenario> = {
  "an abort in beforeToolCall ends that call and every later one as aborted": {
    calls: [work("c1"), work("c2"), work("c3")],
    abortInBeforeToolCall: "c2",
  },
  "an abort in the first call's beforeToolCall wins over its block": {
    calls: [work("c1"), work("c2")],
    abortInBeforeToolCall: "c1",
    beforeToolCall: () => ({ block: true, reason: "blocked, but aborted first" }),
  },
  "a blocked call can terminate the batch": {
    calls: [work("c1"), work("c2")],
    beforeToolCall: () => ({ block: true, reason: "stop here", terminate: true }),
  },
  "a terminating block counts with the calls that ran": {
    calls: [work("c1"), work("c2", { terminate: true }), work("c3", { terminate: false })],
    beforeToolCall: ({ toolCall }) => (toolCall.id === "c1" ? { block: true, terminate: true } : undefined),
  },
  "a block without terminate keeps the batch going": {
    calls: [work("c1", { terminate: true }), work("c2")],
    beforeToolCall: ({ toolCall }) => (toolCall.id === "c2" ? { block: true, terminate: false } : undefined),
  },
  "partials sent after execute settled are dropped": {
    calls: [work("c1", { updates: ["on time"], lateUpdate: "too late" }), work("c2", { lateUpdate: "late too" }), work("c3")],
  },
  "usage goes onto the message": {
    calls: [work("c1", { usage: usage(10) }), work("c2")],
  },
  "a result without content gets an empty content list": {
    calls: [work("c1", { noContent: true }), work("c2", { noContent: true, reportError: true })],
  },
  "a returned result reports its own error": {
    calls: [work("c1", { reportError: true }), work("c2", { reportError: false }), work("c3", { reportError: true, terminate: true })],
  },
  "afterToolCall keeps the other fields and replaces or drops structuredContent": {
    calls: [
      work("c1", { structured: { a: 1 }, usage: usage(1) }),
      work("c2", { structured: { a: 2 } }),
      work("c3", { structured: [3] }),
      work("c4", { structured: "four" }),
      work("c5", { usage: usage(5) }),
      work("c6", { structured: null, reportError: true }),
    ],
    afterToolCall: ({ toolCall }): AfterToolCallResult => {
      switch (toolCall.id) {
        case "c1":
          return { content: [{ type: "text", text: "new content, old structure dropped" }] };
        case "c2":
          return { content: [{ type: "text", text: "new content" }], structuredContent: { a: "new" } };
        case "c3":
          return { details: { replaced: true } };
        case "c4":
          return { structuredContent: { four: 4 }, isError: true };
        case "c5":
          return { usage: usage(50), terminate: true };
        default:
          return { isError: false };
      }
    },
  },
  "a response cut off by the token limit runs none of its calls": {
    calls: [work("c1"), { id: "c2", name: "nope", arguments: {} }, work("c3", { count: "x" }), { id: "c4", name: "serial", arguments: {} }],
    stopReason: "length",
    beforeToolCall: () => ({ block: true, terminate: true }),
  },
  "a call whose arguments could not be parsed fails validation": {
    calls: [{ ...work("c1", { text: "partial" }), argumentsError: "Unexpected end of JSON input" }, work("c2")],
  },
  "coerces as pi-ai 1.6 does": {
    calls: [
      work("c1", { updates: "one", count: "7" }),
      work("c2", { label: null, flag: "false" }),
      work("c3", { count: 1.5 }),
      work("c4", { flag: "yes", label: ["x"] }),
    ],
  },
};
