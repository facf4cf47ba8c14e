// A client of toolpool's HTTP server, as the tests use it: POST a batch, read
// its Server-Sent Events frame by frame, and name what arrived.
import { randomUUID } from "node:crypto";

import { expect } from "vitest";

import type { AssistantMessage, ToolResultMessage } from "toolpool";

/** One Server-Sent Event: its `event` field, and its `data` parsed as JSON. */
export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** A tool call of the assistant message a test posts. */
export interface ToolCallSpec {
  id: string;
  name: string;
  arguments?: Record<string, unknown>;
}

/** Gate keys unique to the test, so that a late message of another test opens nothing here. */
export function gateKeys(): (id: string) => string {
  const prefix = randomUUID();
  return (id) => `${prefix}:${id}`;
}

/** An assistant message with a text part, then these tool calls. */
export function assistantMessage(calls: ToolCallSpec[]): AssistantMessage {
  return {
    role: "assistant",
    content: [
      { type: "text", text: "calling tools" },
      ...calls.map((call) => ({ type: "toolCall" as const, id: call.id, name: call.name, arguments: call.arguments ?? {} })),
    ],
  };
}

/** POSTs a body to `/v1/batches` as JSON. */
export function postBatch(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** Parses a Server-Sent Events body frame by frame, as it arrives. */
export async function* readSse(response: Response): AsyncGenerator<SseEvent> {
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  let buffer = "";
  for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (data.length > 0) yield { event, data: JSON.parse(data.join("\n")) as Record<string, unknown> };
    }
  }
  expect(buffer).toBe("");
}

/** The stream's next `count` events; fails if it ends before. */
export async function take(stream: AsyncGenerator<SseEvent>, count: number): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  while (events.length < count) {
    const next = await stream.next();
    if (next.done === true) throw new Error(`the stream ended after ${events.length} of ${count} events`);
    events.push(next.value);
  }
  return events;
}

/** Every event left in the stream. */
export async function rest(stream: AsyncGenerator<SseEvent>): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** `type:toolCallId` of each event, for comparing sequences. */
export function describeEvents(events: SseEvent[]): string[] {
  return events.map(({ event, data }) => {
    expect(data.type).toBe(event);
    const message = data.message as ToolResultMessage | undefined;
    const id = (data.toolCallId as string | undefined) ?? message?.toolCallId;
    return id === undefined ? event : `${event}:${id}`;
  });
}

/** The `batch_end` event's outcome, which must be the last event. */
export function batchEndOf(events: SseEvent[]): { messages: ToolResultMessage[]; terminate: boolean } {
  const last = events.at(-1);
  expect(last?.event).toBe("batch_end");
  return last!.data as unknown as { messages: ToolResultMessage[]; terminate: boolean };
}
