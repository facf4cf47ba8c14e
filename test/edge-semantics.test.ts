import {
  createRuntime,
  supportsPi16,
  workerTool,
  type AgentTool,
  type AgentToolResult,
  type AssistantMessage,
  type BatchEvent,
  type JsonSchema,
  type PiVersion,
  type ToolDefinition,
} from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import * as edge from "./fixtures/tools/edge-cases.mjs";
import { GateController } from "./support/gates.js";
import { until } from "./support/helpers.js";
import { schemaDraftAddresses } from "./support/schema-drafts.js";
import { runPiBatch } from "./support/pi-oracle.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/edge-semantics.test.ts");

/**
 * pi where the randomized suites never looked: schemas that name their
 * draft, execute returning a plain value, partials sent a few microtasks
 * after the tool settled or changed after sending, odd return values from
 * inline and worker tools, abort reasons and a thread's first abort. Each
 * case runs through pi's own loop (0.73.1, and 1.6.0 on Node >= 22.19) and
 * through toolpool, and must give the same events and messages.
 *
 * Longer than the house's ~400 lines: every case, the last describes' too,
 * is built from the helpers below (the pi-against-toolpool harness `runPi` /
 * `runToolpool` with its recorder, the tool builders `inlineTool` /
 * `edgeWorkerTool`), which have no other user; the cases read as one table
 * of pi's edge semantics.
 */
const edgeModule = new URL("./fixtures/tools/edge-cases.mjs", import.meta.url);
const systemPrompt = "You are a test.";
const history = [{ role: "user", content: "go", timestamp: 1 }];

interface Trace {
  events: unknown[];
  messages: unknown[];
  terminate: boolean;
}
type Outcome = Trace | { rejected: string; events: unknown[] };

interface CallSpec {
  name: string;
  arguments: Record<string, unknown>;
}

function assistantMessageOf(calls: CallSpec[]): AssistantMessage {
  return {
    role: "assistant",
    content: calls.map((call, index) => ({ type: "toolCall" as const, id: `c${index + 1}`, ...call })),
    stopReason: "toolUse",
    timestamp: 2,
  };
}

/** Timestamps aside and `durationMs` by presence, as a transcript would keep it (a JSON round trip). */
function normalize(value: unknown): unknown {
  if (value === undefined) return value;
  return JSON.parse(JSON.stringify(value), (key, field: unknown) => {
    if (key === "timestamp" && typeof field === "number") return 0;
    if (key === "durationMs" && typeof field === "number" && Number.isInteger(field) && field >= 0) return "whole ms";
    return field;
  });
}

interface RunOptions {
  signal?: AbortSignal;
  /** A sink that takes this long (a macrotask) over each event: later events wait behind it. */
  slowSink?: boolean;
  /** @default "parallel" */
  toolExecution?: "parallel" | "sequential";
  /** The sink throws (synchronously) when it receives an update event. */
  throwOnUpdate?: boolean;
}

function recorder(options: RunOptions): { events: unknown[]; emit: (event: BatchEvent) => Promise<void> | undefined } {
  const events: unknown[] = [];
  return {
    events,
    // The event as it is when the sink receives it: what a transcript writer would keep.
    emit: (event) => {
      events.push(normalize(event));
      if (options.throwOnUpdate && event.type === "tool_execution_update") throw new Error("the sink refused an update");
      return options.slowSink ? new Promise((resolve) => setImmediate(resolve)) : Promise.resolve();
    },
  };
}

async function runPi(pi: PiVersion, tools: AgentTool[], calls: CallSpec[], options: RunOptions = {}): Promise<Outcome> {
  const { events, emit } = recorder(options);
  try {
    const outcome = await runPiBatch({
      tools,
      assistantMessage: assistantMessageOf(calls),
      toolExecution: options.toolExecution ?? "parallel",
      systemPrompt,
      history,
      emit,
      pi,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.throwOnUpdate ? { syncSink: true } : {}),
    });
    return { events, messages: outcome.messages.map(normalize), terminate: outcome.terminate };
  } catch (error) {
    return { rejected: String(error), events };
  }
}

