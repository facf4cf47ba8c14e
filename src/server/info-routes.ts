/**
 * The read-only endpoints: `GET /v1/tools`, `GET /healthz`, `GET /metrics`.
 *
 * @module
 */
import type { FastifyInstance } from "fastify";

import type { PiVersion } from "../options.js";
import type { Runtime } from "../runtime.js";
import type { JsonSchema, ToolExecutionMode } from "../types.js";
import type { ServerMetrics } from "./server-metrics.js";

/** One entry of `GET /v1/tools`: what a model needs to call the tool. */
interface ToolDescription {
  name: string;
  label: string;
  description: string;
  /** JSON Schema of the arguments. */
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

/** Adds the read-only endpoints to `app`. */
export function addInfoRoutes(app: FastifyInstance, { runtime, metrics }: { runtime: Runtime; metrics: ServerMetrics }): void {
  // The tools never change after the runtime is created.
  const body: ToolsResponse = {
    toolExecution: runtime.options.toolExecution,
    pi: runtime.options.pi,
    tools: runtime.agentTools().map((tool) => ({
      name: tool.name,
      label: tool.label,
      description: tool.description,
      parameters: tool.parameters,
      ...(tool.executionMode === undefined ? {} : { executionMode: tool.executionMode }),
    })),
  };
  app.get("/v1/tools", async () => body);
  // Answered 503 by the onRequest hook while draining, so a load balancer stops sending traffic.
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/metrics", async (_request, reply) => reply.type(metrics.contentType).send(await metrics.render()));
}
