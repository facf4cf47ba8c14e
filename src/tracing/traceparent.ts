/** W3C `traceparent` values: how a call's span crosses to a worker thread or another machine. */
import type { OtelSpanContext } from "./otel-api.js";

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const invalidTraceId = "0".repeat(32);
const invalidSpanId = "0".repeat(16);

export function formatTraceparent(spanContext: OtelSpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** `undefined` for a malformed or all-zero value. */
export function parseTraceparent(traceparent: string): OtelSpanContext | undefined {
  const match = traceparentPattern.exec(traceparent);
  if (match === null || match[1] === invalidTraceId || match[2] === invalidSpanId) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
}
