import { describe, expect, it } from "vitest";

import { type BookedCall, CallBook, type PoolCallEvent, workerTool, type WorkerCallOutcome, type WorkerCallRequest } from "./support/internals.js";

const echo = workerTool({ name: "echo", description: "echo", parameters: { type: "object" }, module: new URL("file:///fake/tool.mjs") });

interface TestCall extends BookedCall {
  readonly name: string;
}

/** A book on a clock the test moves, with the calls it was told of an abort and the groups that aborted. */
function openBook() {
  let time = 1_000;
  const aborted: string[] = [];
  const groups: { id: number; calls: string[] }[] = [];
  const book = new CallBook<TestCall>({
    now: () => time,
    onAbort: (call) => aborted.push(call.name),
    onGroupAbort: (id, calls) => groups.push({ id, calls: calls.map((call) => call.name) }),
  });
  let seq = 0;
  const call = (name: string, request: Partial<WorkerCallRequest> = {}): TestCall => ({
    name,
    seq: ++seq,
    request: { tool: echo, toolCallId: `id-${name}`, args: {}, batchId: "batch", sessionKey: "session", ...request },
    enqueuedAt: time,
    startedAt: undefined,
  });
  const advance = (ms: number) => {
    time += ms;
  };
  return { book, call, advance, aborted, groups };
}

const ok: WorkerCallOutcome = { kind: "ok", result: { content: [], details: undefined } };

