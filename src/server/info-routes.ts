/** The read-only endpoints: `GET /v1/tools`, `GET /healthz`, `GET /metrics`. */
import type { FastifyInstance } from "fastify";

import type { Runtime } from "../runtime.js";
import type { ServerMetrics } from "./server-metrics.js";
import type { ToolsResponse } from "./tools-response.js";

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
