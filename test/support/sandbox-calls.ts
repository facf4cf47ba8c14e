/** Calls and process checks the sandbox's tests share: a call's text, and the processes a unique token names. */
import { readdirSync, readFileSync } from "node:fs";

import type { Runtime } from "toolpool";

import { textOf } from "./helpers.js";
import { isRunning } from "./processes.js";
import { which } from "./coding-trees.js";

export const hasBwrap = process.platform === "linux" && which(["bwrap"]) !== undefined;

/** The live processes whose command line holds `token` (this process aside). */
export function processesWith(token: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(token) && isRunning(Number(name))) found.push(Number(name));
    } catch {}
  }
  return found;
}

/** Where an escape worked, a test leaves nothing behind. */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
}

export interface CallOutcome {
  text: string;
  isError: boolean;
}

/** One call of `name` as a batch of one, for `sessionKey`. */
export async function run(runtime: Runtime, name: string, args: Record<string, unknown>, sessionKey = "alice"): Promise<CallOutcome> {
  const { messages } = await runtime.executeToolCalls(
    { role: "assistant", content: [{ type: "toolCall", id: `${name}-1`, name, arguments: args }], stopReason: "toolUse" },
    { sessionKey },
  );
  return { text: textOf(messages[0]!), isError: messages[0]!.isError };
}

/** A bash call; `timeout` in seconds, as pi's. */
export const bash = (runtime: Runtime, command: string, sessionKey?: string, timeout?: number) =>
  run(runtime, "bash", timeout === undefined ? { command } : { command, timeout }, sessionKey);
