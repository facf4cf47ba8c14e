/**
 * Worker module of suite 2. `execute` is the toolpool worker tool; the default
 * export is the bare-Piscina task (Piscina calls a module's default export).
 * Both return the same tiny constant, so only the dispatch path differs.
 */
import { noopResult } from "../lib/constants.js";

export function execute(): typeof noopResult {
  return noopResult;
}

export default function runNoop(): typeof noopResult {
  return noopResult;
}
