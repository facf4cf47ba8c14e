/**
 * The workerpool worker script: the same functions as the other pools' task
 * modules, registered by name (workerpool calls methods, not a default export).
 */
import workerpool from "workerpool";

import { runSpinCall } from "../lib/busy.js";
import { noopResult } from "../lib/constants.js";

workerpool.worker({
  noop: () => noopResult,
  spin: (args: { iterations: number }) => runSpinCall(args.iterations),
});
