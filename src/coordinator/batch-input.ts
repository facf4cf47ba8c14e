/**
 * The checks of a batch's input.
 *
 * @module
 */
import { describeValue, ToolpoolError } from "../errors.js";

/** The checked options, as a caller may have passed them. */
interface BatchInputOptions {
  emit?: unknown;
  signal?: unknown;
  sessionKey?: unknown;
  maxConcurrency?: unknown;
}

/** Throws `TP_ERR_INVALID_BATCH`, naming what was wrong, for a bad assistant message or option. */
export function checkBatchInput(assistantMessage: unknown, options: BatchInputOptions): void {
  const content = (assistantMessage as { content?: unknown } | null)?.content;
  if (typeof assistantMessage !== "object" || assistantMessage === null || !Array.isArray(content)) {
    throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected an assistant message with a \`content\` array, got ${describeValue(assistantMessage)}`);
  }
  for (let index = 0; index < content.length; index++) {
    const block: unknown = content[index];
    if (typeof block !== "object" || block === null) {
      throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected \`content[${index}]\` to be a content block, got ${describeValue(block)}`);
    }
    const call = block as { type?: unknown; id?: unknown; name?: unknown };
    if (call.type === "toolCall" && (typeof call.id !== "string" || typeof call.name !== "string")) {
      throw new ToolpoolError(
        "TP_ERR_INVALID_BATCH",
        `Expected tool call \`content[${index}]\` to have string \`id\` and \`name\`, got ${describeValue(block)}`,
      );
    }
  }
  if (typeof options !== "object" || options === null) {
    throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected executeToolCalls options to be an object, got ${describeValue(options)}`);
  }
  if (options.emit !== undefined && typeof options.emit !== "function") {
    throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected \`emit\` to be a function, got ${describeValue(options.emit)}`);
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected \`signal\` to be an AbortSignal, got ${describeValue(options.signal)}`);
  }
  const { sessionKey } = options;
  if (sessionKey !== undefined && !(typeof sessionKey === "string" && sessionKey.length > 0 && sessionKey.length <= 256)) {
    throw new ToolpoolError(
      "TP_ERR_INVALID_BATCH",
      `Expected \`sessionKey\` to be a non-empty string of at most 256 characters, got ${describeValue(sessionKey)}`,
    );
  }
  const { maxConcurrency } = options;
  if (maxConcurrency !== undefined && !(Number.isInteger(maxConcurrency) && (maxConcurrency as number) >= 1)) {
    throw new ToolpoolError("TP_ERR_INVALID_BATCH", `Expected \`maxConcurrency\` to be an integer >= 1, got ${describeValue(maxConcurrency)}`);
  }
}
