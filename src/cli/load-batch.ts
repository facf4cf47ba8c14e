/** Reads the batch file of `toolpool run`: an assistant message, or `{ assistantMessage, context }`. */
import { readFile } from "node:fs/promises";

import type { AssistantMessage, ExecuteOptions } from "../index.js";
import { describeThrown } from "../errors.js";
import { UsageError } from "./usage-error.js";

export interface BatchInput {
  assistantMessage: AssistantMessage;
  context?: ExecuteOptions["context"];
}

const STDIN_PATH = "-";

/** `-` reads standard input. Throws a {@link UsageError} for an unreadable file, invalid JSON, or not an assistant message. */
export async function loadBatch(path: string): Promise<BatchInput> {
  const source = path === STDIN_PATH ? "standard input" : path;
  let text: string;
  try {
    text = path === STDIN_PATH ? await readStdin() : await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : describeThrown(error);
    throw new UsageError(`cannot read batch file ${source}: ${reason}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`invalid JSON in ${source}: ${describeThrown(error)}`, { cause: error });
  }
  return parseBatch(json, source);
}

/** Only the shape the CLI needs; `executeToolCalls` checks the tool call blocks (`TP_ERR_INVALID_BATCH`). */
function parseBatch(json: unknown, source: string): BatchInput {
  if (isRecord(json) && "assistantMessage" in json) {
    const { assistantMessage, context } = json;
    if (context !== undefined && !isRecord(context)) {
      throw new UsageError(`${source}: expected "context" to be an object, got ${describeJson(context)}`);
    }
    return {
      assistantMessage: checkAssistantMessage(assistantMessage, `${source}: "assistantMessage"`),
      ...(context === undefined ? {} : { context }),
    };
  }
  return { assistantMessage: checkAssistantMessage(json, source) };
}

function checkAssistantMessage(value: unknown, where: string): AssistantMessage {
  if (!isRecord(value) || value.role !== "assistant" || !Array.isArray(value.content)) {
    throw new UsageError(
      `${where} is not an assistant message: expected { "role": "assistant", "content": [...] } ` +
        `or { "assistantMessage": ..., "context": ... }, got ${describeJson(value)}`,
    );
  }
  return value as AssistantMessage;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describeJson(value: unknown): string {
  const shown = JSON.stringify(value) ?? String(value);
  return shown.length > 60 ? `${shown.slice(0, 57)}...` : shown;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
