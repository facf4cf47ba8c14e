/**
 * Suite "builtins": the built-in `grep` and `hash` tools against the native
 * tools that do the same job, on a generated source tree of ≥ 10,000 files.
 *
 * - grep: one `grep` call over the whole tree on a pool of N threads (one
 *   call spreads its files over the pool's idle threads) against
 *   `rg -j N --hidden --no-require-git` (ripgrep honors the same .gitignore
 *   files then, and searches the same files), for N = 1 and N = cores.
 *   Each pattern's match count must agree between the two.
 * - hash: one `hash` call of a large file against `sha256sum` of it, and a
 *   batch of `hash` calls (one per sampled file) on a pool of `cores`
 *   threads against one `sha256sum` process over the same files.
 *
 * The native tools' times include their process start, as a caller of them
 * pays it; toolpool's include the call through `executeToolCalls`. Each
 * repetition runs every contender once, in rotating order; medians reported.
 * A native tool that is not installed is skipped with a note.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

import { builtinTools, createRuntime, type AssistantMessage, type Runtime } from "toolpool";

import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { createSourceTree, type SourceTree, type SourceTreeOptions } from "../lib/source-tree.js";
import { summarize, type Summary } from "../lib/stats.js";

export interface BuiltinsOptions {
  tree: SourceTreeOptions;
  /** Thread counts compared (pool maxThreads vs `rg -j`). */
  threadCounts: number[];
  warmups: number;
  reps: number;
  /** Size of the large file hashed, in MiB. */
  hashFileMiB: number;
}

/** One toolpool figure beside its native counterpart. */
export interface BuiltinsRow {
  /** What was measured, e.g. `grep /FIXME/ -j 2`. */
  name: string;
  threads: number;
  toolpoolMs: Summary;
  nativeMs: Summary;
  /** toolpool's median / the native tool's median. */
  ratio: number;
  /** What the target allows for this row (2: grep and the one-file hash); absent for a row shown for information. */
  targetRatio?: number;
}

export interface BuiltinsResult {
  options: BuiltinsOptions;
  files: number;
  bytes: number;
  grep: BuiltinsRow[];
  hash: BuiltinsRow[];
  /** Why a part was skipped (a native tool missing). */
  skipped: string[];
}

/** Patterns searched: a planted literal (few matches) and a regular expression (some hundreds). */
export const grepPatterns = [
  { label: "literal", pattern: "FIXME\\(bench-marker\\)" },
  { label: "regex", pattern: "parse[A-Z]\\w+99\\(" },
] as const;

export function estimateBuiltinsMs(options: BuiltinsOptions): number {
  const treeMs = options.tree.files * 0.3;
  const grepMs = options.threadCounts.length * grepPatterns.length * 2 * 400;
  return treeMs + (options.warmups + options.reps) * (grepMs + 4 * 300);
}

function hasCommand(command: string, args: string[]): boolean {
  const probe = spawnSync(command, args, { stdio: "ignore" });
  return probe.error === undefined && probe.status === 0;
}

/** Wall time of one native command, its process start included; throws unless it exits with one of `okStatus`. */
function timeCommand(command: string, args: string[], okStatus: number[]): { ms: number; stdout: string } {
  const start = performance.now();
  const child = spawnSync(command, args, { encoding: "utf8", maxBuffer: 256 << 20 });
  const ms = performance.now() - start;
  if (child.error !== undefined) throw child.error;
  if (!okStatus.includes(child.status ?? -1))
    throw new Error(`${command} ${args.join(" ")} exited with ${child.status}: ${child.stderr.slice(0, 300)}`);
  return { ms, stdout: child.stdout };
}

function batchOf(calls: { name: string; arguments: Record<string, unknown> }[]): AssistantMessage {
  return {
    role: "assistant",
    content: calls.map((call, index) => ({ type: "toolCall" as const, id: `call${index}`, name: call.name, arguments: call.arguments })),
  };
}

async function timeCalls(
  runtime: Runtime,
  calls: { name: string; arguments: Record<string, unknown> }[],
): Promise<{ ms: number; details: unknown[] }> {
  const start = performance.now();
  const { messages } = await runtime.executeToolCalls(batchOf(calls));
  const ms = performance.now() - start;
  for (const message of messages) {
    if (message.isError) throw new Error(`${message.toolName} failed: ${JSON.stringify(message.content).slice(0, 300)}`);
  }
  return { ms, details: messages.map((message) => message.details) };
}

interface PairedContender {
  name: string;
  threads: number;
  targetRatio?: number;
  toolpool: () => Promise<number>;
  native: () => number;
}

