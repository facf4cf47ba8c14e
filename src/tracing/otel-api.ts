/**
 * The part of `@opentelemetry/api` toolpool uses. It is an optional peer
 * dependency, never imported at module load; the types are structural so no
 * emitted declaration refers to a package the user may not have.
 *
 * @module
 */
import { createRequire } from "node:module";

export type OtelContext = object;

export interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

export interface OtelSpan {
  spanContext(): OtelSpanContext;
  isRecording(): boolean;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: unknown): unknown;
  addEvent(name: string, attributes?: Record<string, string | number | boolean>): unknown;
  end(): void;
}

export interface OtelTracer {
  startSpan(name: string, options?: { kind?: number; attributes?: Record<string, string | number | boolean> }, context?: OtelContext): OtelSpan;
}

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

export const SPAN_KIND_INTERNAL = 0;
export const SPAN_STATUS_ERROR = 2;

/** Where `@opentelemetry/api` 1.x's `registerGlobal` keeps `trace` and `context` on `globalThis`. */
const otelGlobalKey = Symbol.for("opentelemetry.js.api.1");

/** Read without loading the API: until something is registered, spans would not record, so loading it is not worth paying for. */
export function isOtelRegistered(): boolean {
  const registered = (globalThis as Record<symbol, { trace?: unknown; context?: unknown } | undefined>)[otelGlobalKey];
  return registered !== undefined && (registered.trace !== undefined || registered.context !== undefined);
}

/** `undefined`: not looked for yet; `null`: not installed. */
let api: OtelApi | null | undefined;

/**
 * Looked for once per thread, on first use. Loaded synchronously (CommonJS
 * build) on purpose: a batch's span starts with the batch, and an async
 * `import()` would leave the first batches untraced. Both builds share state
 * on one `Symbol.for` global, so what the application registers is seen here.
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
