/**
 * `toolpool doctor`: what this machine offers pi's coding tools, one line a check (or one JSON object with `--json`);
 * exit code 0 when the servers' default setup works here, 1 when a check failed.
 */
import { type Command, Option } from "commander";

import { type DoctorCheck, runDoctorChecks } from "./doctor-checks.js";

/** A check failed: `main` prints the message on stderr and exits 1, after the report. */
class NotReady extends Error {
  constructor(failed: readonly DoctorCheck[]) {
    super(
      `doctor: ${failed.map((check) => check.name).join(", ")} failed: the servers' default setup (pi's coding tools, bash in a bwrap sandbox) does not run here`,
    );
    this.name = "NotReady";
  }
}

/** The checks' lines for people: status, name, what was found. */
export function formatDoctorReport(checks: readonly DoctorCheck[]): string {
  const lines = checks.map((check) => `${check.status.padEnd(4)}  ${check.name.padEnd(5)}  ${check.detail}`);
  const failed = checks.filter((check) => check.status === "fail");
  lines.push(
    failed.length === 0
      ? "ready: serve and mcp --coding-tools run pi's coding tools here, bash in a bwrap sandbox"
      : `not ready: ${failed.map((check) => check.name).join(", ")} (see above)`,
  );
  return `${lines.join("\n")}\n`;
}

async function doctor(options: { json?: boolean }): Promise<void> {
  const checks = runDoctorChecks();
  const failed = checks.filter((check) => check.status === "fail");
  process.stdout.write(options.json === true ? `${JSON.stringify({ isReady: failed.length === 0, checks })}\n` : formatDoctorReport(checks));
  if (failed.length > 0) throw new NotReady(failed);
}

export function addDoctorCommand(program: Command): Command {
  return program
    .command("doctor")
    .description(
      "check what this machine offers pi's coding tools: Node, pi, bwrap (the servers' sandbox), ripgrep and fd; exit code 1 when the servers' default setup cannot run",
    )
    .addOption(new Option("--json", 'print one JSON object: { "isReady", "checks": [{ "name", "status": "ok"|"warn"|"fail", "detail", … }] }'))
    .action((options: { json?: boolean }) => doctor(options));
}
