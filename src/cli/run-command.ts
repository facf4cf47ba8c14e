/** `toolpool run BATCH.json`: executes the tool calls of an assistant message from a file (or stdin) and shows them. */
import { type Command, Option } from "commander";

import {
  allowWriteOption,
  bashTimeoutOption,
  codingToolsOption,
  fleetOption,
  hooksOption,
  modeOption,
  ndjsonOption,
  piOption,
  remoteOption,
  rootOption,
  maxConcurrencyOption,
  threadsOption,
  toolsOption,
  type RunCliOptions,
} from "./cli-options.js";
import { executeBatch } from "./execute-batch.js";
import { loadBatch } from "./load-batch.js";
import { processStreams } from "./output-streams.js";
import { runtimeFromFlags } from "./runtime-from-flags.js";
import { CallsFailed } from "./usage-error.js";

async function runBatchFile(batchPath: string, options: RunCliOptions): Promise<void> {
  const batch = await loadBatch(batchPath);
  const { messages } = await executeBatch({
    batch,
    runtime: await runtimeFromFlags(options),
    isNdjson: options.ndjson === true,
    isFull: options.full === true,
    streams: processStreams(),
  });
  const errors = messages.filter((message) => message.isError).length;
  if (options.failOnError === true && errors > 0) throw new CallsFailed(errors, messages.length);
}

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
    .addOption(maxConcurrencyOption())
    .addOption(ndjsonOption())
    .addOption(new Option("--full", "show each result whole in the view for people (default: its first 4 lines, each cut at 160 characters)"))
    .addOption(new Option("--fail-on-error", "exit with code 1 when any call ended in an error result (default: 0 once the batch ran)"))
    .addOption(fleetOption())
    .addOption(remoteOption())
    .addOption(rootOption())
    .addOption(allowWriteOption())
    .addOption(codingToolsOption())
    .addOption(bashTimeoutOption())
    .action((batchPath: string, options: RunCliOptions) => runBatchFile(batchPath, options));
}
