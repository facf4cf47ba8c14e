/** Misuse throws a {@link ToolpoolError}; a call's own fault is an error result with `details.code`. Codes are never reused. */

/** docs/errors.md documents each code; a test keeps the two in step. */
export const errorCodes = {
  TP_ERR_INVALID_OPTION: "an option passed to createRuntime is invalid",
  TP_ERR_INVALID_TOOL: "a tool definition is invalid, or two tools share a name",
  TP_ERR_INVALID_BATCH: "executeToolCalls got something that is not an assistant message",
  TP_ERR_CLOSED: "the runtime is closed",
  TP_ERR_TOOL_LOAD: "a worker tool's module could not be loaded or lacks the export",
  TP_ERR_WORKER_CRASH: "the worker running the call crashed",
  TP_ERR_WORKER_EXIT: "the worker running the call exited",
  TP_ERR_OUT_OF_MEMORY: "the worker running the call ran out of memory",
  TP_ERR_TIMEOUT: "the call ran past its timeoutMs and its worker was terminated; it may have had some of its effects",
  TP_ERR_ABORTED: "the call ignored the batch's abort past the grace period and its worker was terminated",
  TP_ERR_REPLY_LOST: "the call's tool finished but its worker could not deliver the result; its effects took place",
  TP_ERR_RESULT_NOT_CLONEABLE: "the call's result cannot be structured-cloned",
  TP_ERR_RESULT_TOO_LARGE: "the call's result is larger than maxResultBytes",
  TP_ERR_UNAUTHORIZED: "an HTTP request lacked the server's bearer token",
  TP_ERR_QUEUE_FULL: "the pool's queue is full",
  TP_ERR_FORBIDDEN: "an HTTP request's Host or Origin header is not allowed",
  TP_ERR_NODE_LOST: "the fleet node running the call was lost; the call may have run partly or fully",
  TP_ERR_FLEET_UNAVAILABLE: "Redis is unreachable, or no live fleet node serves the toolset",
  TP_ERR_TOOL_MISMATCH: "the fleet's nodes serve different tools, or another pi, than the coordinator",
  TP_ERR_HEADERS_TIMEOUT: "an HTTP connection did not complete its request's headers within headersTimeoutMs",
  TP_ERR_OVERLOADED: "the server is overloaded and answers 503 with Retry-After",
  TP_ERR_TOO_MANY_SESSIONS: "every MCP session slot is taken by a session with requests in flight",
  TP_ERR_SESSION_CLOSED: "the client closed its MCP session while the request was in flight",
  TP_ERR_MISSING_PACKAGE: "an optional package that a feature needs is not installed",
  TP_ERR_SANDBOX_UNAVAILABLE: "the sandbox asked for (bwrap) cannot run on this machine; nothing runs without it",
} as const;

export type ErrorCode = keyof typeof errorCodes;

const toolpoolErrorBrand = Symbol.for("toolpool.error");

/** Thrown for misuse of toolpool's API; match the stable `code`, not the message. */
export class ToolpoolError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ToolpoolError";
    this.code = code;
    Object.defineProperty(this, toolpoolErrorBrand, { value: true });
  }

  /** Holds across copies of this module (the bundle, the CLI, `toolpool/mcp`, a second install). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[toolpoolErrorBrand] === true;
  }
}

/** A thrown `Error`'s `name` (unless `"Error"`) and own primitive fields (`code`, `errno`…), to cross threads. */
export interface ThrownErrorFields {
  name?: string;
  fields?: Record<string, string | number | boolean>;
}

const unfieldedNames: ReadonlySet<string> = new Set(["message", "stack"]);

/** Never throws: a throwing getter is left out. */
export function thrownFieldsOf(error: unknown): ThrownErrorFields | undefined {
  if (!(error instanceof Error)) return undefined;
  const thrown: ThrownErrorFields = {};
  try {
    const { name } = error;
    if (typeof name === "string" && name !== "Error") thrown.name = name;
  } catch {}
  try {
    for (const key of Object.keys(error)) {
      // A field named as a method every error has (`toString`, `valueOf`) would break `String(error)` where it lands.
      if (unfieldedNames.has(key) || typeof (Error.prototype as unknown as Record<string, unknown>)[key] === "function") continue;
      const value: unknown = (error as unknown as Record<string, unknown>)[key];
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") (thrown.fields ??= {})[key] = value;
    }
  } catch {}
  return thrown.name === undefined && thrown.fields === undefined ? undefined : thrown;
}

/** So that `instanceof TypeError` holds across threads. */
const builtinErrors: Readonly<Record<string, ErrorConstructor>> = {
  TypeError,
  RangeError,
  SyntaxError,
  ReferenceError,
  EvalError,
  URIError,
};

export function errorFromThrown(message: string, thrown: ThrownErrorFields | undefined): Error {
  const builtin = thrown?.name === undefined ? undefined : builtinErrors[thrown.name];
  const error = builtin === undefined ? new Error(message) : new builtin(message);
  if (thrown?.name !== undefined && builtin === undefined && thrown.fields?.name === undefined) {
    // A name from the error's class (its prototype's): not one of its fields.
    Object.defineProperty(error, "name", { value: thrown.name, writable: true, configurable: true, enumerable: false });
  }
  if (thrown?.fields !== undefined) Object.assign(error, thrown.fields);
  return error;
}

/** `` `0` (number) `` */
export function describeValue(value: unknown): string {
  let shown: string;
  try {
    shown = typeof value === "function" ? `[function ${value.name || "anonymous"}]` : (JSON.stringify(value) ?? String(value));
  } catch {
    shown = String(value);
  }
  if (shown.length > 80) shown = `${shown.slice(0, 77)}...`;
  const kind = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  return `\`${shown}\` (${kind})`;
}

/** pi's text of a thrown value (`message`, else `String(value)`), made total: `String` throws for a prototype-less object. */
export function describeThrown(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

/** Shared so that a call ended the same way reads the same wherever it ran. */
export const outcomeTexts = {
  poolClosed: (tool: string): string => `Tool "${tool}" was not run: the pool is closed`,
  stoppedByForce: (tool: string): string => `Tool "${tool}" was stopped: the runtime was closed by force`,
  notRunByForce: (tool: string): string => `Tool "${tool}" was not run: the runtime was closed by force`,
} as const;
