/**
 * The part of `@opentelemetry/api` toolpool uses, and how it is found.
 *
 * `@opentelemetry/api` is an optional peer dependency: toolpool never imports
 * it at module load, so importing `toolpool` costs nothing more without it.
 * The types below are structural, the few members toolpool calls, so that no
 * emitted declaration refers to a package the user may not have.
 *
 * @module
 */
import { createRequire } from "node:module";

/** An OpenTelemetry `Context` (opaque). */
export type OtelContext = object;

/** The members of an OpenTelemetry `SpanContext` toolpool reads. */
export interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

/** The members of an OpenTelemetry `Span` toolpool calls. */
export interface OtelSpan {
  spanContext(): OtelSpanContext;
  isRecording(): boolean;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: unknown): unknown;
  addEvent(name: string, attributes?: Record<string, string | number | boolean>): unknown;
  end(): void;
}

/** The members of an OpenTelemetry `Tracer` toolpool calls. */
export interface OtelTracer {
  startSpan(name: string, options?: { kind?: number; attributes?: Record<string, string | number | boolean> }, context?: OtelContext): OtelSpan;
}

/** The members of `@opentelemetry/api` toolpool calls. */
export interface OtelApi {
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
    setSpanContext(context: OtelContext, spanContext: OtelSpanContext): OtelContext;
  };
  context: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
}

/** `SpanKind.INTERNAL` of `@opentelemetry/api`. */
export const SPAN_KIND_INTERNAL = 0;
/** `SpanStatusCode.ERROR` of `@opentelemetry/api`. */
export const SPAN_STATUS_ERROR = 2;

/**
 * Where `@opentelemetry/api` 1.x keeps what an application registers (its
 * `registerGlobal`): one object on `globalThis` under this symbol, holding
 * `trace` once a tracer provider is registered and `context` once a context
 * manager is.
 */
const otelGlobalKey = Symbol.for("opentelemetry.js.api.1");

/**
 * Whether the application registered a tracer provider or a context manager
 * with `@opentelemetry/api`, read without loading the API: until it does, a
 * batch would make only non-recording spans, so toolpool does not pay for
 * loading the API for them.
 */
export function isOtelRegistered(): boolean {
  const registered = (globalThis as Record<symbol, { trace?: unknown; context?: unknown } | undefined>)[otelGlobalKey];
  return registered !== undefined && (registered.trace !== undefined || registered.context !== undefined);
}

/** `undefined`: not looked for yet; `null`: not installed. */
let api: OtelApi | null | undefined;

/**
 * `@opentelemetry/api`, or `undefined` when it is not installed; looked for
 * once per thread, on first use (never when `toolpool` is imported).
 *
 * Loaded synchronously (its CommonJS build, through `createRequire`) on
 * purpose: a batch's span must start with the batch, so an asynchronous
 * `import()` would leave the first batches of a process untraced or delay
 * them. Both builds of the API keep their state (the tracer provider, the
 * context manager) on one global keyed by `Symbol.for`, so what the
 * application registers through `import` is what toolpool sees here.
 */
export function loadOtelApi(): OtelApi | undefined {
  if (api === undefined) {
    try {
      api = createRequire(import.meta.url)("@opentelemetry/api") as OtelApi;
    } catch {
      api = null;
    }
  }
  return api ?? undefined;
}
