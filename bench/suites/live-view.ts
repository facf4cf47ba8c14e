/**
 * What the live view costs the pool: three serve-like servers (a runtime
 * with a no-op worker tool behind `createServer`, batches over loopback HTTP
 * in JSON mode), side by side: `--no-ui`, the view on with no one watching,
 * and the view on with one watcher reading `GET /v1/pool/events`. Fresh
 * servers every repetition, contenders in rotating order.
 */
import { createRuntime, createServer, workerTool, type ToolpoolServer } from "toolpool";

import { noopParameters } from "../lib/constants.js";
import { advanceProgress } from "../lib/progress.js";
import { rotate, runInFlight } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";

export interface LiveViewOptions {
  threads: number;
  /** Batches per repetition and contender. */
  batches: number;
  callsPerBatch: number;
  /** Batches outstanding at once. */
  concurrency: number;
  warmups: number;
  reps: number;
}

/** Contender names, used as keys in the JSON output. */
export const liveViewContenders = {
  off: "--no-ui",
  unwatched: "ui on, no watcher",
  watched: "ui on, one watcher",
} as const;

export interface LiveViewResult {
  options: LiveViewOptions;
  /** µs per call (batch wall time ÷ its calls, over the repetition) of each contender. */
  figures: { name: string; usPerCall: number[]; summary: Summary }[];
  /** Each contender with the view on ÷ `--no-ui`: median ratio, and paired per repetition. */
  ratios: { contender: string; ratioOfMedians: number; paired: Summary }[];
}

interface Contender {
  name: string;
  server: ToolpoolServer;
  url: string;
  /** Stops the watcher, if any. */
  stopWatching: () => void;
}

const token = "bench-live-view";

async function startContender(name: string, options: LiveViewOptions): Promise<Contender> {
  const runtime = createRuntime({
    tools: [
      workerTool({
        name: "noop",
        description: "Returns a constant",
        parameters: noopParameters,
        module: new URL("../tools/noop.js", import.meta.url),
      }),
    ],
    pool: { maxThreads: options.threads, minThreads: options.threads },
  });
  const server = createServer(runtime, { port: 0, token, ui: name !== liveViewContenders.off, maxEventLoopDelayMs: 0 });
  const url = await server.listen();
  const watching = new AbortController();
  if (name === liveViewContenders.watched) {
    const response = await fetch(`${url}/v1/pool/events`, { headers: { authorization: `Bearer ${token}` }, signal: watching.signal });
    if (response.status !== 200) throw new Error(`live view: the event stream answered ${response.status}`);
    // Read and discard, as a browser that keeps up would.
    void (async () => {
      for await (const _chunk of response.body!) {
        // discard
      }
    })().catch(() => {});
  }
  return { name, server, url, stopWatching: () => watching.abort() };
}

/** Runs `options.batches` batches on `contender`; returns µs per call. */
async function measure(contender: Contender, options: LiveViewOptions, rep: number): Promise<number> {
  const body = (index: number): string =>
    JSON.stringify({
      assistantMessage: {
        role: "assistant",
        content: Array.from({ length: options.callsPerBatch }, (_, call) => ({
          type: "toolCall",
          id: `c${rep}-${index}-${call}`,
          name: "noop",
          arguments: {},
        })),
      },
    });
  const headers = { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${token}` };
  const start = performance.now();
  await runInFlight(
    async (index) => {
      const response = await fetch(`${contender.url}/v1/batches`, { method: "POST", headers, body: body(index) });
      if (response.status !== 200) throw new Error(`live view: a batch answered ${response.status}`);
      await response.arrayBuffer();
    },
    options.batches,
    options.concurrency,
  );
  return ((performance.now() - start) * 1000) / (options.batches * options.callsPerBatch);
}

/** Expected duration, for the progress bar: ~60 µs per call over HTTP, ~0.5 s to start the servers. */
export function estimateLiveViewMs(options: LiveViewOptions): number {
  return (options.warmups + options.reps) * (500 + 3 * options.batches * options.callsPerBatch * 0.06);
}

export async function runLiveViewSuite(options: LiveViewOptions): Promise<LiveViewResult> {
  const names = Object.values(liveViewContenders);
  const samples = new Map<string, number[]>(names.map((name) => [name, []]));
  const total = options.warmups + options.reps;
  for (let rep = 0; rep < total; rep++) {
    const contenders = await Promise.all(names.map((name) => startContender(name, options)));
    try {
      for (const contender of contenders) await measure(contender, { ...options, batches: Math.min(50, options.batches) }, -1);
      for (const contender of rotate(contenders, rep)) {
        const us = await measure(contender, options, rep);
        if (rep >= options.warmups) samples.get(contender.name)!.push(us);
      }
    } finally {
      for (const contender of contenders) contender.stopWatching();
      await Promise.all(contenders.map((contender) => contender.server.close({ graceMs: 0 })));
    }
    advanceProgress(estimateLiveViewMs(options) / total, `live view: ${rep < options.warmups ? "warm-up" : "rep"} ${rep + 1}/${total} done`);
  }
  const figures = names.map((name) => ({ name, usPerCall: samples.get(name)!, summary: summarize(samples.get(name)!) }));
  const off = figures[0]!;
  const ratios = figures.slice(1).map((figure) => ({
    contender: figure.name,
    ratioOfMedians: figure.summary.median / off.summary.median,
    paired: summarize(figure.usPerCall.map((us, index) => us / off.usPerCall[index]!)),
  }));
  return { options, figures, ratios };
}
