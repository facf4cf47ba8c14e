/**
 * The view for people: progress and one line per ended call on stderr while the batch runs, then the results in call
 * order and a summary on stdout.
 */
import type { BatchEvent, BatchOutcome, EmitFunction, ToolResultMessage } from "../index.js";
import type { BatchView } from "./batch-view.js";
import { writeText, type CliStreams } from "./output-streams.js";
import { createProgressDisplay, type ProgressDisplay } from "./progress-display.js";

const RESULT_PREVIEW_LINES = 4;
const RESULT_LINE_CHARS = 160;

export class HumanView implements BatchView {
  readonly #streams: CliStreams;
  readonly #progress: ProgressDisplay;
  readonly #now: () => number;
  readonly #startedAt = new Map<string, number>();
  readonly #isFull: boolean;

  /** @param isFull Results whole (`run --full`) rather than their first lines, cut. */
  constructor(streams: CliStreams, total: number, now: () => number = () => performance.now(), isFull = false) {
    this.#streams = streams;
    this.#now = now;
    this.#isFull = isFull;
    this.#progress = createProgressDisplay(streams.stderr, total);
  }

  readonly emit: EmitFunction = (event: BatchEvent) => {
    if (event.type === "tool_execution_start") {
      this.#startedAt.set(event.toolCallId, this.#now());
    } else if (event.type === "tool_execution_end") {
      const startedAt = this.#startedAt.get(event.toolCallId);
      const duration = startedAt === undefined ? "" : `  ${formatMs(this.#now() - startedAt)}`;
      this.#progress.callEnded(`${statusMark(event.isError)} ${event.toolName}  ${event.toolCallId}${duration}`);
    }
  };

  async finish(outcome: BatchOutcome, wallMs: number): Promise<void> {
    this.#progress.stop();
    const { messages, terminate } = outcome;
    const errors = messages.filter((message) => message.isError).length;
    const blocks = messages.map((message, index) => formatResult(message, index, this.#isFull));
    const summary =
      `${plural(messages.length, "call")}, ${plural(errors, "error")}, ` + `terminate: ${String(terminate)}, wall time ${formatMs(wallMs)}`;
    const text = messages.length === 0 ? `${summary}\n` : `\nResults (call order):\n${blocks.join("")}\n${summary}\n`;
    await writeText(this.#streams.stdout, text);
  }

  dispose(): void {
    this.#progress.stop();
  }
}

function formatResult(message: ToolResultMessage, index: number, isFull: boolean): string {
  const header = `${String(index + 1).padStart(3)}. ${statusMark(message.isError)} ${message.toolName}  ${message.toolCallId}`;
  const lines = previewLines(message, isFull);
  return `${header}\n${lines.map((line) => `       ${line}\n`).join("")}`;
}

function previewLines(message: ToolResultMessage, isFull: boolean): string[] {
  const text = message.content.map((block) => (block.type === "text" ? block.text : `[image ${block.mimeType}]`)).join("\n");
  const lines = text.split(/\r?\n/).map((line) => line.trimEnd());
  while (lines.length > 0 && lines[0] === "") lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  if (lines.length === 0) return ["(no output)"];
  if (isFull) return lines;
  const shown = lines.slice(0, RESULT_PREVIEW_LINES).map(clip);
  const hidden = lines.length - shown.length;
  return hidden > 0 ? [...shown, `… ${plural(hidden, "more line")}`] : shown;
}

function clip(line: string): string {
  return line.length <= RESULT_LINE_CHARS ? line : `${line.slice(0, RESULT_LINE_CHARS - 1)}…`;
}

function statusMark(isError: boolean): string {
  return isError ? "✗" : "✓";
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}
