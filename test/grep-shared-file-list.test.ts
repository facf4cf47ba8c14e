import { once } from "node:events";
import { Worker } from "node:worker_threads";

import { describe, expect, it } from "vitest";

import {
  chunkFiles,
  controlSlots,
  countFound,
  createControl,
  FileListReader,
  FileListWriter,
  isControl,
  isStopped,
  Slot,
  stopAll,
  takeChunk,
} from "./support/internals.js";

const moduleUrl = new URL("../dist/tools/grep/shared-file-list.js", import.meta.url).href;
const names = (count: number, from = 0) => Array.from({ length: count }, (_, i) => `dir/file-${from + i}-é.txt`);
const never = new AbortController().signal;

/** Runs `body` (an async function of (list module, workerData) in a real worker thread); resolves with what it returns. */
async function inWorker<T>(body: string, workerData: unknown): Promise<T> {
  const worker = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     import(${JSON.stringify(moduleUrl)}).then((list) => (${body})(list, workerData)).then(
       (value) => parentPort.postMessage({ value }),
       (error) => parentPort.postMessage({ error: String(error) }),
     );`,
    { eval: true, workerData },
  );
  const [message] = (await once(worker, "message")) as [{ value?: T; error?: string }];
  await worker.terminate();
  if (message.error !== undefined) throw new Error(message.error);
  return message.value as T;
}

describe("grep's shared file list", () => {
  it("names its slots apart and checks a control array's shape", () => {
    expect(new Set(Object.values(Slot)).size).toBe(controlSlots);
    expect(Math.max(...Object.values(Slot))).toBe(controlSlots - 1);
    expect(isControl(createControl())).toBe(true);
    expect(isControl(new Int32Array(controlSlots))).toBe(false);
    expect(isControl(new Int32Array(new SharedArrayBuffer(4 * (controlSlots + 1))))).toBe(false);
  });

  it("lists whole chunks while the walk goes, the rest when it ends, and a reader decodes them in order", () => {
    const control = createControl();
    const writer = new FileListWriter(control, new SharedArrayBuffer(1 << 20));
    const reader = new FileListReader(control, writer.paths);
    const paths = names(chunkFiles * 2 + 5);
    expect(writer.publish(paths.slice(0, chunkFiles - 1))).toBe(true);
    expect(Atomics.load(control, Slot.filesListed)).toBe(0);
    expect(writer.publish(paths.slice(0, chunkFiles * 2 + 5))).toBe(true);
    expect(Atomics.load(control, Slot.filesListed)).toBe(chunkFiles * 2);
    reader.update();
    expect(reader.paths).toEqual(paths.slice(0, chunkFiles * 2));
    const version = Atomics.load(control, Slot.version);
    writer.end(paths);
    expect(Atomics.load(control, Slot.version)).toBeGreaterThan(version);
    expect(Atomics.load(control, Slot.listDone)).toBe(1);
    reader.update();
    expect(reader.paths).toEqual(paths);
  });

  it("stops listing at the start of the chunk whose path does not fit", () => {
    const control = createControl();
    const bytesPerPath = Buffer.byteLength(names(1)[0]!, "utf8") + 1;
    // Room for one chunk and a half.
    const writer = new FileListWriter(control, new SharedArrayBuffer(Math.floor(bytesPerPath * chunkFiles * 1.5)));
    writer.end(names(chunkFiles * 3));
    expect(writer.isFull).toBe(true);
    expect(writer.listed).toBe(chunkFiles);
    const reader = new FileListReader(control, writer.paths);
    expect(Atomics.load(control, Slot.filesListed)).toBe(chunkFiles);
    reader.update();
    // Paths written past the listed count may be decoded, but only listed files are ever searched.
    expect(reader.paths.slice(0, writer.listed)).toEqual(names(chunkFiles));
  });

  it("gives each chunk once, and none after the stop flag", () => {
    const control = createControl();
    expect([takeChunk(control, 3), takeChunk(control, 3), takeChunk(control, 3), takeChunk(control, 3)]).toEqual([0, 1, 2, -1]);
    const other = createControl();
    expect(takeChunk(other, 10)).toBe(0);
    stopAll(other);
    expect(isStopped(other)).toBe(true);
    expect(takeChunk(other, 10)).toBe(-1);
    expect(new FileListWriter(other, new SharedArrayBuffer(1024)).publish(names(chunkFiles))).toBe(false);
  });

  it("sets the stop flag once the totals pass the result's limits", () => {
    const control = createControl();
    countFound(control, 3, 30, 5, 1000);
    expect(isStopped(control)).toBe(false);
    countFound(control, 3, 30, 5, 1000);
    expect(isStopped(control)).toBe(true);
    const bytes = createControl();
    countFound(bytes, 1, 1001, 5, 1000);
    expect(isStopped(bytes)).toBe(true);
  });

  it("tells a waiting reader that its chunk is listed, or that its deadline passed", () => {
    const control = createControl();
    const writer = new FileListWriter(control, new SharedArrayBuffer(1 << 16));
    const reader = new FileListReader(control, writer.paths);
    // Nothing listed and the deadline already past: no wait.
    expect(reader.waitForChunk(0, never, 20, 0)).toBeUndefined();
    writer.publish(names(chunkFiles));
    expect(reader.waitForChunk(0, never, 20, 0)).toBe(chunkFiles);
    // A later chunk after the list ended: the files listed, fewer than the chunk needs.
    writer.end(names(chunkFiles + 3));
    expect(reader.waitForChunk(5, never, 20, 0)).toBe(chunkFiles + 3);
    const aborted = AbortSignal.abort(new Error("stop waiting"));
    expect(() => new FileListReader(createControl(), writer.paths).waitForChunk(0, aborted, 20, Number.POSITIVE_INFINITY)).toThrow("stop waiting");
  });

  it("hands chunks to readers on other threads as the walk lists them, each chunk to one thread", { timeout: 60_000 }, async () => {
    const control = createControl();
    const writer = new FileListWriter(control, new SharedArrayBuffer(1 << 20));
    const paths = names(chunkFiles * 8);
    const reader = `async (list, { control, paths }) => {
      const reader = new list.FileListReader(control, paths);
      const taken = [];
      for (;;) {
        const index = list.takeChunk(control, Number.POSITIVE_INFINITY);
        if (index === -1) break;
        const listed = reader.waitForChunk(index, new AbortController().signal, 20, Number.POSITIVE_INFINITY);
        if (index * ${chunkFiles} >= listed) break;
        reader.update();
        taken.push([index, reader.paths.slice(index * ${chunkFiles}, (index + 1) * ${chunkFiles})]);
      }
      return taken;
    }`;
    const readers = [
      inWorker<[number, string[]][]>(reader, { control, paths: writer.paths }),
      inWorker<[number, string[]][]>(reader, { control, paths: writer.paths }),
    ];
    // The list grows a chunk at a time, then ends.
    for (let chunk = 1; chunk <= 8; chunk++) writer.publish(paths.slice(0, chunk * chunkFiles));
    writer.end(paths);
    const taken = (await Promise.all(readers)).flat();
    expect(taken.map(([index]) => index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (const [index, chunk] of taken) expect(chunk).toEqual(paths.slice(index * chunkFiles, (index + 1) * chunkFiles));
  });
});
