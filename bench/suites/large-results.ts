/**
 * Suite 4: a 10 MB result crossing from a worker to the main thread, as text
 * (structured clone copies a string; nothing can move it) and as binary
 * (copied, or moved: toolpool moves every ArrayBuffer ≥ 64 KiB a result holds;
 * bare Piscina needs `Piscina.move`). The crossing time runs from the tool's
 * last instruction (a timestamp taken in the worker right before it returns)
 * to the result in the caller's hands; the call time is the whole call.
 */
import { Piscina } from "piscina";
import { createRuntime, workerTool, type AssistantMessage } from "toolpool";

import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";

export interface LargeResultsOptions {
  warmups: number;
  reps: number;
}

export interface LargeResultFigures {
  name: string;
  /** "text" or "binary": what the result carries. */
  payload: "text" | "binary";
  /** How it crosses: copied by structured clone, or moved (transferred). */
  mode: "copy" | "move";
  crossingMs: number[];
  callMs: number[];
  crossing: Summary;
  call: Summary;
}

export interface LargeResultsResult {
  options: LargeResultsOptions;
  bytes: number;
  figures: LargeResultFigures[];
}

export const largeContenders = {
  toolpoolText: "toolpool, 10 MB text result",
  toolpoolBinary: "toolpool, 10 MB Uint8Array in details (moved by toolpool)",
  piscinaText: "bare Piscina, 10 MB string (copied)",
  piscinaCopy: "bare Piscina, 10 MB ArrayBuffer copied",
  piscinaMove: "bare Piscina, 10 MB ArrayBuffer Piscina.move()",
} as const;

interface Contender {
  name: string;
  payload: "text" | "binary";
  mode: "copy" | "move";
  /** Runs one call; resolves with the worker's finishedAt stamp and the payload size. */
  call: () => Promise<{ finishedAt: number; size: number }>;
}

const largeModule = new URL("../tools/large.js", import.meta.url);
const bytes = 10 * 1024 * 1024;

export function estimateLargeResultsMs(options: LargeResultsOptions): number {
  return (options.warmups + options.reps) * 5 * 25;
}

export async function runLargeResultsSuite(options: LargeResultsOptions): Promise<LargeResultsResult> {
  const runtime = createRuntime({
    tools: [
      workerTool({ name: "big_text", description: "10 MB text", parameters: { type: "object" }, module: largeModule, exportName: "text" }),
      workerTool({ name: "big_binary", description: "10 MB binary", parameters: { type: "object" }, module: largeModule, exportName: "binary" }),
    ],
    pool: { maxThreads: 1, minThreads: 1, maxResultBytes: 64 << 20 },
  });
  const piscina = new Piscina({ filename: largeModule.href, minThreads: 1, maxThreads: 1, idleTimeout: runtime.options.pool.idleTimeout });
  piscina.on("error", (error: unknown) => logStep(`bare Piscina error: ${String(error)}`));
  const batchOf = (name: string): AssistantMessage => ({ role: "assistant", content: [{ type: "toolCall", id: "call", name, arguments: {} }] });
  const viaToolpool = async (name: string, size: (details: Record<string, unknown>, text: string) => number) => {
    const { messages } = await runtime.executeToolCalls(batchOf(name));
    const message = messages[0]!;
    if (message.isError) throw new Error(`${name} failed: ${JSON.stringify(message.content).slice(0, 300)}`);
    const details = message.details as Record<string, unknown>;
    return { finishedAt: details.finishedAt as number, size: size(details, (message.content[0] as { text: string }).text) };
  };
  const viaPiscina = async (kind: "text" | "copy" | "move") => {
    const result = (await piscina.run({ kind })) as { finishedAt: number; text?: string; data?: Uint8Array };
    return { finishedAt: result.finishedAt, size: result.text?.length ?? result.data?.byteLength ?? 0 };
  };
  const contenders: Contender[] = [
    { name: largeContenders.toolpoolText, payload: "text", mode: "copy", call: () => viaToolpool("big_text", (_, text) => text.length) },
    {
      name: largeContenders.toolpoolBinary,
      payload: "binary",
      mode: "move",
      call: () => viaToolpool("big_binary", (details) => (details.data as Uint8Array).byteLength),
    },
    { name: largeContenders.piscinaText, payload: "text", mode: "copy", call: () => viaPiscina("text") },
    { name: largeContenders.piscinaCopy, payload: "binary", mode: "copy", call: () => viaPiscina("copy") },
    { name: largeContenders.piscinaMove, payload: "binary", mode: "move", call: () => viaPiscina("move") },
  ];
  const samples = new Map(contenders.map((c) => [c.name, { crossing: [] as number[], call: [] as number[] }]));
  const unit = estimateLargeResultsMs(options) / (options.warmups + options.reps);
  try {
    for (let rep = 0; rep < options.warmups + options.reps; rep++) {
      for (const contender of rotate(contenders, rep)) {
        const start = performance.now();
        const { finishedAt, size } = await contender.call();
        const receivedAt = performance.timeOrigin + performance.now();
        const callMs = performance.now() - start;
        if (size !== bytes) throw new Error(`${contender.name}: expected ${bytes} bytes, got ${size}`);
        if (rep >= options.warmups) {
          samples.get(contender.name)!.crossing.push(receivedAt - finishedAt);
          samples.get(contender.name)!.call.push(callMs);
        }
      }
      advanceProgress(unit, `large results: ${rep < options.warmups ? "warm-up" : `rep ${rep - options.warmups + 1}/${options.reps}`}`);
    }
  } finally {
    await Promise.all([runtime.close(), piscina.close()]);
  }
  return {
    options,
    bytes,
    figures: contenders.map(({ name, payload, mode }) => {
      const { crossing: crossingMs, call: callMs } = samples.get(name)!;
      return { name, payload, mode, crossingMs, callMs, crossing: summarize(crossingMs), call: summarize(callMs) };
    }),
  };
}
