// The small helpers most test files need: a batch from call specs, a result's
// text and code, and a bounded wait for a condition. One copy here, so that a
// change of shape (pi's message types) is made once.
import type { AssistantMessage } from "toolpool";

/** One tool call as a tuple: its id, its tool's name, its arguments (`{}` when left out). */
export type CallSpec = [id: string, name: string, args?: Record<string, unknown>];

/** An assistant message whose content is these tool calls, in order. */
export function batch(...calls: CallSpec[]): AssistantMessage {
  return { role: "assistant", content: calls.map(([id, name, args = {}]) => ({ type: "toolCall", id, name, arguments: args })) };
}

/** An assistant message of calls given as objects; a call without `name` is a call of `defaultName`. */
export function batchOf(calls: readonly { id: string; name?: string; arguments: Record<string, unknown> }[], defaultName = "task"): AssistantMessage {
  return batch(...calls.map((call): CallSpec => [call.id, call.name ?? defaultName, call.arguments]));
}

/** Anything with pi's result content: a tool result message, a tool's own result, an MCP or HTTP result. */
export interface HasContent {
  readonly content: readonly unknown[];
}

/** The text of a result: its text parts, one line each ("" for none, and for no result at all). */
export function textOf(result: HasContent | undefined): string {
  if (result === undefined) return "";
  return result.content.map((part) => ((part as { type?: string }).type === "text" ? ((part as { text?: string }).text ?? "") : "")).join("\n");
}

/** The `details.code` of a result (toolpool's faults put their code there), or undefined. */
export function codeOf(result: { readonly details?: unknown }): string | undefined {
  return (result.details as { code?: string } | undefined)?.code;
}

/** What `until` was waiting for when it gave up; the message names it. */
export class UntilTimeoutError extends Error {
  override readonly name = "UntilTimeoutError";
}

/**
 * Resolves once `check` holds, checking it every `everyMs` (a condition, not a
 * time window); rejects with an error naming `what` (a function: worked out
 * when it gives up, to show the last state) once `limitMs` has passed without
 * it. The limit is generous, far above what a busy machine needs: it
 * turns a hang into a failure that says what never came, and never decides a
 * passing run.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string | (() => string),
  { limitMs = 15_000, everyMs = 10 }: { limitMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new UntilTimeoutError(`until: ${typeof what === "string" ? what : what()} did not hold within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
