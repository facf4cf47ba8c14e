/** The body of `GET /v1/tools`, free of Fastify: the public types include it and must compile without the optional fastify. */
import type { PiVersion } from "../options.js";
import type { JsonSchema, ToolExecutionMode } from "../types.js";

/** One entry of `GET /v1/tools`: what a model needs to call the tool. */
interface ToolDescription {
  name: string;
  label: string;
  description: string;
  parameters: JsonSchema;
  /** Present when the tool forces its batch to run sequentially (or says parallel explicitly). */
  executionMode?: ToolExecutionMode;
}

/** The body of `GET /v1/tools`. */
export interface ToolsResponse {
  /** The mode every batch of this server runs in. */
  toolExecution: ToolExecutionMode;
  /** Which pi's rules every batch of this server follows (its runtime's `pi`). */
  pi: PiVersion;
  tools: ToolDescription[];
}
