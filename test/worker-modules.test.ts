import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect } from "vitest";

import { ToolpoolError, workerTool } from "toolpool";

import { runCli } from "./support/cli.js";
import { open, runtimeTest } from "./support/runtimes.js";

const it = runtimeTest();

const esm = 'export async function execute() { return { content: [{ type: "text", text: "loaded" }] }; }\n';
const commonJs = 'exports.execute = async () => ({ content: [{ type: "text", text: "loaded" }] });\n';

let folder: string;

/** A project folder with package.json `packageJson` (none when undefined) and the files `files`. */
function project(name: string, packageJson: object | undefined, files: Record<string, string>): string {
  const dir = join(folder, name);
  mkdirSync(dir, { recursive: true });
  if (packageJson !== undefined) writeFileSync(join(dir, "package.json"), JSON.stringify(packageJson));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

function toolAt(module: string) {
  return workerTool({ name: "word_count", description: "counts", parameters: { type: "object", properties: {} }, module });
}

async function callOnce(module: string): Promise<{ text: string; isError: boolean }> {
  const runtime = open({ tools: [toolAt(module)], pool: { maxThreads: 1 } });
  const { messages } = await runtime.executeToolCalls({
    role: "assistant",
    content: [{ type: "toolCall", id: "1", name: "word_count", arguments: {} }],
  });
  const [first] = messages[0]!.content as { text: string }[];
  return { text: first!.text, isError: messages[0]!.isError };
}

function refusal(module: string): ToolpoolError {
  try {
    open({ tools: [toolAt(module)], pool: { maxThreads: 1 } });
  } catch (error) {
    return error as ToolpoolError;
  }
  throw new Error(`createRuntime accepted ${module}`);
}

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), "toolpool-worker-modules-"));
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("worker modules, checked when the runtime is created", () => {
  it('refuses ES module syntax in a .js file of a project npm init made ("type": "commonjs"), naming the tool, the file and the fix', () => {
    const dir = project("commonjs", { name: "x", version: "1.0.0", type: "commonjs" }, { "word-count.js": esm });
    const error = refusal(join(dir, "word-count.js"));
    expect(error).toBeInstanceOf(ToolpoolError);
    expect(error.code).toBe("TP_ERR_INVALID_TOOL");
    expect(error.message).toBe(
      `Tool "word_count": its module ${join(dir, "word-count.js")} is written as an ES module (import/export) but Node loads it as CommonJS (${join(dir, "package.json")} has "type": "commonjs"); worker modules are ES modules: name the file .mjs, or set "type": "module" in ${join(dir, "package.json")}`,
    );
  });

  it("refuses ES module syntax in a .cjs file, and a static import as well as an export", () => {
    const dir = project("cjs-file", undefined, { "tool.cjs": 'import { readFile } from "node:fs/promises";\nmodule.exports = {};\n' });
    expect(refusal(join(dir, "tool.cjs")).message).toContain("Node loads it as CommonJS (a .cjs file); worker modules are ES modules");
  });

  it("refuses a module that does not exist, or a folder", () => {
    const dir = project("missing", { type: "module" }, {});
    expect(refusal(join(dir, "nope.mjs")).message).toBe(`Tool "word_count": its module ${join(dir, "nope.mjs")} does not exist`);
    mkdirSync(join(dir, "folder.mjs"));
    expect(refusal(join(dir, "folder.mjs")).message).toBe(`Tool "word_count": its module ${join(dir, "folder.mjs")} is not a file`);
  });

  it.each([
    ["an .mjs file in a CommonJS project", { type: "commonjs" }, "tool.mjs", esm],
    ['a .js file under "type": "module"', { type: "module" }, "tool.js", esm],
    ["a .js file under no type (Node detects the syntax)", { name: "untyped" }, "tool.js", esm],
    ["a CommonJS module in a CommonJS project", { type: "commonjs" }, "tool.js", commonJs],
  ])("runs %s", async (_, packageJson, file, text) => {
    const dir = project(`ok-${file}-${JSON.stringify(packageJson).length}-${text.length}`, packageJson, { [file]: text });
    await expect(callOnce(join(dir, file))).resolves.toEqual({ text: "loaded", isError: false });
  });

  it("a module that became CommonJS after the start fails its calls with the same fix in the error", async () => {
    const dir = project("changed", { type: "module" }, { "tool.js": esm });
    const runtime = open({ tools: [toolAt(join(dir, "tool.js"))], pool: { maxThreads: 1 } });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "commonjs" }));
    const { messages } = await runtime.executeToolCalls({
      role: "assistant",
      content: [{ type: "toolCall", id: "1", name: "word_count", arguments: {} }],
    });
    expect(messages[0]!.isError).toBe(true);
    expect((messages[0]!.details as { code?: string }).code).toBe("TP_ERR_TOOL_LOAD");
    expect((messages[0]!.content as { text: string }[])[0]!.text).toContain(
      `(worker modules are ES modules: name the file .mjs, or set "type": "module" in the package.json that governs it)`,
    );
  });

  it("CLI: a --tools module naming a missing worker module fails at start, on one line, as a usage error (exit 2)", async () => {
    const dir = project("cli", { type: "module" }, {});
    const toolUrl = new URL("../dist/index.js", import.meta.url).href;
    writeFileSync(
      join(dir, "tools.mjs"),
      `import { workerTool } from ${JSON.stringify(toolUrl)};\nexport default [workerTool({ name: "word_count", description: "d", parameters: { type: "object", properties: {} }, module: new URL("./gone.mjs", import.meta.url) })];\n`,
    );
    writeFileSync(
      join(dir, "batch.json"),
      JSON.stringify({ role: "assistant", content: [{ type: "toolCall", id: "1", name: "word_count", arguments: {} }] }),
    );
    const failed = await runCli(["run", "--tools", "tools.mjs", "batch.json"], { cwd: dir });
    expect(failed.code).toBe(2);
    expect(failed.stderr.trim()).toBe(`toolpool: Tool "word_count": its module ${join(dir, "gone.mjs")} does not exist`);
  }, 60_000);
});
