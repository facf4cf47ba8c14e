/**
 * `toolpool run BATCH.json`: executes the tool calls of an assistant message
 * from a file (or standard input) and shows them.
 *
 * @module
 */
import type { Command } from "commander";

import { builtinTools } from "../index.js";
import {
  allowWriteOption,
  fleetFromCli,
  fleetOption,
  hooksOption,
  modeOption,
  ndjsonOption,
  piOption,
  remoteOption,
  rootOption,
  threadsOption,
  toolsOption,
  type RunCliOptions,
} from "./cli-options.js";
import { executeBatch } from "./execute-batch.js";
import { loadBatch } from "./load-batch.js";
import { loadHooksModule, loadToolModules } from "./load-modules.js";
import { processStreams } from "./output-streams.js";
import { inputErrors } from "./usage-error.js";

/** Loads the batch and the user modules, then executes the batch. */
export async function runBatchFile(batchPath: string, options: RunCliOptions): Promise<void> {
  const batch = await loadBatch(batchPath);
  const tools =
    options.tools.length === 0
      ? inputErrors(() => builtinTools({ ...(options.root === undefined ? {} : { root: options.root }), allowWrite: options.allowWrite === true }))
      : await loadToolModules(options.tools);
  const hooks = options.hooks === undefined ? {} : await loadHooksModule(options.hooks);
  const fleet = fleetFromCli(options);
  await executeBatch({
    ...(fleet === undefined ? {} : { fleet }),
    batch,
    tools,
    hooks,
    ...(options.mode === undefined ? {} : { toolExecution: options.mode }),
    ...(options.pi === undefined ? {} : { pi: options.pi }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    isNdjson: options.ndjson === true,
    streams: processStreams(),
  });
}

/** Adds the `run` command to `program`. */
export function addRunCommand(program: Command): Command {
  return program
    .command("run")
    .description("execute the tool calls of an assistant message")
    .argument("<batch>", 'JSON file: an assistant message or { "assistantMessage", "context" }; "-" reads stdin')
    .addOption(toolsOption())
    .addOption(hooksOption())
    .addOption(modeOption())
    .addOption(piOption())
    .addOption(threadsOption())
    .addOption(ndjsonOption())
    .addOption(fleetOption())
    .addOption(remoteOption())
    .addOption(rootOption())
    .addOption(allowWriteOption())
    .action((batchPath: string, options: RunCliOptions) => runBatchFile(batchPath, options));
}
