/**
 * Suite "builtins": the built-in `grep` and `hash` tools against the native
 * tools that do the same job.
 *
 * - grep: one `grep` call over a whole tree on a pool of N threads (one call
 *   spreads its files over the pool's idle threads) against `rg -j N`, for
 *   N = 1 and N = cores, on three trees: a generated source tree of ≥ 10,000
 *   small files; a generated tree with a few files of several MiB among many
 *   small ones; and a copy of the project's installed `node_modules` (a real
 *   tree). Per tree, four patterns: a literal and a regular expression, each
 *   once with matches and once without. ripgrep runs with the rules `grep`
 *   has (`--hidden --no-require-git`: the same .gitignore files; no nested
 *   `node_modules/`; nothing over 4 MiB), and each row's match count must
 *   agree between the two.
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
import { realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

import { builtinTools, createRuntime, type AssistantMessage, type Runtime } from "toolpool";

import { copyInstalledTree } from "../lib/installed-tree.js";
import { advanceProgress, logStep } from "../lib/progress.js";
import { rotate } from "../lib/run-loop.js";
import { createSourceTree, type SourceTree, type SourceTreeOptions } from "../lib/source-tree.js";
import { summarize, type Summary } from "../lib/stats.js";

export interface BuiltinsOptions {
  tree: SourceTreeOptions;
  /** The generated tree with a few files of several MiB among small ones (`largeFiles` set). */
  largeFileTree: SourceTreeOptions;
  /** Whether to search a copy of the project's installed `node_modules` too. */
  installedTree: boolean;
  /** Thread counts compared (pool maxThreads vs `rg -j`). */
  threadCounts: number[];
  warmups: number;
  reps: number;
  /** Size of the large file hashed, in MiB. */
  hashFileMiB: number;
}

/** One toolpool figure beside its native counterpart. */
export interface BuiltinsRow {
  /** What was measured, e.g. `grep generated literal /FIXME/, 2 threads`. */
  name: string;
  /** The tree searched (grep rows). */
  tree?: string;
  threads: number;
  /** Matching lines both tools found (grep rows). */
  matches?: number;
  toolpoolMs: Summary;
  nativeMs: Summary;
  /** toolpool's median / the native tool's median. */
  ratio: number;
  /** What the target allows for this row (2: grep and the one-file hash); absent for a row shown for information. */
  targetRatio?: number;
}

/** A tree grep searched: what it holds. */
export interface GrepTreeSummary {
  label: string;
  what: string;
  /** Files grep searches (not ignored, not over 4 MiB) and their bytes. */
  files: number;
  bytes: number;
}

export interface BuiltinsResult {
  options: BuiltinsOptions;
  trees: GrepTreeSummary[];
  grep: BuiltinsRow[];
  hash: BuiltinsRow[];
  /** Why a part was skipped (a native tool missing). */
  skipped: string[];
}

interface GrepPattern {
  /** `literal` or `regex`, with or without matches. */
  kind: string;
  pattern: string;
}

/** Patterns of the generated trees: planted literal (few matches), regular expression (some hundreds), and both missed. */
export const grepPatterns: readonly GrepPattern[] = [
  { kind: "literal", pattern: "FIXME\\(bench-marker\\)" },
  { kind: "literal, no match", pattern: "FIXME\\(bench-absent\\)" },
  { kind: "regex", pattern: "parse[A-Z]\\w+99\\(" },
  { kind: "regex, no match", pattern: "parse[A-Z]\\w+99q\\(" },
];

/** Patterns of the installed packages. */
export const installedPatterns: readonly GrepPattern[] = [
  { kind: "literal", pattern: "createHash\\(" },
  { kind: "literal, no match", pattern: "toolpoolBenchAbsent\\(" },
  { kind: "regex", pattern: "read\\w+Sync\\(" },
  { kind: "regex, no match", pattern: "toolpool\\w+Absent\\d\\(" },
];

/** What both tools skip: nested `node_modules/` and files over 4 MiB (`grep`'s fixed rules). */
const ripgrepRules = ["--hidden", "--no-require-git", "-g", "!node_modules/", "--max-filesize", "4M"];

export function estimateBuiltinsMs(options: BuiltinsOptions): number {
  const treeMs = (options.tree.files + options.largeFileTree.files) * 0.3 + (options.installedTree ? 15_000 : 0);
  const treeCount = 2 + (options.installedTree ? 1 : 0);
  const grepMs = treeCount * options.threadCounts.length * grepPatterns.length * 2 * 300;
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
  tree?: string;
  threads: number;
  targetRatio?: number;
  /** The match count both sides agreed on, once known. */
  matches?: () => number | undefined;
  toolpool: () => Promise<number>;
  native: () => number;
}

/** A tree to search, with its patterns. */
interface GrepTree extends GrepTreeSummary {
  root: string;
  patterns: readonly GrepPattern[];
  remove: () => void;
}

function generatedTree(label: string, what: string, options: SourceTreeOptions): GrepTree & { tree: SourceTree } {
  logStep(`builtins: generating the ${label} tree (${options.files} files)`);
  const tree = createSourceTree(options);
  advanceProgress(options.files * 0.3, `builtins: ${label} tree generated`);
  return { label, what, root: tree.root, files: tree.textFiles, bytes: tree.textBytes, patterns: grepPatterns, remove: tree.remove, tree };
}

