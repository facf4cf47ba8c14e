/** The commander program: its commands, and usage errors as one `toolpool: …` line (exit code 2). */
import { Command } from "commander";

import { addBenchCommand } from "./bench-command.js";
import { readPackageVersion } from "./package-version.js";
import { addDemoCommand } from "./demo-command.js";
import { addDoctorCommand } from "./doctor-command.js";
import { addMcpCommand } from "./mcp-command.js";
import { addNodeCommand } from "./node-command.js";
import { addRunCommand } from "./run-command.js";
import { addServeCommand } from "./serve-command.js";
import { toOneLine } from "./usage-error.js";

/** Never exits the process: with `exitOverride` commander throws a `CommanderError` (0 for help and version, 1 for usage, which `main` makes 2). */
export function createProgram(version: string = readPackageVersion()): Command {
  const program = new Command("toolpool")
    .description("Execute the tool calls of an LLM agent's assistant message with pi's semantics, on a worker-thread pool.")
    .version(version)
    // Inherited by the commands added below, so these come first.
    .exitOverride()
    .configureOutput({
      outputError: (message, write) => write(`toolpool: ${toOneLine(message.replace(/^error: /, ""))}\n`),
    });
  addRunCommand(program);
  addDemoCommand(program);
  addServeCommand(program);
  addMcpCommand(program);
  addBenchCommand(program);
  addNodeCommand(program);
  addDoctorCommand(program);
  return program;
}
