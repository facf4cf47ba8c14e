// The worker tools of scripts/screenshot-live-view.mjs: `work` waits `ms`
// milliseconds, then returns, fails (`fail`) or crashes its worker (`crash`).
import { setTimeout as sleep } from "node:timers/promises";

export async function execute(args) {
  await sleep(args.ms ?? 100);
  if (args.crash === true) {
    // An uncaught exception in the worker: the call ends with TP_ERR_WORKER_CRASH.
    await new Promise(() =>
      setTimeout(() => {
        throw new Error("demo crash");
      }, 0),
    );
  }
  if (args.fail !== undefined) throw new Error(args.fail);
  return { content: [{ type: "text", text: `waited ${args.ms ?? 100} ms` }], details: {} };
}
