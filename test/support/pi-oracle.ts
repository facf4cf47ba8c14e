import { runAgentLoopContinue as runPi16LoopContinue } from "@earendil-works/pi-agent-core";
import { runAgentLoopContinue, type AgentLoopConfig, type AgentTool as PiAgentTool } from "@mariozechner/pi-agent-core";

import type { AgentTool, AssistantMessage, BatchEvent, BatchOutcome, PiVersion } from "toolpool";

/** What the oracle needs to run one batch through pi's real agent loop. */
export interface PiBatchInput {
  tools: AgentTool[];
  assistantMessage: AssistantMessage;
  toolExecution: "parallel" | "sequential";
  beforeToolCall?: AgentLoopConfig["beforeToolCall"];
  afterToolCall?: AgentLoopConfig["afterToolCall"];
  signal?: AbortSignal;
  systemPrompt: string;
  /** Messages before the assistant message; pi's context holds these plus the assistant message. */
  history: unknown[];
  emit: (event: BatchEvent) => void | Promise<void>;
  /** Whose loop runs the batch: pi 0.73.1's (`@mariozechner/pi-agent-core`) or pi 1.6.0's (`@earendil-works/pi-agent-core`). @default "0.73" */
  pi?: PiVersion;
  /** Hand pi a sink that calls `emit` at once and returns what it returns (a throw included), not an async one. */
  syncSink?: boolean;
}

const model = { id: "oracle", name: "oracle", api: "oracle", provider: "oracle" };

/**
 * Runs one batch through pi's own loop (`runAgentLoopContinue` of 0.73.1, or of 1.6.0): a fake
 * model answers first with the assistant message, then (unless the batch
 * terminated) with a plain stop. The events between the assistant message's
 * `message_end` and `turn_end` are the batch's; `terminate` is read off
 * whether pi asked the model again.
 */
export async function runPiBatch(input: PiBatchInput): Promise<BatchOutcome> {
  let modelCalls = 0;
  let isInBatch = false;
  let outcome: BatchOutcome | undefined;
  const streamFn = () => {
    modelCalls += 1;
    const message =
      modelCalls === 1 ? input.assistantMessage : { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop", timestamp: 0 };
    return fakeStream(message);
  };
  const context = {
    systemPrompt: input.systemPrompt,
    messages: [...(input.history as never[])],
    tools: input.tools satisfies PiAgentTool[],
  };
  const config = {
    model,
    convertToLlm: (messages: unknown[]) => messages,
    toolExecution: input.toolExecution,
    beforeToolCall: input.beforeToolCall,
    afterToolCall: input.afterToolCall,
  } as unknown as AgentLoopConfig;
  const runLoop = input.pi === "1.6" ? (runPi16LoopContinue as unknown as typeof runAgentLoopContinue) : runAgentLoopContinue;
  const sink = (event: unknown): void | Promise<void> => {
    const e = event as { type: string; message?: { role?: string }; toolResults?: unknown[] };
    if (!isInBatch && outcome === undefined && e.type === "message_end" && e.message?.role === "assistant") {
      isInBatch = true;
      return;
    }
    if (isInBatch && e.type === "turn_end") {
      isInBatch = false;
      outcome = { messages: e.toolResults as BatchOutcome["messages"], terminate: false };
      return;
    }
    if (isInBatch) return input.emit(event as BatchEvent);
  };
  const asyncSink = async (event: unknown): Promise<void> => {
    await sink(event);
  };
  await runLoop(context as never, config, (input.syncSink ? sink : asyncSink) as never, input.signal, streamFn as never);
  if (outcome === undefined) throw new Error("pi's loop ended without a turn_end");
  const hasToolCalls = input.assistantMessage.content.some((block) => block.type === "toolCall");
  return { messages: outcome.messages, terminate: hasToolCalls && modelCalls === 1 };
}

function fakeStream(message: unknown) {
  const done = { type: "done", reason: "stop", message };
  return {
    async *[Symbol.asyncIterator]() {
      yield done;
    },
    result: async () => message,
  };
}
