/** toolpool: executes an LLM agent's tool calls with pi's exact semantics, running CPU-heavy tools on a Piscina worker pool. */
export { createRuntime, Runtime } from "./runtime.js";
export type { ExecuteOptions, RunToolCallOptions, RuntimeDiagnosis, ToolCallOutcome } from "./runtime.js";
export { workerTool, isWorkerTool } from "./contracts/worker-tool.js";
export type { WorkerCallInfo, WorkerResourceLimits, WorkerTool, WorkerToolOptions } from "./contracts/worker-tool.js";
export type { PoolCallDiagnosis, PoolDiagnosis, PoolStats } from "./contracts/pool-contract.js";
export type { CapWait } from "./runtime.js";
export type {
  PoolCallEndedEvent,
  PoolCallEvent,
  PoolCallEventBase,
  PoolCallListener,
  PoolCallQueuedEvent,
  PoolCallStartedEvent,
  PoolEventSource,
  PoolThreadEntry,
  PoolThreadEvent,
  PoolThreadListener,
} from "./contracts/pool-events.js";
export { builtinTools } from "./builtin-tools.js";
export { codingTools, type CodingToolName, type CodingToolsOptions, type CodingWorkspace, type PiSessionInfo } from "./coding-tools.js";
export {
  type BwrapSandboxOptions,
  defaultHiddenPaths,
  defaultSandboxEnv,
  probeSandbox,
  type SandboxOption,
  type SandboxProbe,
} from "./coding-tools.js";
export type { BuiltinToolName, BuiltinToolsOptions } from "./builtin-tools.js";
export { createServer } from "./server/create-server.js";
export type {
  BatchRequestBody,
  CloseServerOptions,
  ErrorBody,
  FastifyApp,
  FastifyInjectOptions,
  FastifyInjectResponse,
  FastifyRouteOptions,
  FastifyRouteReply,
  FastifyRouteRequest,
  PoolCallOutcome,
  PoolCallRecord,
  PoolCallsFrame,
  PoolEventClientState,
  PoolEventFrame,
  PoolEventsDiagnosis,
  PoolEventsHelloFrame,
  PoolFaultView,
  PoolRunningCall,
  PoolSessionView,
  PoolSnapshotFrame,
  PoolThreadState,
  PoolThreadView,
  PoolToolView,
  ResolvedServerOptions,
  ServerOptions,
  ToolpoolServer,
  ToolsResponse,
} from "./server/create-server.js";
export { FleetNode } from "./fleet/fleet-node.js";
export type { FleetNodeOptions } from "./fleet/fleet-node-options.js";
export type { FleetOptions, ResolvedFleetOptions } from "./contracts/fleet-options.js";
export type { FleetStats } from "./contracts/pool-contract.js";
export type { RemoteCallRecord } from "./events.js";
export { ToolpoolError, errorCodes } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export type { Clock } from "./clock.js";
export { supportsPi16 } from "./options.js";
export { minimumResourceLimits } from "./contracts/minimum-resource-limits.js";
export type {
  PiVersion,
  PoolOptions,
  ResolvedPoolOptions,
  ResolvedRuntimeOptions,
  RuntimeOptions,
  ToolDefinition,
} from "./options.js";
export type {
  BatchEndEvent,
  BatchEvent,
  BatchStartEvent,
  EmitFunction,
  EventMeta,
  MessageEndEvent,
  MessageStartEvent,
  RuntimeEvents,
  ToolExecutionEndEvent,
  ToolExecutionStartEvent,
  ToolExecutionUpdateEvent,
} from "./events.js";
export type {
  AfterToolCallContext,
  AfterToolCallHook,
  AfterToolCallResult,
  AgentContext,
  AgentTool,
  AgentToolResult,
  AgentToolUpdateCallback,
  AssistantMessage,
  BatchOutcome,
  BeforeToolCallContext,
  BeforeToolCallHook,
  BeforeToolCallResult,
  ImageContent,
  JsonSchema,
  JsonValue,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolExecutionMode,
  ToolResultMessage,
  SpreadOutcome,
  Usage,
  WorkerToolContext,
  WorkerToolExecute,
} from "./types.js";
