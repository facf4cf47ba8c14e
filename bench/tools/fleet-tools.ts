/**
 * The worker tools of the fleet suite: both the bench's coordinator and its
 * `toolpool node` processes load this module (`--tools`), so their toolsets
 * are identical. `wait` sleeps without using CPU (for node-loss timing).
 */
import { workerTool } from "toolpool";

import { spinParameters } from "../lib/constants.js";

const anyArgs = { type: "object" };

export const fleetBenchTools = [
  workerTool({ name: "noop", description: "returns at once", parameters: anyArgs, module: new URL("./noop.js", import.meta.url) }),
  workerTool({ name: "spin", description: "a busy loop", parameters: spinParameters, module: new URL("./spin.js", import.meta.url) }),
  workerTool({ name: "wait", description: "sleeps", parameters: anyArgs, module: new URL("./wait.js", import.meta.url) }),
];

export default fleetBenchTools;
