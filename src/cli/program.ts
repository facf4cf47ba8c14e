/**
 * The commander program: its commands, and how commander reports usage
 * errors (one `toolpool: …` line, exit code 2).
 *
 * @module
 */

import { Command } from "commander";

import { addBenchCommand } from "./bench-command.js";
import { readPackageVersion } from "./package-version.js";
import { addDemoCommand } from "./demo-command.js";
import { addMcpCommand } from "./mcp-command.js";
import { addNodeCommand } from "./node-command.js";
import { addRunCommand } from "./run-command.js";
import { addServeCommand } from "./serve-command.js";
import { toOneLine } from "./usage-error.js";

/**
 * Creates the `toolpool` program. It never exits the process: with
 * `exitOverride`, commander throws a `CommanderError` instead (exit code 0 for
 * help and version, 1 for usage errors, which `main` turns into 2).
 */
export function createProgram(version: string = readPackageVersion()): Command {
  const program = new Command("toolpool")
    .description("Execute the tool calls of an LLM agent's assistant message with pi's semantics, on a worker-thread pool.")
    .version(version)
    // Both settings are inherited by the commands added below, so they must come first.
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
  return program;
}
