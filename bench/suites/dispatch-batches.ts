/**
 * Suite 2, third mode: whole batches of no-op calls, each contender in a
 * process of its own. A batch of 64 tool calls through
 * `runtime.executeToolCalls` against 64 `piscina.run` awaited together (bare
 * Piscina at its defaults and at toolpool's settings), and 64
 * `agentTools()[0].execute` at once.
 *
 * Why processes of their own: in one process the contenders share one heap
 * and one garbage collector, so a scavenge that one contender's garbage
 * made due can fall in another's turn, and Piscina's code, which toolpool
 * runs too, is compiled for the shapes of every pool at once. Here each
 * contender pays for its own garbage and runs its own compiled code. The
 * processes live side by side and take turns chunk by chunk (the parent
 * asks one at a time; the others sleep meanwhile, their threads blocked),
 * so the machine's drift falls on every contender alike.
 */
import { fork, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { createRuntime, workerTool, type AssistantMessage } from "toolpool";
import type * as Toolpool from "toolpool";

import { createBarePiscina } from "../lib/bare-piscina.js";
import { noopParameters } from "../lib/constants.js";
import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { summarize, type Summary } from "../lib/stats.js";

export interface DispatchBatchesOptions {
  threads: number;
  /** Calls per batch. */
  batchCalls: number;
  /** Batches per turn of a contender. */
  chunkBatches: number;
  /** Turns of each contender per repetition. */
  chunks: number;
  /** Batches each contender runs before the first repetition. */
  warmupBatches: number;
  reps: number;
  /**
   * Other builds of toolpool (`dist/index.js` paths) to run a batch of on
   * besides this one's, each as a contender of its own (`compare-builds
   * --batches`): the name says which.
   */
  builds?: { name: string; index: string }[];
}

/** Contender names, used as keys in the JSON output. */
export const batchContenders = {
  piscinaDefaults: "bare Piscina 5, its defaults (64 run() at once)",
  piscina: "bare Piscina 5, toolpool's settings (64 run() at once)",
  batch: "toolpool executeToolCalls (one batch of 64 calls)",
  agentTool: "toolpool agentTools()[0].execute (64 at once)",
} as const;

type ContenderKey = keyof typeof batchContenders | `build:${number}`;

const fixedKeys = Object.keys(batchContenders) as (keyof typeof batchContenders)[];

/** The contenders of a run: the fixed ones, then one per other build. */
function contenderKeysOf(options: DispatchBatchesOptions): ContenderKey[] {
  return [...fixedKeys, ...(options.builds ?? []).map((_, index): ContenderKey => `build:${index}`)];
}

function nameOf(key: ContenderKey, options: DispatchBatchesOptions): string {
  if (!key.startsWith("build:")) return batchContenders[key as keyof typeof batchContenders];
  return `toolpool executeToolCalls, ${options.builds![Number(key.slice("build:".length))]!.name} (one batch of ${options.batchCalls} calls)`;
}

export interface DispatchBatchesResult {
  options: DispatchBatchesOptions;
  /** µs per call of each contender, one figure per repetition. */
  figures: { name: string; usPerCall: number[]; summary: Summary }[];
  /** Each contender but the baseline: median ratio, and paired per repetition. */
  ratiosToDefaults: { contender: string; ratioOfMedians: number; paired: Summary }[];
  ratiosToSettings: { contender: string; ratioOfMedians: number; paired: Summary }[];
}

/** Messages between the parent and a contender's process. */
type ToChild = { run: number } | { close: true };
type FromChild = { ready: true } | { ms: number } | { error: string };

/** Expected duration, for the progress bar: ~40 µs per call and contender, ~1 s to start the processes. */
export function estimateDispatchBatchesMs(options: DispatchBatchesOptions): number {
  const batches = options.warmupBatches + options.reps * options.chunks * options.chunkBatches;
  return 1000 + contenderKeysOf(options).length * batches * options.batchCalls * 0.04;
}

export async function runDispatchBatchesSuite(options: DispatchBatchesOptions): Promise<DispatchBatchesResult> {
  logStep(`dispatch: batches of ${options.batchCalls}, each contender in a process of its own`);
  const contenderKeys = contenderKeysOf(options);
  const children = contenderKeys.map((key) => new ContenderProcess(key, options));
  try {
    await Promise.all(children.map((child) => child.ready));
    for (const child of children) await child.run(options.warmupBatches);
    const perRep = new Map<ContenderKey, number[]>(contenderKeys.map((key) => [key, []]));
    const callsPerRep = options.chunks * options.chunkBatches * options.batchCalls;
    for (let rep = 0; rep < options.reps; rep++) {
      const totals = new Map<ContenderKey, number>(contenderKeys.map((key) => [key, 0]));
      for (let chunk = 0; chunk < options.chunks; chunk++) {
        for (const child of rotate(children, rep + chunk)) totals.set(child.key, totals.get(child.key)! + (await child.run(options.chunkBatches)));
      }
      for (const key of contenderKeys) perRep.get(key)!.push((totals.get(key)! * 1000) / callsPerRep);
      advanceProgress(
        (estimateDispatchBatchesMs(options) - 1000) / options.reps,
        `dispatch: batches of ${options.batchCalls}, rep ${rep + 1}/${options.reps} done`,
      );
    }
    const figures = contenderKeys.map((key) => ({ name: nameOf(key, options), usPerCall: perRep.get(key)!, summary: summarize(perRep.get(key)!) }));
    const ratiosTo = (baseline: ContenderKey) =>
      contenderKeys
        .filter((key) => key !== baseline)
        .map((key) => {
          const ours = perRep.get(key)!;
          const bare = perRep.get(baseline)!;
          return {
            contender: nameOf(key, options),
            ratioOfMedians: summarize(ours).median / summarize(bare).median,
            paired: summarize(ours.map((us, index) => us / bare[index]!)),
          };
        });
    return { options, figures, ratiosToDefaults: ratiosTo("piscinaDefaults"), ratiosToSettings: ratiosTo("piscina") };
  } finally {
    await Promise.all(children.map((child) => child.close()));
  }
}

const benchMain = fileURLToPath(new URL("../main.js", import.meta.url));

/**
 * How long a contender's process may take to start its pool, or to run the
 * batches asked of it: far beyond any healthy run (16 batches of 64 no-op
 * calls take tens of ms), so only a stuck process reaches it.
 */
const answerTimeoutMs = 120_000;

/** One contender's process, asked to run a number of batches at a time. */
class ContenderProcess {
  readonly key: ContenderKey;
  readonly ready: Promise<void>;
  readonly #name: string;
  readonly #child: ChildProcess;
  #pending: { resolve: (ms: number) => void; reject: (error: Error) => void; timer: NodeJS.Timeout } | undefined;
  #failure: Error | undefined;

  constructor(key: ContenderKey, options: DispatchBatchesOptions) {
    this.key = key;
    this.#name = nameOf(key, options);
    this.#child = fork(benchMain, ["--batch-child", JSON.stringify({ key, options })], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.ready = this.#await("start its pool").then(() => undefined);
    this.#child.on("message", (message: FromChild) => {
      if ("error" in message) this.#settle(new Error(`${this.#name}: ${message.error}`));
      else this.#settle("ms" in message ? message.ms : 0);
    });
    this.#child.on("error", (error) => this.#fail(new Error(`${this.#name}: ${error.message}`)));
    this.#child.on("exit", (code, signal) => this.#fail(new Error(`${this.#name}: its process ended (${signal ?? `exit ${code}`})`)));
  }

  /** Runs `batches` batches; resolves with the ms they took. */
  run(batches: number): Promise<number> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const answer = this.#await(`run ${batches} batches`);
    this.#child.send({ run: batches } satisfies ToChild, (error) => {
      if (error !== null) this.#fail(new Error(`${this.#name}: ${error.message}`));
    });
    return answer;
  }

  /** The process's next answer, or a failure once it took longer than {@link answerTimeoutMs}. */
  #await(what: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail(new Error(`${this.#name}: did not ${what} within ${answerTimeoutMs / 1000} s`));
        this.#child.kill("SIGKILL");
      }, answerTimeoutMs);
      this.#pending = { resolve, reject, timer };
    });
  }

  #settle(outcome: number | Error): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    clearTimeout(pending.timer);
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    this.#settle(error);
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.#child.once("exit", () => resolve()));
    if (this.#child.connected) this.#child.send({ close: true } satisfies ToChild, () => {});
    else this.#child.kill("SIGKILL");
    const forced = setTimeout(() => this.#child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(forced);
  }
}

