import { mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/pi-extension-calls.test.ts");

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PI_CLI = join(ROOT, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js");
const base = join(tmpdir(), `toolpool-pi-extension-calls-${process.pid}`);
afterAll(() => rmSync(base, { recursive: true, force: true }));

type Execute = (
  toolCallId: string,
  params: unknown,
  signal?: AbortSignal,
  onUpdate?: unknown,
  ctx?: unknown,
) => Promise<{ content: { text?: string }[] }>;

/** The extension, loaded with a stand-in for pi's API as pi's CLI would (pi's entry script is how it finds its pi); its tools and handlers. */
async function loadExtension(): Promise<{ tools: Map<string, { execute: Execute }>; shutdown: () => Promise<void> }> {
  const tools = new Map<string, { execute: Execute }>();
  const handlers = new Map<string, (event: unknown, ctx: unknown) => unknown>();
  const api = {
    registerFlag: () => {},
    getFlag: () => undefined,
    getSettings: () => ({ toolpool: { threads: 2, ioThreads: 2 } }),
    registerTool: (tool: { name: string; execute: Execute }) => tools.set(tool.name, tool),
    registerCommand: () => {},
    on: (event: string, handler: (event: unknown, ctx: unknown) => unknown) => handlers.set(event, handler),
    getAllTools: () => [],
    getActiveTools: () => [],
  };
  const entryScript = process.argv[1];
  process.argv[1] = PI_CLI;
  try {
    const { default: extension } = (await import("../dist/pi-extension/extension.js")) as { default: (pi: unknown) => Promise<void> };
    await extension(api);
  } finally {
    process.argv[1] = entryScript!;
  }
  return { tools, shutdown: async () => void (await handlers.get("session_shutdown")?.({}, {})) };
}

/** pi's context of a call, the parts the extension reads. */
function piContext(cwd: string, sessionId: string, model: string) {
  return {
    cwd,
    sessionManager: { getSessionId: () => sessionId, getSessionFile: () => undefined },
    model: { provider: "scripted", id: model },
    thinkingLevel: "low",
  };
}

const textOf = (result: { content: { text?: string }[] }) => result.content.map((part) => part.text ?? "").join("");

describe.skipIf(!supportsPi16())("the pi extension's calls (pi 1.6)", () => {
  it("run each in its own call's folder and for its own call's session, interleaved", async () => {
    const [a, b] = ["a", "b"].map((name) => {
      const folder = join(base, name);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, "whose.txt"), `folder ${name}\n`);
      return realpathSync(folder);
    }) as [string, string];
    const flag = join(base, "b-ran");
    const { tools, shutdown } = await loadExtension();
    try {
      const bash = tools.get("bash")!.execute;
      const read = tools.get("read")!.execute;
      const report = 'pwd; echo "$PI_SESSION_ID/$PI_MODEL"; cat whose.txt';
      // A's command waits (at most 30 s) until B's has run, so B's call starts and ends while A's runs.
      const first = bash(
        "call-a",
        { command: `for i in $(seq 600); do [ -e '${flag}' ] && break; sleep 0.05; done; ${report}` },
        undefined,
        undefined,
        piContext(a, "session-a", "model-a"),
      );
      const second = bash("call-b", { command: `${report}; touch '${flag}'` }, undefined, undefined, piContext(b, "session-b", "model-b"));
      const readB = read("read-b", { path: "whose.txt" }, undefined, undefined, piContext(b, "session-b", "model-b"));
      const readA = read("read-a", { path: "whose.txt" }, undefined, undefined, piContext(a, "session-a", "model-a"));
      expect(textOf(await second)).toBe(`${b}\nsession-b/model-b\nfolder b\n`);
      expect(textOf(await first)).toBe(`${a}\nsession-a/model-a\nfolder a\n`);
      expect(textOf(await readB)).toBe("folder b\n");
      expect(textOf(await readA)).toBe("folder a\n");
      // A call that comes without pi's context runs in pi's own folder, for no session: never in another call's.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's parameter expansion
      const bare = await bash("call-bare", { command: 'pwd; echo "session:${PI_SESSION_ID-none}"' });
      expect(textOf(bare)).toBe(`${process.cwd()}\nsession:none\n`);
    } finally {
      await shutdown();
    }
  }, 120_000);
});
