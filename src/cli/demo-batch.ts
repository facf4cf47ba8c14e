/** The batch `toolpool demo` runs: real calls of every built-in tool over the repository, and one that fails on purpose. */
import { existsSync } from "node:fs";
import { join, relative } from "node:path";

import type { AssistantMessage, ToolCall } from "../index.js";

const DEMO_MISSING_TOOL = "summon_dragon";

const GREETING = "Hello,\nworld\n!\n";
const GREETING_PATCH = ["--- greeting.txt", "+++ greeting.txt", "@@ -1,3 +1,3 @@", " Hello,", "-world", "+toolpool", " !", ""].join("\n");

/**
 * Paths are relative to `cwd` (the threads share the process's), so results read as a person types them. An installed
 * package has only `dist/` and the manifest, so each call falls back to files that are there.
 */
export function createDemoBatch(root: string, cwd: string = process.cwd()): AssistantMessage {
  const at = (...segments: string[]): string => relative(cwd, join(root, ...segments)) || ".";
  const has = (...segments: string[]): boolean => existsSync(join(root, ...segments));
  const sourceDir = has("src") ? "src" : "dist";
  const secondHashed = has("README.md") ? "README.md" : has("package-lock.json") ? "package-lock.json" : "package.json";
  const diffFiles =
    has("tsconfig.json") && has("tsconfig.build.json")
      ? ["tsconfig.json", "tsconfig.build.json"]
      : [join("dist", "index.d.ts"), join("dist", "runtime.d.ts")];

  const calls: Omit<ToolCall, "type" | "id">[] = [
    { name: "grep", arguments: { pattern: "executeToolCalls", path: at(sourceDir), maxResults: 20 } },
    { name: "grep", arguments: { pattern: "TODO", path: at(), glob: "*.ts", maxResults: 20 } },
    { name: "hash", arguments: { path: at("package.json"), algorithm: "sha256" } },
    { name: "hash", arguments: { path: at(secondHashed), algorithm: "md5" } },
    { name: "diff", arguments: { oldPath: at(diffFiles[0]!), newPath: at(diffFiles[1]!) } },
    { name: "patch", arguments: { text: GREETING, patch: GREETING_PATCH } },
    { name: "hash", arguments: { text: GREETING } },
    { name: DEMO_MISSING_TOOL, arguments: { target: "the repository" } },
  ];
  return {
    role: "assistant",
    content: [
      { type: "text", text: "Let me look around the toolpool repository." },
      ...calls.map((call, index): ToolCall => ({ type: "toolCall", id: `demo_${index + 1}`, ...call })),
    ],
  };
}

export function describeDemo(batch: AssistantMessage, root: string, threads: number | undefined): string {
  const calls = batch.content.filter((block) => block.type === "toolCall").length;
  const pool = threads === undefined ? "one worker thread per CPU" : `${threads} worker thread${threads === 1 ? "" : "s"}`;
  return (
    `toolpool demo: ${calls} built-in tool calls (grep, hash, diff, patch, and one unknown tool that fails on purpose) ` +
    `in parallel over ${root}, on ${pool}`
  );
}