/**
 * Inside a contender's process (`main.js --batch-child`): makes the one pool,
 * then runs batches when asked; resolves once told to close and closed.
 */
export async function runBatchChild(argument: string): Promise<void> {
  const { key, options } = JSON.parse(argument) as { key: ContenderKey; options: DispatchBatchesOptions };
  const contender = await createContender(key, options);
  // Once the parent is gone there is nobody to answer.
  const send = (message: FromChild): void => {
    if (process.connected) process.send!(message, undefined, {}, () => {});
  };
  const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
  let closing: Promise<void> | undefined;
  const closeOnce = (): Promise<void> => (closing ??= contender.close());
  const closed = new Promise<void>((resolve) => {
    process.on("message", (message: ToChild) => {
      if ("close" in message) {
        void closeOnce().finally(() => {
          if (process.connected) process.disconnect();
          resolve();
        });
        return;
      }
      void (async () => {
        const start = performance.now();
        for (let batch = 0; batch < message.run; batch++) await contender.runBatch();
        send({ ms: performance.now() - start });
      })().catch((error: unknown) => send({ error: describe(error) }));
    });
    // The parent gone, nobody will ask for more.
    process.once("disconnect", () => void closeOnce().finally(resolve));
  });
  try {
    // Threads start in the background: one batch starts them.
    await contender.runBatch();
    send({ ready: true });
  } catch (error) {
    send({ error: describe(error) });
  }
  await closed;
}

