/**
 * Error codes and the error class of toolpool.
 *
 * Two channels: misuse of the API (bad options, a bad tool definition, a call
 * after `close()`) throws a {@link ToolpoolError}; a tool call's own failure is
 * never thrown but becomes an error result, and for faults pi cannot have (a
 * crashed worker, a timeout, …) the code goes in the result's `details.code`.
 *
 * Codes are stable: a retired code is never reused for another meaning.
 *
 * @module
 */

/**
 * Every code toolpool uses, with what it means. Each one is documented in the
 * "Error codes" table of docs/errors.md; a test keeps the two in step.
 */
export const errorCodes = {
  /** An option passed to `createRuntime` is invalid. Thrown. */
  TP_ERR_INVALID_OPTION: "an option passed to createRuntime is invalid",
  /** A tool definition is invalid, or two tools share a name. Thrown. */
  TP_ERR_INVALID_TOOL: "a tool definition is invalid, or two tools share a name",
  /** `executeToolCalls` got something that is not an assistant message. Thrown. */
  TP_ERR_INVALID_BATCH: "executeToolCalls got something that is not an assistant message",
  /** The runtime is closed: thrown by `executeToolCalls`, or in the result of a call ended by a forced close. */
  TP_ERR_CLOSED: "the runtime is closed",
  /** A worker tool's module could not be loaded, or lacks the named export. Result. */
  TP_ERR_TOOL_LOAD: "a worker tool's module could not be loaded or lacks the export",
  /** The worker running the call crashed (an uncaught exception or rejection). Result. */
  TP_ERR_WORKER_CRASH: "the worker running the call crashed",
  /** The worker running the call exited (`process.exit`, any code). Result. */
  TP_ERR_WORKER_EXIT: "the worker running the call exited",
  /** The worker running the call exceeded its JS heap limit (`resourceLimits`). Result. */
  TP_ERR_OUT_OF_MEMORY: "the worker running the call ran out of memory",
  /** The call ran past its `timeoutMs` and its worker was terminated while the tool was running: it may have had some of its effects. Never given to a call whose tool finished. Result. */
  TP_ERR_TIMEOUT: "the call ran past its timeoutMs and its worker was terminated; it may have had some of its effects",
  /** The batch was aborted and the call ignored its signal past the grace period; its worker was terminated. On a fleet, also a call its batch's abort took back from the queue ("was not run"). Result. */
  TP_ERR_ABORTED: "the call ignored the batch's abort past the grace period and its worker was terminated",
  /** The call's tool finished, but its worker was blocked (by work the tool left running) before it could deliver the result; it was terminated. The tool's effects took place. Result. */
  TP_ERR_REPLY_LOST: "the call's tool finished but its worker could not deliver the result; its effects took place",
  /** The call's result (or a partial result) cannot be structured-cloned across threads. Result. */
  TP_ERR_RESULT_NOT_CLONEABLE: "the call's result cannot be structured-cloned",
  /** The call's result holds more bytes than `maxResultBytes`. Result. */
  TP_ERR_RESULT_TOO_LARGE: "the call's result is larger than maxResultBytes",
  /** An HTTP request lacked the server's bearer token (401). */
  TP_ERR_UNAUTHORIZED: "an HTTP request lacked the server's bearer token",
  /** The pool's queue is full (`pool.maxQueue`). Result. */
  TP_ERR_QUEUE_FULL: "the pool's queue is full",
  /** An HTTP request's Host or Origin header is not allowed (403): a browser page's request, refused. */
  TP_ERR_FORBIDDEN: "an HTTP request's Host or Origin header is not allowed",
  /** The fleet node running the call was lost (died, or cut off from Redis) mid-call; the call may have run partly or fully. Result. */
  TP_ERR_NODE_LOST: "the fleet node running the call was lost; the call may have run partly or fully",
  /** Redis is unreachable, or no live node serves the runtime's toolset, or the node found the call's coordinator gone (its presence key lapsed). Result. */
  TP_ERR_FLEET_UNAVAILABLE: "Redis is unreachable, or no live fleet node serves the toolset",
  /** The fleet's nodes serve tools that differ from the coordinator's, or serve another pi's coordinators. Result. */
  TP_ERR_TOOL_MISMATCH: "the fleet's nodes serve different tools, or another pi, than the coordinator",
  /** An HTTP connection did not complete its first request's headers within `headersTimeoutMs`: answered 408 and closed. */
  TP_ERR_HEADERS_TIMEOUT: "an HTTP connection did not complete its request's headers within headersTimeoutMs",
  /** The server is overloaded (event-loop delay, heap or RSS past its limit) and answers 503 with Retry-After. */
  TP_ERR_OVERLOADED: "the server is overloaded and answers 503 with Retry-After",
  /** `toolpool mcp --http`: every MCP session slot is taken by a session with requests in flight; a new `initialize` is answered 503 with Retry-After. */
  TP_ERR_TOO_MANY_SESSIONS: "every MCP session slot is taken by a session with requests in flight",
  /** `toolpool mcp --http`: the client closed its MCP session while the request was in flight; the request was cancelled. JSON-RPC error. */
  TP_ERR_SESSION_CLOSED: "the client closed its MCP session while the request was in flight",
  /** A feature's optional package (the server's, MCP's, the fleet's) is not installed; the message names it and the `npm install` line. Also the pi extension's when it cannot find the pi that loads it. Thrown. */
  TP_ERR_MISSING_PACKAGE: "an optional package that a feature needs is not installed",
} as const;

