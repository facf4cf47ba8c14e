import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { codingTools, createRuntime, supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/coding-tools-pi-session.test.ts");

const workspace = join(tmpdir(), `toolpool-pi-session-${process.pid}`);
mkdirSync(workspace, { recursive: true });
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's parameter expansions
const command = 'echo "${PI_SESSION_ID-unset}|${PI_SESSION_FILE-unset}|${PI_PROVIDER-unset}|${PI_MODEL-unset}|${PI_REASONING_LEVEL-unset}"';
const message = {
  role: "assistant" as const,
  content: [{ type: "toolCall" as const, id: "call-1", name: "bash", arguments: { command } }],
  stopReason: "toolUse" as const,
};

describe.skipIf(!supportsPi16())("codingTools piSession (pi 1.6)", () => {
  it("tells bash's command the session of its call, as pi's bash does, and nothing without one", async () => {
    const sessions: Record<string, { id: string; file?: string; model?: { provider: string; id: string }; thinkingLevel?: string }> = {
      alice: { id: "session-a", file: "/sessions/a.jsonl", model: { provider: "scripted", id: "script" }, thinkingLevel: "high" },
      bob: { id: "session-b" },
    };
    const runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace, tools: ["bash"], piSession: (sessionKey) => (sessionKey === undefined ? undefined : sessions[sessionKey]) }),
    });
    try {
      const textFor = async (sessionKey?: string) => {
        const { messages } = await runtime.executeToolCalls(message, sessionKey === undefined ? {} : { sessionKey });
        return (messages[0]!.content[0] as { text: string }).text.trim();
      };
      expect(await textFor("alice")).toBe("session-a|/sessions/a.jsonl|scripted|script|high");
      expect(await textFor("bob")).toBe("session-b|unset|unset|unset|unset");
      expect(await textFor()).toBe("unset|unset|unset|unset|unset");
    } finally {
      await runtime.close();
    }
  });

  it("refuses a piSession that is not a function", () => {
    expect(() => codingTools({ workspace, piSession: "alice" as never })).toThrow(
      expect.objectContaining({ code: "TP_ERR_INVALID_OPTION", message: expect.stringContaining("`piSession`") }),
    );
  });
});
