/**
 * Drives pi's real agent loop (`runAgentLoopContinue` of
 * @mariozechner/pi-agent-core) over one tool batch, with a fake model: the
 * first model call answers with the batch's tool calls, the second with a
 * plain "stop" message. What runs in between is pi's own prepare → execute →
 * finalize pipeline, exactly as in production.
 */
import {
  runAgentLoopContinue,
  type AgentContext,
  type AgentEvent,
  type AgentLoopConfig,
  type AgentTool,
  type StreamFn,
} from "@mariozechner/pi-agent-core";
// pi-ai (pinned beside pi-agent-core, whose own dependency it is) builds the fake model stream.
import { createAssistantMessageEventStream, type AssistantMessage, type Message, type Model, type ToolCall } from "@mariozechner/pi-ai";

const fakeModel: Model<"bench-fake"> = {
  id: "bench-fake",
  name: "bench fake model",
  api: "bench-fake",
  provider: "bench",
  baseUrl: "http://127.0.0.1:0",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 1_000_000,
};

function createAssistantMessage(content: AssistantMessage["content"], stopReason: AssistantMessage["stopReason"]): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: fakeModel.api,
    provider: fakeModel.provider,
    model: fakeModel.id,
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason,
    timestamp: Date.now(),
  };
}

/** A stream function that answers each batch of `turns` in turn, then "stop". */
function createFakeStreamFn(turns: readonly ToolCall[][]): StreamFn {
  let turn = 0;
  return () => {
    const stream = createAssistantMessageEventStream();
    const toolCalls = turns[turn++];
    const message =
      toolCalls !== undefined ? createAssistantMessage(toolCalls, "toolUse") : createAssistantMessage([{ type: "text", text: "done" }], "stop");
    stream.push({ type: "start", partial: message });
    stream.push({ type: "done", reason: toolCalls !== undefined ? "toolUse" : "stop", message });
    return stream;
  };
}

/** The outcome of one pi loop run. */
export interface PiLoopRun {
  /** Tool result messages the loop produced, in call order. */
  toolResults: { toolCallId: string; isError: boolean; content: unknown; details: unknown }[];
  /** Number of events pi emitted. */
  eventCount: number;
}

/**
 * Runs pi's loop over one batch of `toolCalls` with `tools` and resolves once
 * the loop ends (agent_end). Throws if pi's loop throws.
 */
export async function runPiBatch(tools: AgentTool[], toolCalls: ToolCall[]): Promise<PiLoopRun> {
  return runPiSession(tools, [toolCalls]);
}

/**
 * Runs pi's loop over a whole session: one model turn per batch of `turns`
 * (each answered with that batch's tool calls), then a final "stop" turn.
 * `onEvent` sees every event pi emits, as pi's sink would.
 */
export async function runPiSession(tools: AgentTool[], turns: readonly ToolCall[][], onEvent?: (event: AgentEvent) => void): Promise<PiLoopRun> {
  const context: AgentContext = {
    systemPrompt: "",
    messages: [{ role: "user", content: "run the tools", timestamp: Date.now() }],
    tools,
  };
  const config: AgentLoopConfig = {
    model: fakeModel,
    // The context holds only LLM messages (no custom ones), so they pass through as they are.
    convertToLlm: (messages) => messages as Message[],
    toolExecution: "parallel",
  };
  let eventCount = 0;
  const emit = async (event: AgentEvent): Promise<void> => {
    eventCount += 1;
    onEvent?.(event);
  };
  const newMessages = await runAgentLoopContinue(context, config, emit, undefined, createFakeStreamFn(turns));
  const toolResults = newMessages
    .filter((message): message is Extract<typeof message, { role: "toolResult" }> => "role" in message && message.role === "toolResult")
    .map((message) => ({
      toolCallId: message.toolCallId,
      isError: message.isError,
      content: message.content,
      details: message.details as unknown,
    }));
  return { toolResults, eventCount };
}