async function runToolpool(pi: PiVersion, tools: ToolDefinition[], calls: CallSpec[], options: RunOptions = {}): Promise<Outcome> {
  const { events, emit } = recorder(options);
  const runtime = createRuntime({ pi, tools, toolExecution: options.toolExecution ?? "parallel", pool: { maxThreads: 2, minThreads: 1 } });
  try {
    const outcome = await runtime.executeToolCalls(assistantMessageOf(calls), {
      context: { systemPrompt, messages: [...history] },
      emit,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { events, messages: outcome.messages.map(normalize), terminate: outcome.terminate };
  } catch (error) {
    return { rejected: String(error), events };
  } finally {
    await runtime.close();
  }
}

type Execute = (args: Record<string, unknown>, onUpdate: (partial: AgentToolResult<unknown>) => void, signal?: AbortSignal) => unknown;

/** An inline tool, typed as pi's although its execute may return anything (as JavaScript tools do). */
function inlineTool(name: string, execute: Execute, parameters: JsonSchema = { type: "object", properties: {} }): AgentTool {
  return {
    name,
    label: name,
    description: `edge case ${name}`,
    parameters,
    execute: ((_id: string, args: Record<string, unknown>, signal?: AbortSignal, onUpdate?: (partial: AgentToolResult<unknown>) => void) =>
      execute(args, onUpdate ?? (() => {}), signal)) as AgentTool["execute"],
  };
}

function edgeWorkerTool(name: string, exportName: string, parameters: JsonSchema = { type: "object" }): ToolDefinition {
  return workerTool({ name, description: `edge case ${name}`, parameters, module: edgeModule, exportName });
}

const sibling: CallSpec = { name: "fine", arguments: {} };
const fineTool = inlineTool("fine", async () => ({ content: [{ type: "text", text: "fine" }], details: {} }));
const piVersions = ["0.73", "1.6"] satisfies PiVersion[];
const titleOf = (pi: PiVersion) => (pi === "1.6" ? "against pi 1.6.0 (pi 1.6)" : "against pi 0.73.1");

for (const pi of piVersions) {
  describe.skipIf(pi === "1.6" && !supportsPi16())(`Edge cases ${titleOf(pi)}`, () => {
    describe("schemas that name their draft ($schema)", () => {
      const schemaFor = (draft: string): JsonSchema => ({
        $schema: draft,
        type: "object",
        properties: { count: { type: "integer" }, item: { $ref: "#/$defs/item" } },
        $defs: { item: { type: "object", properties: { n: { type: "number" } }, required: ["n"] } },
        required: ["count"],
      });
      for (const draft of schemaDraftAddresses) {
        it(`validates with ${draft} as pi does, inline and in a worker`, async () => {
          const schema = schemaFor(draft);
          const calls: CallSpec[] = [
            { name: "work", arguments: { count: "5", item: { n: "2" } } },
            { name: "work", arguments: { count: "many" } },
            { name: "work", arguments: { count: 1, item: {} } },
          ];
          const piTool = inlineTool("work", (args) => edge.echoArguments(args), schema);
          const expected = await runPi(pi, [piTool], calls);
          // (pi 0.73.1 coerces nothing behind a $ref; pi 1.6.0 does.)
          expect((expected as Trace).messages).toHaveLength(3);
          expect(await runToolpool(pi, [piTool], calls)).toEqual(expected);
          const inWorker = workerTool({
            name: "work",
            description: "edge case work",
            parameters: schema,
            module: edgeModule,
            exportName: "echoArguments",
          });
          expect(await runToolpool(pi, [inWorker], calls)).toEqual(expected);
        });
      }

      it("takes draft-04's boolean exclusiveMinimum as pi does", async () => {
        const schema: JsonSchema = {
          $schema: "http://json-schema.org/draft-04/schema#",
          type: "object",
          properties: { n: { type: "number", minimum: 0, exclusiveMinimum: true } },
          required: ["n"],
        };
        const piTool = inlineTool("work", (args) => edge.echoArguments(args), schema);
        const calls = [
          { name: "work", arguments: { n: 5 } },
          { name: "work", arguments: { n: -1 } },
        ];
        const expected = await runPi(pi, [piTool], calls);
        expect((expected as Trace).messages).toHaveLength(2);
        expect(await runToolpool(pi, [piTool], calls)).toEqual(expected);
      });

      // Malformed under the draft they name, yet pi registers each tool and
      // runs its calls: validated as pi's library reads them, or (a pattern
      // no RegExp takes) each call pi's error result with the compile error.
      const malformedSchemas: [string, JsonSchema][] = [
        [
          "2020-12 with a tuple `items` array",
          {
            $schema: "https://json-schema.org/draft/2020-12/schema",
            type: "object",
            properties: { items: { type: "array", items: [{ type: "string" }, { type: "number" }] } },
          },
        ],
        ["draft-07 with `prefixItems`", { type: "object", properties: { items: { type: "array", prefixItems: [{ type: "string" }] } } }],
        [
          "a keyword of the wrong type",
          { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", prefixItems: 3, required: "items" },
        ],
        ["a pattern that does not compile", { type: "object", properties: { items: { type: "string", pattern: "(" } } }],
      ];
      for (const [what, schema] of malformedSchemas) {
        it(`runs each call of a schema malformed under its draft (${what}) as pi does, inline and in a worker`, async () => {
          const calls: CallSpec[] = [
            { name: "work", arguments: { items: ["a", "1"] } },
            { name: "work", arguments: { items: ["a", "b"] } },
            { name: "work", arguments: {} },
          ];
          // Sequential: the end events of calls on threads come in completion order.
          const options = { toolExecution: "sequential" } as const;
          const expected = await runPi(pi, [inlineTool("work", (args) => edge.echoArguments(args), schema)], calls, options);
          expect((expected as Trace).messages).toHaveLength(3);
          expect(await runToolpool(pi, [inlineTool("work", (args) => edge.echoArguments(args), schema)], calls, options)).toEqual(expected);
          expect(await runToolpool(pi, [edgeWorkerTool("work", "echoArguments", schema)], calls, options)).toEqual(expected);
        });
      }
    });

    describe("execute returning a plain value (no promise)", () => {
      it("is awaited as pi awaits it: a result, a throw, and the sibling call alike", async () => {
        const tools = [
          fineTool,
          inlineTool("plain", () => ({ content: [{ type: "text", text: "no promise" }], details: { sync: true } })),
          inlineTool("throws", () => {
            throw new Error("thrown before any promise");
          }),
        ];
        const calls = [{ name: "plain", arguments: {} }, sibling, { name: "throws", arguments: {} }];
        const expected = await runPi(pi, tools, calls);
        expect(JSON.stringify(expected)).toContain("no promise");
        expect(await runToolpool(pi, tools, calls)).toEqual(expected);
      });
    });

    describe("partials sent after execute settled", () => {
      /** Sends its partial `depth` microtasks after the tool returned (`returnsPromise`: an async tool). */
      const lateBy = (depth: number, returnsPromise: boolean) =>
        inlineTool(`late${depth}`, (_args, onUpdate) => {
          edge.sendLateBy(depth, onUpdate);
          const result = { content: [{ type: "text", text: "done" }], details: {} };
          return returnsPromise ? Promise.resolve(result) : result;
        });
      for (const returnsPromise of [true, false]) {
        for (const depth of [0, 1, 2, 3, 4, 6]) {
          it(`one sent ${depth + 1} microtask(s) late is emitted or dropped as pi does (${returnsPromise ? "a promise" : "a plain value"})`, async () => {
            const tools = [lateBy(depth, returnsPromise)];
            const calls = [{ name: `late${depth}`, arguments: {} }];
            const expected = await runPi(pi, tools, calls);
            expect(await runToolpool(pi, tools, calls)).toEqual(expected);
          });
        }
      }
      it("one sent on a later turn (a timer) is emitted or dropped as pi does", async () => {
        const tools = [
          inlineTool("timer", async (_args, onUpdate) => {
            setImmediate(() => onUpdate({ content: [{ type: "text", text: "a turn late" }], details: {} }));
            return { content: [], details: {} };
          }),
          // Keeps the batch running past the late partial.
          inlineTool("slow", () => new Promise((resolve) => setTimeout(() => resolve({ content: [], details: {} }), 20))),
        ];
        const calls = [
          { name: "timer", arguments: {} },
          { name: "slow", arguments: {} },
        ];
        const expected = await runPi(pi, tools, calls);
        expect(await runToolpool(pi, tools, calls)).toEqual(expected);
      });
    });

    describe("a partial changed by the tool after it was sent", () => {
      const mutating = inlineTool("mutating", async (_args, onUpdate) => {
        const partial = { content: [{ type: "text" as const, text: "as sent" }], details: { step: 1 } };
        onUpdate(partial);
        partial.content[0]!.text = "changed after sending";
        partial.details.step = 2;
        onUpdate(partial);
        partial.details.step = 3;
        await new Promise((resolve) => setImmediate(resolve));
        return { content: [{ type: "text", text: "done" }], details: {} };
      });
      it("reaches the sink as it was sent", async () => {
        const calls = [{ name: "mutating", arguments: {} }];
        const expected = await runPi(pi, [mutating], calls);
        expect(JSON.stringify(expected)).toContain('"step":1');
        expect(await runToolpool(pi, [mutating], calls)).toEqual(expected);
      });
      it("reaches a slow sink as it was sent, when it had to wait behind other events", async () => {
        const calls = [{ name: "mutating", arguments: {} }, sibling];
        const expected = await runPi(pi, [mutating, fineTool], calls, { slowSink: true });
        expect(JSON.stringify(expected)).toContain('"step":2');
        expect(await runToolpool(pi, [mutating, fineTool], calls, { slowSink: true })).toEqual(expected);
      });
    });

    describe("a result whose isError cannot be read", () => {
      it("is the call's error result where pi reads it, and the batch goes on", async () => {
        const tools = [
          fineTool,
          inlineTool("bad", async () => {
            // Throws on the first read only: the sink's copy of what pi 0.73 passes on (it never reads it) can be made.
            let reads = 0;
            return {
              content: [{ type: "text", text: "looks fine" }],
              details: {},
              get isError(): boolean | undefined {
                if (reads++ === 0) throw new Error("isError getter exploded");
                return undefined;
              },
            };
          }),
        ];
        const calls = [{ name: "bad", arguments: {} }, sibling];
        const expected = await runPi(pi, tools, calls);
        // pi 0.73.1 never reads it: the first read is the sink's, whose throw rejects the batch in both.
        if (pi === "1.6") {
          expect(expected).not.toHaveProperty("rejected");
          expect(JSON.stringify(expected)).toContain("isError getter exploded");
        }
        expect(await runToolpool(pi, tools, calls)).toEqual(expected);
      });
    });

    describe("an event sink that throws at once on an update", () => {
      const throwingSink = { throwOnUpdate: true };
      it("throws into an inline tool's onUpdate, as pi's does", async () => {
        const tools = [inlineTool("sends", (_args, onUpdate) => edge.sendsOnePartial({}, { onUpdate }))];
        const calls = [{ name: "sends", arguments: {} }];
        const expected = await runPi(pi, tools, calls, throwingSink);
        expect(JSON.stringify(expected)).toContain("onUpdate threw: the sink refused an update");
        expect(await runToolpool(pi, tools, calls, throwingSink)).toEqual(expected);
      });
      it("rejects a batch of a worker tool with the sink's error, never as an unhandled rejection", async () => {
        const outcome = await runToolpool(pi, [edgeWorkerTool("sends", "sendsOnePartial")], [{ name: "sends", arguments: {} }], throwingSink);
        expect(outcome).toMatchObject({ rejected: "Error: the sink refused an update" });
      });
    });

    describe("odd return values", () => {
      const oddValues = ["null", "undefined", "string", "number", "empty", "array", "noContent", "nullContent"];
      const ways = [{ sync: true }, {}, { later: true }];
      const noResult = new Set(["null", "undefined"]);
      for (const value of oddValues) {
        it(`a tool returning ${value} ends once with one message, inline and in a worker, as pi ${pi === "1.6" ? "does" : "does where it can"}`, async () => {
          const inline = inlineTool("odd", (args) => edge.oddResult(args));
          const worker = edgeWorkerTool("odd", "oddResult");
          for (const way of ways) {
            for (const toolExecution of ["parallel", "sequential"] as const) {
              // The sibling settles in the same turn: which of the two ends first is pi's too.
              const calls = [{ name: "odd", arguments: { value, ...way } }, sibling];
              const expected = await runPi(pi, [inline, fineTool], calls, { toolExecution });
              const fromInline = await runToolpool(pi, [inline, fineTool], calls, { toolExecution });
              if (pi === "0.73" && noResult.has(value)) {
                // pi 0.73.1 emits the call's end event, then rejects the whole batch reading the
                // missing result's content; toolpool gives the call pi 1.6's error result instead.
                expect(expected).toMatchObject({ rejected: `TypeError: Cannot read properties of ${value} (reading 'content')` });
                expect(fromInline).toMatchObject({
                  messages: [{ isError: true, content: [{ text: `Cannot read properties of ${value} (reading 'isError')` }] }, { isError: false }],
                });
              } else {
                expect(fromInline).toEqual(expected);
              }
              const trace = fromInline as Trace;
              expect(trace.events.filter((event) => (event as BatchEvent).type === "tool_execution_end")).toHaveLength(2);
              expect(trace.messages).toHaveLength(2);
              // In a worker, the odd call ends after its inline sibling in a parallel batch: compared in sequence.
              if (toolExecution === "sequential") expect(await runToolpool(pi, [worker, fineTool], calls, { toolExecution })).toEqual(fromInline);
            }
          }
        });
      }
    });

    describe("abort reasons", () => {
      const gates = new GateController();
      afterAll(() => gates.close());
      let run = 0;
      const reasons: [string, () => unknown][] = [
        ["a string", () => "stopped by user"],
        ["an Error", () => new Error("the user pressed stop")],
        ["a TypeError", () => new TypeError("wrong kind of stop")],
        ["an object", () => ({ code: 42, by: "user" })],
        ["none (the default AbortError)", () => undefined],
      ];
      for (const [label, reasonOf] of reasons) {
        for (const busy of [false, true]) {
          it(`${label} reaches a worker tool ${busy ? "busy in a loop" : "awaiting its abort"} as it reaches pi's inline tool`, async () => {
            const seen: string[] = [];
            for (const where of ["pi", "worker"] as const) {
              const gate = `edge-abort-${pi}-${++run}`;
              const controller = new AbortController();
              void gates.whenWaiting(gate).then(() => {
                const reason = reasonOf();
                if (reason === undefined) controller.abort();
                else controller.abort(reason);
              });
              // pi's tool awaits its abort: busy in a loop, it would hold the one thread the abort must come from.
              const outcome =
                where === "pi"
                  ? await runPi(
                      pi,
                      [inlineTool("wait", (args, _onUpdate, signal) => edge.abortReason(args, { signal }))],
                      [{ name: "wait", arguments: { gate } }],
                      {
                        signal: controller.signal,
                      },
                    )
                  : await runToolpool(pi, [edgeWorkerTool("wait", "abortReason")], [{ name: "wait", arguments: { gate, busy } }], {
                      signal: controller.signal,
                    });
              seen.push(((outcome as Trace).messages[0] as { content: { text: string }[] }).content[0]!.text);
            }
            expect(seen[1]).toBe(seen[0]);
            expect(seen[0]).not.toBe("");
          });
        }
      }
      it("a reason that cannot cross threads (a function) leaves the worker tool the default AbortError", async () => {
        const gate = `edge-abort-${pi}-${++run}`;
        const controller = new AbortController();
        void gates.whenWaiting(gate).then(() => controller.abort(() => "not cloneable"));
        const outcome = await runToolpool(pi, [edgeWorkerTool("wait", "abortReason")], [{ name: "wait", arguments: { gate } }], {
          signal: controller.signal,
        });
        expect((outcome as Trace).messages[0]).toMatchObject({ content: [{ text: "DOMException AbortError: This operation was aborted" }] });
      });
    });
  });
}

describe("A forced close", () => {
  it("ends a runToolCall whose onUpdate never settles, and nothing the tool sends afterwards is delivered", async () => {
    const sent: string[] = [];
    let isClosed = false;
    let sentAfterClose = 0;
    let timer: NodeJS.Timeout | undefined;
    const hanging = inlineTool("hang", (_args, onUpdate) => {
      onUpdate({ content: [{ type: "text", text: "before the close" }], details: {} });
      timer = setInterval(() => {
        if (isClosed) sentAfterClose++;
        onUpdate({ content: [{ type: "text", text: "after the close" }], details: {} });
      }, 1);
      return new Promise(() => {});
    });
    const runtime = createRuntime({ tools: [hanging] });
    try {
      const call = runtime.runToolCall(
        { type: "toolCall", id: "h1", name: "hang", arguments: {} },
        {
          onUpdate: (partial) => {
            sent.push((partial.content[0] as { text: string }).text);
            return new Promise(() => {}) as never;
          },
        },
      );
      await new Promise((resolve) => setImmediate(resolve));
      await runtime.close({ force: true });
      isClosed = true;
      const outcome = await call;
      expect(outcome).toMatchObject({ isError: true, result: { details: { code: "TP_ERR_CLOSED" } } });
      const count = sent.length;
      // Counted, not timed: twenty sends after the close, each a turn of the event loop of its own.
      await until(
        () => sentAfterClose >= 20,
        () => `20 updates sent after the close (${sentAfterClose} so far)`,
      );
      expect(sent.length).toBe(count);
      expect(sent[0]).toBe("before the close");
    } finally {
      clearInterval(timer);
    }
  });
});

describe("Abort reasons heard by a thread", () => {
  const gates = new GateController();
  afterAll(() => gates.close());
  it("keep the running call's reason however many other calls' aborts come after it", { timeout: 120_000 }, async () => {
    const runtime = createRuntime({
      tools: [edgeWorkerTool("wait", "reasonAfterGate"), edgeWorkerTool("other", "abortReason")],
      // The waiting call looks at its signal only once its gate opens: no deadline for stopping.
      pool: { maxThreads: 2, minThreads: 2, abortGraceMs: 600_000 },
    });
    try {
      const gate = `edge-heard-${process.pid}`;
      const mine = new AbortController();
      const running = runtime.executeToolCalls(assistantMessageOf([{ name: "wait", arguments: { gate } }]), { signal: mine.signal });
      await gates.whenWaiting(gate);
      mine.abort("the first reason");
      // 300 calls, one after another on the other thread, each aborted while it runs: each abort is
      // a message to both threads, heard by the waiting one while it has not taken its signal yet.
      for (let index = 0; index < 300; index++) {
        const otherGate = `${gate}-other-${index}`;
        const controller = new AbortController();
        void gates.whenWaiting(otherGate).then(() => controller.abort("another reason"));
        const other = await runtime.executeToolCalls(assistantMessageOf([{ name: "other", arguments: { gate: otherGate } }]), {
          signal: controller.signal,
        });
        expect(other.messages[0]).toMatchObject({ content: [{ text: 'string: "another reason"' }] });
      }
      gates.open(gate);
      const outcome = await running;
      expect(outcome.messages[0]).toMatchObject({ content: [{ text: 'string: "the first reason"' }] });
    } finally {
      await runtime.close();
    }
  });
});

describe("A worker thread's first abort", () => {
  const gates = new GateController();
  afterAll(() => gates.close());
  it("loads nothing when it comes: the thread paid for its channel at start-up (Node 22 loaded ~80 modules, ~25 ms, on the first message)", async () => {
    const runtime = createRuntime({ tools: [edgeWorkerTool("wait", "loadsOnAbort")], pool: { maxThreads: 1, minThreads: 1 } });
    try {
      for (const round of [1, 2]) {
        const gate = `edge-first-abort-${process.pid}-${round}`;
        const controller = new AbortController();
        void gates.whenWaiting(gate).then(() => controller.abort());
        const outcome = await runtime.executeToolCalls(assistantMessageOf([{ name: "wait", arguments: { gate } }]), { signal: controller.signal });
        expect(outcome.messages[0]).toMatchObject({ isError: false, content: [{ text: "aborted" }], details: { loaded: [] } });
      }
    } finally {
      await runtime.close();
    }
  });

  it("a worker tool that returns a plain value drops a partial sent a microtask later, where pi emits it (docs/design.md, deliberate difference 2)", async () => {
    const calls = [{ name: "sync", arguments: {} }];
    const inline = inlineTool("sync", (_args, onUpdate) => edge.syncThenPartial({}, { onUpdate }));
    const expected = await runPi("0.73", [inline], calls);
    const fromWorker = (await runToolpool("0.73", [edgeWorkerTool("sync", "syncThenPartial")], calls)) as Trace;
    const updates = (trace: Outcome) => trace.events.filter((event) => (event as BatchEvent).type === "tool_execution_update");
    expect(updates(expected)).toHaveLength(1);
    expect(updates(fromWorker)).toHaveLength(0);
    expect(fromWorker.events.filter((event) => (event as BatchEvent).type !== "tool_execution_update")).toEqual(
      expected.events.filter((event) => (event as BatchEvent).type !== "tool_execution_update"),
    );
  });
});
