/**
 * Worker module of suite 4: large results. Every function builds its payload
 * first (outside the timing), then stamps `finishedAt` (epoch ms, comparable
 * across threads) right before returning, so the main thread can tell how
 * long the result took to cross the thread boundary.
 *
 * toolpool worker tools: `text` (10 MB in `content`) and `binary` (10 MB
 * `Uint8Array` in `details`; toolpool's worker entry moves it). The default
 * export is the bare-Piscina task: `{ kind: "text" | "copy" | "move" }`.
 */
import { Piscina } from "piscina";

/** Payload size of suite 4. */
export const largeResultBytes = 10 * 1024 * 1024;

let cachedText: string | undefined;

/** A 10 MB one-byte string, made once per thread; each call clones it anew. */
function largeText(): string {
  cachedText ??= "0123456789abcdef toolpool bench line\n".repeat(Math.ceil(largeResultBytes / 37)).slice(0, largeResultBytes);
  return cachedText;
}

/** A fresh 10 MB buffer per call: a moved buffer is gone from this thread. */
function largeBinary(): Uint8Array {
  const data = new Uint8Array(largeResultBytes);
  for (let i = 0; i < data.length; i += 4096) data[i] = i & 0xff;
  return data;
}

const now = (): number => performance.timeOrigin + performance.now();

export function text(): { content: { type: "text"; text: string }[]; details: { finishedAt: number } } {
  const payload = largeText();
  return { content: [{ type: "text", text: payload }], details: { finishedAt: now() } };
}

export function binary(): { content: { type: "text"; text: string }[]; details: { data: Uint8Array; finishedAt: number } } {
  const data = largeBinary();
  return { content: [{ type: "text", text: `${data.byteLength} bytes` }], details: { data, finishedAt: now() } };
}

export default function runLarge(task: { kind: "text" | "copy" | "move" }): unknown {
  if (task.kind === "text") {
    const payload = largeText();
    return { text: payload, finishedAt: now() };
  }
  const data = largeBinary();
  if (task.kind === "copy") return { data, finishedAt: now() };
  const value = { data, finishedAt: 0 };
  const movable = { [Piscina.transferableSymbol]: [data.buffer], [Piscina.valueSymbol]: value };
  value.finishedAt = now();
  return Piscina.move(movable as never);
}