async function createContender(
  key: ContenderKey,
  options: DispatchBatchesOptions,
): Promise<{ runBatch: () => Promise<void>; close: () => Promise<void> }> {
  const noopModule = new URL("../tools/noop.js", import.meta.url);
  const { threads, batchCalls } = options;
  const emptyArgs = {};
  if (key === "piscinaDefaults" || key === "piscina") {
    // toolpool's default idle timeout, read from a runtime that starts no thread.
    const probe = createRuntime({ tools: [] });
    const { idleTimeout } = probe.options.pool;
    void probe.close();
    const piscina = createBarePiscina(key === "piscinaDefaults" ? "defaults" : "toolpool", noopModule, threads, idleTimeout);
    return {
      runBatch: async () => {
        const replies: Promise<unknown>[] = [];
        for (let index = 0; index < batchCalls; index++) replies.push(piscina.run(emptyArgs));
        await Promise.all(replies);
      },
      close: () => piscina.close(),
    };
  }
  // Another build's batch: its own createRuntime and workerTool.
  const build = key.startsWith("build:") ? options.builds![Number(key.slice("build:".length))]! : undefined;
  const toolpool =
    build === undefined ? { createRuntime, workerTool } : ((await import(pathToFileURL(resolve(build.index)).href)) as typeof Toolpool);
  const runtime = toolpool.createRuntime({
    tools: [toolpool.workerTool({ name: "noop", description: "Returns a constant", parameters: noopParameters, module: noopModule })],
    pool: { maxThreads: threads, minThreads: threads },
  });
  if (key === "agentTool") {
    const agentTool = runtime.agentTools()[0]!;
    return {
      runBatch: async () => {
        const replies: Promise<unknown>[] = [];
        for (let index = 0; index < batchCalls; index++) replies.push(agentTool.execute(`call_${index}`, emptyArgs));
        await Promise.all(replies);
      },
      close: () => runtime.close(),
    };
  }
  const message: AssistantMessage = {
    role: "assistant",
    content: Array.from({ length: batchCalls }, (_, index) => ({ type: "toolCall" as const, id: `call_${index}`, name: "noop", arguments: {} })),
  };
  return {
    runBatch: async () => {
      const { messages } = await runtime.executeToolCalls(message);
      if (messages.length !== batchCalls || messages.some((result) => result.isError)) {
        throw new Error(`toolpool batch failed: ${JSON.stringify(messages.find((result) => result.isError) ?? messages.length)}`);
      }
    },
    close: () => runtime.close(),
  };
}
