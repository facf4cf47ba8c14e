/** What a pool thread that loads pi's coding tools costs, for `bench/coding-sessions.ts`. */
import { Worker } from "node:worker_threads";

/** What one thread that loads pi's tools costs: time to import them, and the process's RSS growth (thread and modules). */
export async function threadCost(): Promise<{ importMs: number; rssMb: number; bareRssMb: number; heapMb: number; bareHeapMb: number }> {
  const probe = async (withTools: boolean) => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    const worker = new Worker(
      `const { parentPort } = require("node:worker_threads");
       const started = performance.now();
       (${withTools} ? import(${JSON.stringify(new URL("../../dist/tools/coding/pi-coding-agent.js", import.meta.url).href)}).then((m) => m.importPiWorkerModules()) : Promise.resolve())
         .then(() => { const ms = performance.now() - started; globalThis.gc?.(); parentPort.postMessage({ ms, heap: process.memoryUsage().heapUsed }); });`,
      { eval: true },
    );
    const { ms, heap } = await new Promise<{ ms: number; heap: number }>((resolve) => worker.once("message", resolve));
    const rssMb = (process.memoryUsage().rss - before) / 1024 / 1024;
    await worker.terminate();
    return { importMs: ms, rssMb, heapMb: heap / 1024 / 1024 };
  };
  await probe(true); // the modules' first load from disk, outside the figures
  const bare = await probe(false);
  const loaded = await probe(true);
  return { importMs: loaded.importMs, rssMb: loaded.rssMb, bareRssMb: bare.rssMb, heapMb: loaded.heapMb, bareHeapMb: bare.heapMb };
}
