/**
 * One cold-start measurement, in a fresh process (suite `startup` runs it as
 * a child, once per measurement):
 *
 *   node dist-bench/startup-probe.js import-toolpool
 *   node dist-bench/startup-probe.js import-peers            (piscina, ajv and eventemitter3)
 *   node dist-bench/startup-probe.js batch-toolpool <threads> <calls>
 *   node dist-bench/startup-probe.js batch-piscina <threads> <calls>
 *
 * Prints `{ "importMs": …, "batchMs": … }`. `importMs` is the `import()` of
 * the package(s); `batchMs` (batch modes) runs from creating the pool to the
 * results of the first batch of no-op calls: toolpool's `createRuntime` with
 * one worker tool, then `executeToolCalls` of `calls` calls until its
 * messages return; bare Piscina's `new Piscina`, then `calls` `run()`s of the
 * same no-op module until all resolve. Both pools keep `threads` threads.
 * `TOOLPOOL_ENTRY` (a path or URL of a build's `dist/index.js`) measures that
 * build instead of the installed `toolpool` (bench/compare-cold-start.ts).
 */
const [mode, threadsArg = "2", callsArg = "4"] = process.argv.slice(2);
const threads = Number(threadsArg);
const calls = Number(callsArg);
const noopModule = new URL("./tools/noop.js", import.meta.url);
const toolpoolEntry = process.env.TOOLPOOL_ENTRY ?? "toolpool";

async function measure(): Promise<{ importMs: number; batchMs?: number }> {
  const importStart = performance.now();
  switch (mode) {
    case "import-toolpool": {
      await import(toolpoolEntry);
      return { importMs: performance.now() - importStart };
    }
    case "import-peers": {
      await Promise.all([import("piscina"), import("ajv"), import("eventemitter3")]);
      return { importMs: performance.now() - importStart };
    }
    case "batch-toolpool": {
      const { createRuntime, workerTool } = (await import(toolpoolEntry)) as typeof import("toolpool");
      const importMs = performance.now() - importStart;
      const { noopParameters } = await import("./lib/constants.js");
      const start = performance.now();
      const runtime = createRuntime({
        tools: [workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule })],
        pool: { maxThreads: threads, minThreads: threads },
      });
      const content = Array.from({ length: calls }, (_, index) => ({ type: "toolCall" as const, id: `call_${index}`, name: "noop", arguments: {} }));
      const { messages } = await runtime.executeToolCalls({ role: "assistant", content });
      const batchMs = performance.now() - start;
      if (messages.length !== calls || messages.some((message) => message.isError)) throw new Error("a no-op call failed");
      await runtime.close();
      return { importMs, batchMs };
    }
    case "batch-piscina": {
      const { Piscina } = await import("piscina");
      const importMs = performance.now() - importStart;
      const start = performance.now();
      const piscina = new Piscina({ filename: noopModule.href, minThreads: threads, maxThreads: threads, concurrentTasksPerWorker: 1 });
      await Promise.all(Array.from({ length: calls }, () => piscina.run(undefined)));
      const batchMs = performance.now() - start;
      await piscina.close();
      return { importMs, batchMs };
    }
    default:
      throw new Error(`Expected a mode of import-toolpool, import-peers, batch-toolpool, batch-piscina, got ${JSON.stringify(mode)}`);
  }
}

if (!Number.isInteger(threads) || threads < 1 || !Number.isInteger(calls) || calls < 1 || calls > 1_000) {
  throw new Error(`Expected threads >= 1 and 1..1000 calls, got ${JSON.stringify([threadsArg, callsArg])}`);
}
process.stdout.write(`${JSON.stringify(await measure())}\n`);