/** Whether `promise` has settled, after the microtasks queued so far. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
  return settled;
}

describe("CallBook", () => {
  it("counts calls queued, running and completed as they are added, start and end", () => {
    const { book, call } = openBook();
    const [a, b, c] = [call("a"), call("b"), call("c")];
    for (const each of [a, b, c]) book.add(each);
    expect([book.size, book.queued, book.running, book.completed]).toEqual([3, 3, 0, 0]);
    book.start(a, 1);
    expect([book.size, book.queued, book.running, book.completed]).toEqual([3, 2, 1, 0]);
    book.end(a, ok, book.timing(a));
    expect([book.size, book.queued, book.running, book.completed]).toEqual([2, 2, 0, 1]);
    // A call that ends before it starts leaves the queued ones.
    expect(book.end(b, ok, book.timing(b))).toBe(true);
    expect([book.size, book.queued, book.running, book.completed]).toEqual([1, 1, 0, 2]);
    expect(book.get(c.seq)).toBe(c);
    expect(book.get(a.seq)).toBeUndefined();
  });

  it("counts a call's start and end once, however often it is told", () => {
    const { book, call } = openBook();
    const a = call("a");
    book.add(a);
    book.start(a, 1);
    book.start(a, 2);
    expect([book.queued, book.running]).toEqual([0, 1]);
    expect(book.end(a, ok, book.timing(a))).toBe(true);
    expect(book.end(a, ok, book.timing(a))).toBe(false);
    expect([book.size, book.queued, book.running, book.completed]).toEqual([0, 0, 0, 1]);
  });

  it("lists the calls in the order they were added", () => {
    const { book, call } = openBook();
    const calls = ["a", "b", "c", "d"].map((name) => call(name));
    for (const each of calls) book.add(each);
    book.end(calls[1]!, ok, book.timing(calls[1]!));
    expect(book.inOrder().map((each) => each.name)).toEqual(["a", "c", "d"]);
    expect([...book.values()].map((each) => each.name).sort()).toEqual(["a", "c", "d"]);
  });

  it("emits queued, started and ended with the call's batch, place, wait and outcome", () => {
    const { book, call, advance } = openBook();
    const events: PoolCallEvent[] = [];
    book.events.on((event) => events.push(event));
    const local = call("local");
    const remote = call("remote");
    book.add(local);
    book.add(remote);
    advance(5);
    book.start(local, 3);
    book.start(remote, undefined, "node-1");
    advance(10);
    const localTiming = { ...book.timing(local), threadId: 3 };
    book.end(local, { kind: "error", message: "no", code: "TP_ERR_TIMEOUT" }, localTiming);
    book.end(remote, ok, { ...book.timing(remote), node: "node-1" });
    const base = { pool: "", batchId: "batch", sessionKey: "session", tool: "echo" };
    expect(events).toEqual([
      { type: "queued", ...base, seq: local.seq, toolCallId: "id-local", at: 1_000 },
      { type: "queued", ...base, seq: remote.seq, toolCallId: "id-remote", at: 1_000 },
      { type: "started", ...base, seq: local.seq, toolCallId: "id-local", at: 1_005, threadId: 3, queueWaitMs: 5 },
      { type: "started", ...base, seq: remote.seq, toolCallId: "id-remote", at: 1_005, threadId: undefined, node: "node-1", queueWaitMs: 5 },
      {
        type: "ended",
        ...base,
        seq: local.seq,
        toolCallId: "id-local",
        at: 1_015,
        outcome: "fault",
        code: "TP_ERR_TIMEOUT",
        threadId: 3,
        timing: { submittedAt: 1_000, startedAt: 1_005, endedAt: 1_015, threadId: 3 },
      },
      {
        type: "ended",
        ...base,
        seq: remote.seq,
        toolCallId: "id-remote",
        at: 1_015,
        outcome: "ok",
        code: undefined,
        threadId: undefined,
        node: "node-1",
        timing: { submittedAt: 1_000, startedAt: 1_005, endedAt: 1_015, node: "node-1" },
      },
    ]);
    // A local call's events name no node at all.
    expect(events.filter((event) => event.toolCallId === "id-local").some((event) => "node" in event)).toBe(false);
  });

  it("times a call that never started without a start", () => {
    const { book, call, advance } = openBook();
    const a = call("a");
    book.add(a);
    advance(7);
    expect(book.timing(a)).toEqual({ submittedAt: 1_000, endedAt: 1_007 });
  });

  it("makes no event while nobody listens: it reads nothing of the request for one", () => {
    const { book, call } = openBook();
    let reads = 0;
    const request = {
      tool: echo,
      args: {},
      get toolCallId() {
        reads += 1;
        return "counted";
      },
    };
    const a: TestCall = { ...call("a"), request };
    book.add(a);
    book.start(a, 1);
    book.end(a, ok, book.timing(a));
    expect(reads).toBe(0);
    // The same calls, listened to, read it for each event.
    const listener = () => {};
    book.events.on(listener);
    const b: TestCall = { ...call("b"), request };
    book.add(b);
    book.start(b, 1);
    book.end(b, ok, book.timing(b));
    expect(reads).toBe(3);
    book.events.off(listener);
  });
});

describe("CallBook, abort groups", () => {
  it("tells each call of an aborted signal, then its group once, with the id add returned", () => {
    const { book, call, aborted, groups } = openBook();
    const batch = new AbortController();
    const other = new AbortController();
    const [a, b, c] = [call("a", { signal: batch.signal }), call("b", { signal: batch.signal }), call("c", { signal: other.signal })];
    const ids = [a, b, c].map((each) => book.add(each));
    expect(ids[0]).toBeGreaterThan(0);
    expect(ids[1]).toBe(ids[0]);
    expect(ids[2]).not.toBe(ids[0]);
    expect(book.abortGroups).toBe(2);
    batch.abort();
    expect(aborted).toEqual(["a", "b"]);
    expect(groups).toEqual([{ id: ids[0], calls: ["a", "b"] }]);
    expect(book.abortGroups).toBe(1);
  });

  it("tells no call that ended before the abort, and lets go of a signal once its calls have ended", () => {
    const { book, call, aborted, groups } = openBook();
    const batch = new AbortController();
    const [a, b] = [call("a", { signal: batch.signal }), call("b", { signal: batch.signal })];
    book.add(a);
    book.add(b);
    book.end(a, ok, book.timing(a));
    expect(book.abortGroups).toBe(1);
    book.end(b, ok, book.timing(b));
    expect(book.abortGroups).toBe(0);
    batch.abort();
    expect(aborted).toEqual([]);
    expect(groups).toEqual([]);
  });

  it("tells a call of a signal aborted already at once, in no group", () => {
    const { book, call, aborted, groups } = openBook();
    const late = call("late", { signal: AbortSignal.abort() });
    expect(book.add(late)).toBe(0);
    expect(aborted).toEqual(["late"]);
    expect(groups).toEqual([]);
    // It is still in the book: the pool ends it.
    expect([book.size, book.abortGroups]).toEqual([1, 0]);
  });
});

describe("CallBook, drain", () => {
  it("resolves at once when empty, and once the last call has ended otherwise", async () => {
    const { book, call } = openBook();
    await expect(hasSettled(book.drained())).resolves.toBe(true);
    const [a, b] = [call("a"), call("b")];
    book.add(a);
    book.add(b);
    const drained = book.drained();
    book.start(a, 1);
    book.end(a, ok, book.timing(a));
    expect(await hasSettled(drained)).toBe(false);
    book.end(b, ok, book.timing(b));
    expect(await hasSettled(drained)).toBe(true);
  });

  it("waits afresh for calls added after a drain", async () => {
    const { book, call } = openBook();
    const a = call("a");
    book.add(a);
    const first = book.drained();
    book.end(a, ok, book.timing(a));
    expect(await hasSettled(first)).toBe(true);
    const b = call("b");
    book.add(b);
    const second = book.drained();
    expect(await hasSettled(second)).toBe(false);
    book.end(b, ok, book.timing(b));
    expect(await hasSettled(second)).toBe(true);
  });
});