/** A stable toolpool error code. */
export type ErrorCode = keyof typeof errorCodes;

/** Marks every ToolpoolError, whichever copy of this module made it (see `Symbol.hasInstance` below). */
const toolpoolErrorBrand = Symbol.for("toolpool.error");

/**
 * Thrown for misuse of toolpool's API. `code` is stable; match it, not the message.
 *
 * @example
 * ```ts
 * try { createRuntime({ pool: { maxThreads: 0 } }); }
 * catch (error) { if (error instanceof ToolpoolError && error.code === "TP_ERR_INVALID_OPTION") … }
 * ```
 */
export class ToolpoolError extends Error {
  /** The stable error code. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ToolpoolError";
    this.code = code;
    Object.defineProperty(this, toolpoolErrorBrand, { value: true });
  }

  /**
   * `instanceof` holds for a ToolpoolError of any copy of this module: the
   * package entry is a bundle of toolpool's modules, while the CLI, the
   * `toolpool/mcp` entry or a second install of toolpool load modules of
   * their own.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[toolpoolErrorBrand] === true;
  }
}

/**
 * What an `Error` a tool threw in its worker had besides its message, for
 * the error a caller of `runtime.agentTools()`' `execute` is rejected with:
 * its `name` where it is not `"Error"`, and its own enumerable fields whose
 * values are strings, numbers or booleans (a Node system error's `code`,
 * `errno`, `syscall`, `path`; a `name` a class sets on `this`).
 */
export interface ThrownErrorFields {
  name?: string;
  fields?: Record<string, string | number | boolean>;
}

/** Names an error's own fields never carry: its message, carried otherwise, and its stack, remade where it is thrown again. */
const unfieldedNames: ReadonlySet<string> = new Set(["message", "stack"]);

/**
 * What `error` has besides its message that can cross to another thread, or
 * undefined for a value that is not an `Error` or has nothing more. Never
 * throws: a getter that does is left out.
 */
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

/** The built-in classes an error is remade as by its name, so that `instanceof TypeError` holds across threads. */
const builtinErrors: Readonly<Record<string, ErrorConstructor>> = {
  TypeError,
  RangeError,
  SyntaxError,
  ReferenceError,
  EvalError,
  URIError,
};

/**
 * The error a tool threw on another thread, remade from its message and
 * {@link thrownFieldsOf}: an `Error` (a built-in subclass where its name is
 * one) with the same `name`, `message` and fields.
 */
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

/** Describes a value for an error message: `` `0` (number) ``. */
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

/**
 * pi's rule for the text of a thrown value (`message` of an Error, else
 * `String(value)`), made total: `String` itself throws for an object without
 * a prototype, which must not break a batch.
 */
export function describeThrown(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

/**
 * Texts of call outcomes that more than one part gives (the worker pool, the
 * fleet's remote pool, the batch coordinator), made here once so that a call
 * ended the same way reads the same wherever it ran.
 */
export const outcomeTexts = {
  /** A call submitted to a pool that is closed. */
  poolClosed: (tool: string): string => `Tool "${tool}" was not run: the pool is closed`,
  /** A call that was running (or waiting in a pool) when the runtime was closed by force. */
  stoppedByForce: (tool: string): string => `Tool "${tool}" was stopped: the runtime was closed by force`,
  /** A call that had not started when the runtime was closed by force. */
  notRunByForce: (tool: string): string => `Tool "${tool}" was not run: the runtime was closed by force`,
} as const;