export async function runBuiltinsSuite(options: BuiltinsOptions): Promise<BuiltinsResult> {
  const skipped: string[] = [];
  const hasRg = hasCommand("rg", ["--version"]);
  const hasSha = hasCommand("sha256sum", ["--version"]);
  if (!hasRg) skipped.push("grep vs ripgrep skipped: `rg` is not installed.");
  if (!hasSha) skipped.push("hash vs sha256sum skipped: `sha256sum` is not installed.");
  logStep(`builtins: generating ${options.tree.files} files`);
  const tree: SourceTree = createSourceTree(options.tree);
  const bigFile = join(tree.root, "big.bin");
  const bigBytes = options.hashFileMiB * 1024 * 1024;
  const runtimes = new Map<number, Runtime>();
  try {
    // Outside the tree's search root? No: the big file is ignored by neither; keep it out of grep's way.
    writeFileSync(join(tree.root, ".gitignore"), "build/\n*.log\nbig.bin\n");
    writeFileSync(bigFile, Buffer.alloc(bigBytes, 0x61));
    advanceProgress(options.tree.files * 0.3, "builtins: source tree generated");
    for (const threads of new Set([...options.threadCounts, Math.max(...options.threadCounts)])) {
      runtimes.set(
        threads,
        createRuntime({
          tools: builtinTools(["grep", "hash"], { root: tree.root, timeoutMs: 120_000 }),
          pool: { minThreads: threads, maxThreads: threads },
        }),
      );
    }
    const contenders: PairedContender[] = [];
    if (hasRg) {
      for (const threads of options.threadCounts) {
        for (const { label, pattern } of grepPatterns) {
          let expected: number | undefined;
          contenders.push({
            name: `grep ${label} /${pattern}/, ${threads} thread${threads === 1 ? "" : "s"}`,
            threads,
            targetRatio: 2,
            toolpool: async () => {
              const { ms, details } = await timeCalls(runtimes.get(threads)!, [{ name: "grep", arguments: { pattern, maxResults: 5000 } }]);
              const { matches, truncated } = details[0] as { matches: number; truncated: boolean };
              if (truncated) throw new Error(`grep /${pattern}/ was truncated; the bench needs the whole tree searched`);
              if (expected !== undefined && matches !== expected) throw new Error(`grep /${pattern}/ found ${matches} matches, rg ${expected}`);
              expected = matches;
              return ms;
            },
            native: () => {
              const { ms, stdout } = timeCommand(
                "rg",
                ["-j", String(threads), "--hidden", "--no-require-git", "--no-heading", "-n", "-e", pattern, tree.root],
                [0, 1],
              );
              const lines = stdout === "" ? 0 : stdout.split("\n").length - 1;
              if (expected !== undefined && lines !== expected) throw new Error(`rg /${pattern}/ found ${lines} matches, grep ${expected}`);
              expected = lines;
              return ms;
            },
          });
        }
      }
    }
    if (hasSha) {
      const threads = Math.max(...options.threadCounts);
      contenders.push({
        name: `hash one ${options.hashFileMiB} MiB file`,
        threads: 1,
        targetRatio: 2,
        toolpool: async () => (await timeCalls(runtimes.get(threads)!, [{ name: "hash", arguments: { path: bigFile } }])).ms,
        native: () => timeCommand("sha256sum", [bigFile], [0]).ms,
      });
      contenders.push({
        // For information: a batch of calls against one process; no fan-out within a call applies.
        name: `hash ${tree.sample.length} files, one call each (pool of ${threads}) vs one sha256sum`,
        threads,
        toolpool: async () =>
          (
            await timeCalls(
              runtimes.get(threads)!,
              tree.sample.map((path) => ({ name: "hash", arguments: { path } })),
            )
          ).ms,
        native: () => timeCommand("sha256sum", tree.sample, [0]).ms,
      });
    }
    const samples = new Map(contenders.map((c) => [c.name, { toolpool: [] as number[], native: [] as number[] }]));
    const unit = contenders.length === 0 ? 0 : (estimateBuiltinsMs(options) - options.tree.files * 0.3) / (options.warmups + options.reps);
    for (let rep = 0; rep < options.warmups + options.reps; rep++) {
      for (const contender of rotate(contenders, rep)) {
        // Side by side: the native run and the toolpool run of a row follow each other, order alternating.
        const pair = rep % 2 === 0 ? ["native", "toolpool"] : ["toolpool", "native"];
        for (const side of pair) {
          const ms = side === "native" ? contender.native() : await contender.toolpool();
          if (rep >= options.warmups) samples.get(contender.name)![side as "native" | "toolpool"].push(ms);
        }
      }
      advanceProgress(unit, `builtins: ${rep < options.warmups ? "warm-up" : `rep ${rep - options.warmups + 1}/${options.reps}`}`);
    }
    const rows = contenders.map((contender): BuiltinsRow => {
      const { toolpool, native } = samples.get(contender.name)!;
      const toolpoolMs = summarize(toolpool);
      const nativeMs = summarize(native);
      const row: BuiltinsRow = { name: contender.name, threads: contender.threads, toolpoolMs, nativeMs, ratio: toolpoolMs.median / nativeMs.median };
      if (contender.targetRatio !== undefined) row.targetRatio = contender.targetRatio;
      return row;
    });
    return {
      options,
      files: tree.textFiles,
      bytes: tree.textBytes,
      grep: rows.filter((row) => row.name.startsWith("grep")),
      hash: rows.filter((row) => row.name.startsWith("hash")),
      skipped,
    };
  } finally {
    await Promise.all([...runtimes.values()].map((runtime) => runtime.close()));
    tree.remove();
  }
}
