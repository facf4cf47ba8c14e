/** The server's error answers: one JSON shape, and Fastify's and the runtime's errors mapped onto HTTP statuses. */
import { STATUS_CODES } from "node:http";

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";

import { ToolpoolError } from "../errors.js";
import type { ErrorBody, RequestBodyError } from "./error-body.js";

export function sendError(
  reply: FastifyReply,
  statusCode: number,
  code: string | undefined,
  message: string,
  errors?: RequestBodyError[],
): FastifyReply {
  const body: ErrorBody = {
    statusCode,
    error: STATUS_CODES[statusCode] ?? "Error",
    ...(code === undefined ? {} : { code }),
    message,
    ...(errors === undefined ? {} : { errors }),
  };
  return reply.code(statusCode).type("application/json; charset=utf-8").send(body);
}

/** Invalid body: 400 listing every problem; misuse: 400 or 503; Fastify's client errors keep theirs; else a 500 revealing nothing. */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.validation !== undefined) {
    // An `if`/`then` failure is reported as the `then` branch's errors too; the `if` line adds nothing.
    const errors = error.validation
      .filter((issue) => issue.keyword !== "if")
      .map((issue) => ({
        path: issue.instancePath,
        message: describeIssue(issue),
      }));
    const summary = errors.map((issue) => `${issue.path || "body"} ${issue.message}`).join("; ");
    return sendError(reply, 400, "TP_ERR_INVALID_BATCH", `Invalid request body: ${summary}`, errors);
  }
  if (error instanceof ToolpoolError) {
    if (error.code === "TP_ERR_INVALID_BATCH") return sendError(reply, 400, error.code, error.message);
    if (error.code === "TP_ERR_CLOSED") return sendError(reply, 503, error.code, error.message);
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return sendError(reply, status, error.code, error.message);
  }
  request.log.error({ err: error }, "toolpool server: request failed");
  return sendError(reply, 500, undefined, "Internal server error");
}

function describeIssue(issue: NonNullable<FastifyError["validation"]>[number]): string {
  const params = issue.params as Record<string, unknown>;
  if (issue.keyword === "const") return `must be ${JSON.stringify(params.allowedValue)}`;
  if (issue.keyword === "enum") {
    return `must be one of ${(params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(", ")}`;
  }
  if (issue.keyword === "additionalProperties") return `must not have property "${String(params.additionalProperty)}"`;
  return issue.message ?? "is invalid";
}
