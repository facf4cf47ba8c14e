/**
 * Compile-time proof that toolpool's public types are pi's (0.73.1 and
 * 1.6.0): each entry fails `npm run typecheck` (run by CI) when a type of
 * toolpool stops being assignable to pi's, or pi's to toolpool's. Nothing
 * here runs.
 *
 * Three are one way by design: toolpool's result messages always carry
 * `details` (pi's type leaves it optional), so they go to pi but pi's need
 * not come back; and pi 1.6's `ToolCall` restricts `arguments` to JSON, so
 * pi's calls come in but toolpool's wider type is not pi 1.6's.
 *
 * Hook functions are checked by their parts (context and result), not as
 * functions: toolpool's hooks may return synchronously, which pi's type does
 * not allow, and pi's hooks are typed for pi's full `AssistantMessage`
 * (`api`, `usage`, …), which toolpool does not require of a batch's message.
 *
 * @module
 */
import type * as Pi073 from "@mariozechner/pi-agent-core";
import type * as PiAi073 from "@mariozechner/pi-ai";
import type * as Pi16 from "@earendil-works/pi-agent-core";
import type * as PiAi16 from "@earendil-works/pi-ai";

import type * as Toolpool from "toolpool";

/** Compiles only when `From` is assignable to `To`. */
type Assignable<To, From extends To> = [To, From];

type ToolEvents<E> = Extract<E, { type: `tool_execution_${string}` }>;

export type Checks073 = [
  // Tools: toolpool's agentTools() go into pi's Agent, pi's tools into createRuntime.
  Assignable<Toolpool.AgentTool, Pi073.AgentTool>,
  Assignable<Pi073.AgentTool, Toolpool.AgentTool>,
  Assignable<Toolpool.AgentToolResult, Pi073.AgentToolResult<unknown>>,
  Assignable<Pi073.AgentToolResult<unknown>, Toolpool.AgentToolResult>,
  // Messages: pi's assistant message starts a batch; toolpool's results go to pi.
  Assignable<Toolpool.AssistantMessage, PiAi073.AssistantMessage>,
  Assignable<PiAi073.ToolResultMessage, Toolpool.ToolResultMessage>,
  Assignable<Toolpool.ToolCall, PiAi073.ToolCall>,
  Assignable<PiAi073.ToolCall, Toolpool.ToolCall>,
  // Events: every batch event is one of pi's, and pi's tool events are toolpool's.
  Assignable<Pi073.AgentEvent, Toolpool.BatchEvent>,
  Assignable<Toolpool.BatchEvent, ToolEvents<Pi073.AgentEvent>>,
  // Hooks: a toolpool hook body accepts pi's context; results go both ways.
  Assignable<Toolpool.BeforeToolCallContext, Pi073.BeforeToolCallContext>,
  Assignable<Toolpool.AfterToolCallContext, Pi073.AfterToolCallContext>,
  Assignable<Toolpool.BeforeToolCallResult, Pi073.BeforeToolCallResult>,
  Assignable<Pi073.BeforeToolCallResult, Toolpool.BeforeToolCallResult>,
  Assignable<Toolpool.AfterToolCallResult, Pi073.AfterToolCallResult>,
  Assignable<Pi073.AfterToolCallResult, Toolpool.AfterToolCallResult>,
];

export type Checks16 = [
  Assignable<Toolpool.AgentTool, Pi16.AgentTool>,
  Assignable<Pi16.AgentTool, Toolpool.AgentTool>,
  Assignable<Toolpool.AgentToolResult, Pi16.AgentToolResult<unknown>>,
  Assignable<Pi16.AgentToolResult<unknown>, Toolpool.AgentToolResult>,
  Assignable<Toolpool.AssistantMessage, PiAi16.AssistantMessage>,
  Assignable<PiAi16.ToolResultMessage, Toolpool.ToolResultMessage>,
  Assignable<Toolpool.ToolCall, PiAi16.ToolCall>,
  Assignable<Pi16.AgentEvent, Toolpool.BatchEvent>,
  Assignable<Toolpool.BatchEvent, ToolEvents<Pi16.AgentEvent>>,
  Assignable<Toolpool.BeforeToolCallContext, Pi16.BeforeToolCallContext>,
  Assignable<Toolpool.AfterToolCallContext, Pi16.AfterToolCallContext>,
  Assignable<Toolpool.BeforeToolCallResult, Pi16.BeforeToolCallResult>,
  Assignable<Pi16.BeforeToolCallResult, Toolpool.BeforeToolCallResult>,
  Assignable<Toolpool.AfterToolCallResult, Pi16.AfterToolCallResult>,
  Assignable<Pi16.AfterToolCallResult, Toolpool.AfterToolCallResult>,
];
