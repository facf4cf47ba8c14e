/**
 * The worker tools the live view's tests run on a real server: scripted work
 * (gates, updates, text) and one that commits the fault it is asked to.
 */
import { workerTool } from "toolpool";

import { workParameters } from "../fixtures/tools/scripted.mjs";

export const work = workerTool({
  name: "work",
  description: "scripted work",
  parameters: workParameters,
  module: new URL("../fixtures/tools/scripted.mjs", import.meta.url),
});

export const fault = workerTool({
  name: "fault",
  description: "commits the fault it is asked to",
  parameters: { type: "object" },
  module: new URL("../fixtures/tools/faults.mjs", import.meta.url),
});
