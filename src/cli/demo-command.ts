/** `toolpool demo` (what `npm start` runs): a real batch of the built-in tools over the repository, shown as `run` shows one. */
import type { Command } from "commander";

import { ndjsonOption, threadsOption, type BatchCliOptions } from "./cli-options.js";
import { createDemoBatch, describeDemo } from "./demo-batch.js";
import { executeBatch } from "./execute-batch.js";
import { processStreams } from "./output-streams.js";
import { locateRepoRoot } from "./repo-root.js";
import { runtimeFromFlags } from "./runtime-from-flags.js";

async function runDemo(options: BatchCliOptions): Promise<void> {
  const root = locateRepoRoot();
  // Confined to the repository, with paths relative to it, wherever the command runs from.
  const assistantMessage = createDemoBatch(root, root);
  const streams = processStreams();
  const isNdjson = options.ndjson === true;
  // With --ndjson, stdout carries JSON lines only; the explanation goes to stderr.
  (isNdjson ? streams.stderr : streams.stdout).write(`${describeDemo(assistantMessage, root, options.threads)}\n`);
  await executeBatch({
    batch: { assistantMessage },
    runtime: await runtimeFromFlags({ tools: [], root, threads: options.threads, mode: "parallel" }),
    isNdjson,
    streams,
  });
}

/** Adds the `demo` command to `program`. */
export function addDemoCommand(program: Command): Command {
  return program
    .command("demo")
    .description("run a real batch of the built-in tools over the toolpool repository")
    .addOption(threadsOption())
    .addOption(ndjsonOption())
    .action((options: BatchCliOptions) => runDemo(options));
}
