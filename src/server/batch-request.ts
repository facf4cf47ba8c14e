/** The body of `POST /v1/batches`, its JSON Schema, and how the client asked to be answered. */
import type { ExecuteOptions } from "../runtime.js";
import type { AssistantMessage, ToolExecutionMode } from "../types.js";

/** What a client posts to `/v1/batches`. */
export interface BatchRequestBody {
  assistantMessage: AssistantMessage;
  /** Handed to hooks as `context` (`systemPrompt`, `messages`). */
  context?: ExecuteOptions["context"];
  /** Must equal the runtime's mode when given: a runtime's mode is fixed when it is created. */
  toolExecution?: ToolExecutionMode;
  /** The agent session the batch belongs to (see `executeToolCalls`); the `X-Toolpool-Session` header may carry it instead. */
  sessionKey?: string;
  /** Most calls of this batch running at once (see `executeToolCalls`'s `maxConcurrency`). */
  maxConcurrency?: number;
}

/**
 * Checks what `executeToolCalls` would reject, so that a client learns every problem at once in a 400;
 * tool arguments are left to each tool's validation (error results, as in pi).
 */
export const batchRequestSchema = {
  type: "object",
  required: ["assistantMessage"],
  additionalProperties: false,
  properties: {
    assistantMessage: {
      type: "object",
      required: ["role", "content"],
      properties: {
        role: { const: "assistant" },
        content: {
          type: "array",
          items: {
            type: "object",
            required: ["type"],
            properties: { type: { type: "string" } },
            if: { properties: { type: { const: "toolCall" } } },
            // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
            then: {
              required: ["id", "name"],
              properties: { id: { type: "string" }, name: { type: "string" }, arguments: { type: "object" } },
            },
          },
        },
      },
    },
    context: {
      type: "object",
      properties: { systemPrompt: { type: "string" }, messages: { type: "array" } },
    },
    toolExecution: { enum: ["parallel", "sequential"] },
    sessionKey: { type: "string", minLength: 1, maxLength: 256 },
    maxConcurrency: { type: "integer", minimum: 1 },
  },
} as const;

export const sessionHeader = "x-toolpool-session";

/** The body's `sessionKey`, else the `X-Toolpool-Session` header; an error text for a header that is not 1 to 256 characters. */
export function readSessionKey(body: BatchRequestBody, header: string | string[] | undefined): string | undefined | { error: string } {
  if (body.sessionKey !== undefined) return body.sessionKey;
  if (header === undefined) return undefined;
  if (typeof header !== "string" || header.length === 0 || header.length > 256) {
    return { error: "The X-Toolpool-Session header must be given once, with 1 to 256 characters" };
  }
  return header;
}

/** How the outcome goes back: a Server-Sent Events stream, or one JSON body. */
type ResponseMode = "sse" | "json";

/** `json` when the client accepts `application/json` and not `text/event-stream`; else SSE, which carries the outcome too. */
export function chooseResponseMode(accept: string | undefined): ResponseMode {
  if (accept === undefined) return "sse";
  const types = accept.split(",").map((part) => part.split(";")[0]!.trim().toLowerCase());
  return types.includes("application/json") && !types.includes("text/event-stream") ? "json" : "sse";
}
