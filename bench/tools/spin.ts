/**
 * Worker module of suite 1: `iterations` rounds of the shared busy loop.
 * `execute` is the toolpool worker tool; the default export is the
 * bare-Piscina control task. Both return the same result.
 */
import { runSpinCall, type SpinResult } from "../lib/busy.js";

export function execute(args: { iterations: number }): SpinResult {
  return runSpinCall(args.iterations);
}

export default function runSpin(args: { iterations: number }): SpinResult {
  return runSpinCall(args.iterations);
}
