import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { builtinTools, supportsPi16 } from "toolpool";

// The built module, as the CLI runs it: a built-in is known by its module's URL in dist/.
import { rebaseBuiltinTool } from "./support/built.js";
import { runCli } from "./support/cli.js";

const entry = new URL("../dist/index.js", import.meta.url).href;

let folder: string;
let root: string;
let elsewhere: string;

beforeAll(() => {
  folder = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-workspace-flags-")));
  root = join(folder, "root");
  elsewhere = join(folder, "elsewhere");
  mkdirSync(root);
  mkdirSync(elsewhere);
  writeFileSync(join(root, "inside.txt"), "needle in the root\n");
  writeFileSync(join(elsewhere, "outside.txt"), "needle elsewhere\n");
  writeFileSync(join(folder, "package.json"), '{ "type": "module" }\n');
  // A module as the docs show them: the built-ins beside a tool of its own.
  writeFileSync(
    join(folder, "with-builtins.mjs"),
    `import { builtinTools, workerTool } from ${JSON.stringify(entry)};
export default [...builtinTools(["grep", "hash"]), workerTool({ name: "own", description: "own", parameters: { type: "object", properties: {} }, module: new URL("./own.mjs", import.meta.url) })];
`,
  );
  writeFileSync(join(folder, "own.mjs"), 'export async function execute() { return { content: [{ type: "text", text: "own" }] }; }\n');
  writeFileSync(
    join(folder, "without-builtins.mjs"),
    `import { workerTool } from ${JSON.stringify(entry)};
export default [workerTool({ name: "own", description: "own", parameters: { type: "object", properties: {} }, module: new URL("./own.mjs", import.meta.url) })];
`,
  );
  writeFileSync(
    join(folder, "grep.json"),
    JSON.stringify({ role: "assistant", content: [{ type: "toolCall", id: "1", name: "grep", arguments: { pattern: "needle" } }] }),
  );
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The CLI's `run` from `cwd`, as JSON lines (`--ndjson`); the batch_end line's messages. */
async function grepFrom(cwd: string, flags: string[]): Promise<string> {
  const { code, stdout, stderr } = await runCli(["run", "--threads", "1", "--ndjson", ...flags, join(folder, "grep.json")], { cwd });
  expect(code, stderr).toBe(0);
  const end = stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { type: string; messages?: { content: { text: string }[] }[] })
    .find((event) => event.type === "batch_end");
  return end!.messages![0]!.content[0]!.text;
}

describe("--root and --allow-write with --tools modules", () => {
  it("applies --root to the built-ins a --tools module holds", async () => {
    // Without --root the module's grep searches where the CLI runs; with it, the root.
    expect(await grepFrom(elsewhere, ["--tools", join(folder, "with-builtins.mjs")])).toContain("outside.txt:1: needle elsewhere");
    const inRoot = await grepFrom(elsewhere, ["--tools", join(folder, "with-builtins.mjs"), "--root", root]);
    expect(inRoot).toContain("inside.txt:1: needle in the root");
    expect(inRoot).not.toContain("outside.txt");
  }, 90_000);

  it.runIf(supportsPi16())(
    "applies --root to those built-ins beside --coding-tools too (pi 1.6)",
    async () => {
      const inRoot = await grepFrom(elsewhere, ["--coding-tools", "ls", "--tools", join(folder, "with-builtins.mjs"), "--root", root]);
      expect(inRoot).toContain("inside.txt:1: needle in the root");
      expect(inRoot).not.toContain("outside.txt");
    },
    90_000,
  );

  it.each([
    ["--root", ["--root", root], "--root applies to the built-in tools"],
    ["--allow-write", ["--allow-write"], "--allow-write applies to the built-in tools"],
  ])(
    "refuses %s with modules that hold no built-in, as a usage error (exit 2)",
    async (_, flags, message) => {
      const failed = await runCli(["run", "--tools", join(folder, "without-builtins.mjs"), ...flags, join(folder, "grep.json")], { cwd: folder });
      expect(failed.code).toBe(2);
      expect(failed.stderr.trim()).toBe(
        `toolpool: ${message}, and the --tools modules hold none (a module's own tools take their workspace from the module)`,
      );
    },
    90_000,
  );

  it("rebaseBuiltinTool: a built-in in another workspace, its other settings kept; any other tool, undefined", () => {
    const [grep] = builtinTools(["grep"], { root: elsewhere, timeoutMs: 1234 });
    const rebased = rebaseBuiltinTool(grep, { root });
    expect(rebased?.name).toBe("grep");
    expect(new URL(rebased!.moduleUrl).searchParams.get("root")).toBe(root);
    expect(new URL(rebased!.moduleUrl).searchParams.get("allowWrite")).toBe("0");
    expect(rebased?.timeoutMs).toBe(1234);
    const writable = rebaseBuiltinTool(rebased, { allowWrite: true });
    expect(new URL(writable!.moduleUrl).searchParams.get("root")).toBe(root);
    expect(new URL(writable!.moduleUrl).searchParams.get("allowWrite")).toBe("1");
    expect(rebaseBuiltinTool({ ...grep!, name: "search" }, { root })).toBeUndefined();
    expect(rebaseBuiltinTool({ name: "inline", execute: async () => ({ content: [] }) }, { root })).toBeUndefined();
  });
});