/** A grep row: toolpool's call and ripgrep's process over one tree, their match counts checked against each other. */
function grepContender(tree: GrepTree, { kind, pattern }: GrepPattern, threads: number, runtime: Runtime): PairedContender {
  let expected: number | undefined;
  const agree = (who: string, matches: number): void => {
    if (expected !== undefined && matches !== expected)
      throw new Error(`${who} /${pattern}/ found ${matches} matches in the ${tree.label} tree, ${expected} before`);
    expected = matches;
  };
  return {
    name: `grep ${tree.label}, ${kind} /${pattern}/, ${threads} thread${threads === 1 ? "" : "s"}`,
    tree: tree.label,
    threads,
    targetRatio: 2,
    matches: () => expected,
    toolpool: async () => {
      const { ms, details } = await timeCalls(runtime, [{ name: "grep", arguments: { pattern, path: tree.root, maxResults: 5000 } }]);
      const { matches, truncated } = details[0] as { matches: number; truncated: boolean };
      if (truncated) throw new Error(`grep /${pattern}/ was truncated; the bench needs the whole tree searched`);
      agree("grep", matches);
      return ms;
    },
    native: () => {
      const { ms, stdout } = timeCommand("rg", ["-j", String(threads), ...ripgrepRules, "--no-heading", "-n", "-e", pattern, tree.root], [0, 1]);
      agree("rg", stdout === "" ? 0 : stdout.split("\n").length - 1);
      return ms;
    },
  };
}

export async function runBuiltinsSuite(options: BuiltinsOptions): Promise<BuiltinsResult> {
  const skipped: string[] = [];
  const hasRg = hasCommand("rg", ["--version"]);
  const hasSha = hasCommand("sha256sum", ["--version"]);
  if (!hasRg) skipped.push("grep vs ripgrep skipped: `rg` is not installed.");
  if (!hasSha) skipped.push("hash vs sha256sum skipped: `sha256sum` is not installed.");
  const trees: GrepTree[] = [];
  const runtimes = new Map<number, Runtime>();
  try {
    const generated = generatedTree("generated", "small source files", options.tree);
    trees.push(generated);
    const bigFile = join(generated.root, "big.bin");
    // In the tree for `hash`, ignored by both greps.
    writeFileSync(join(generated.root, ".gitignore"), "build/\n*.log\nbig.bin\n");
    writeFileSync(bigFile, Buffer.alloc(options.hashFileMiB * 1024 * 1024, 0x61));
    if (hasRg) {
      const large = options.largeFileTree.largeFiles;
      trees.push(
        generatedTree(
          "large files",
          `${large?.count ?? 0} files of ${((large?.bytes ?? 0) / 2 ** 20).toFixed(1)} MiB among small ones`,
          options.largeFileTree,
        ),
      );
      if (options.installedTree) {
        logStep("builtins: copying the installed node_modules");
        const installed = copyInstalledTree(4 * 1024 * 1024);
        if (installed === undefined) skipped.push("grep of the installed packages skipped: no node_modules beside the bench.");
        else trees.push({ label: "installed packages", what: "a copy of node_modules", patterns: installedPatterns, ...installed });
        advanceProgress(15_000, "builtins: installed packages copied");
      }
    }
    // One workspace for every tree: the temp dir holds them all.
    const workspace = realpathSync(tmpdir());
    for (const threads of new Set([...options.threadCounts, Math.max(...options.threadCounts)])) {
      runtimes.set(
        threads,
        createRuntime({
          tools: builtinTools(["grep", "hash"], { root: workspace, timeoutMs: 120_000 }),
          pool: { minThreads: threads, maxThreads: threads },
        }),
      );
    }
    const contenders: PairedContender[] = [];
    if (hasRg) {
      for (const tree of trees) {
        for (const threads of options.threadCounts) {
          for (const pattern of tree.patterns) contenders.push(grepContender(tree, pattern, threads, runtimes.get(threads)!));
        }
      }
    }
    if (hasSha) {
      const threads = Math.max(...options.threadCounts);
      const sample = generated.tree.sample;
      contenders.push({
        name: `hash one ${options.hashFileMiB} MiB file`,
        threads: 1,
        targetRatio: 2,
        toolpool: async () => (await timeCalls(runtimes.get(threads)!, [{ name: "hash", arguments: { path: bigFile } }])).ms,
        native: () => timeCommand("sha256sum", [bigFile], [0]).ms,
      });
      contenders.push({
        // For information: a batch of calls against one process; no fan-out within a call applies.
        name: `hash ${sample.length} files, one call each (pool of ${threads}) vs one sha256sum`,
        threads,
        toolpool: async () =>
          (
            await timeCalls(
              runtimes.get(threads)!,
              sample.map((path) => ({ name: "hash", arguments: { path } })),
            )
          ).ms,
        native: () => timeCommand("sha256sum", sample, [0]).ms,
      });
    }
    const samples = new Map(contenders.map((c) => [c.name, { toolpool: [] as number[], native: [] as number[] }]));
    const setupMs = (options.tree.files + options.largeFileTree.files) * 0.3 + (options.installedTree ? 15_000 : 0);
    const unit = contenders.length === 0 ? 0 : (estimateBuiltinsMs(options) - setupMs) / (options.warmups + options.reps);
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
      if (contender.tree !== undefined) row.tree = contender.tree;
      const matches = contender.matches?.();
      if (matches !== undefined) row.matches = matches;
      if (contender.targetRatio !== undefined) row.targetRatio = contender.targetRatio;
      return row;
    });
    return {
      options,
      trees: trees.map(({ label, what, files, bytes }) => ({ label, what, files, bytes })),
      grep: rows.filter((row) => row.name.startsWith("grep")),
      hash: rows.filter((row) => row.name.startsWith("hash")),
      skipped,
    };
  } finally {
    await Promise.all([...runtimes.values()].map((runtime) => runtime.close()));
    for (const tree of trees) tree.remove();
  }
}
