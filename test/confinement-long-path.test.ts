import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const base = join(tmpdir(), `toolpool-confine-long-${process.pid}`);
const workspace = join(base, "workspace");
const outside = join(base, "outside");

// Links whose targets are short, but whose real path inside the workspace grows past PATH_MAX (4096):
// lstat of the walked path fails with ENAMETOOLONG, while the kernel, following the links one by one, reaches `esc`.
beforeAll(() => {
  mkdirSync(workspace, { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, "secret.txt"), "TOP SECRET\n");
  const chunk = Array(9).fill("a".repeat(250)).join("/");
  const start = process.cwd();
  try {
    process.chdir(workspace);
    mkdirSync(chunk, { recursive: true });
    symlinkSync(chunk, "l1");
    process.chdir(chunk);
    mkdirSync(chunk, { recursive: true });
    symlinkSync(chunk, "l2");
    process.chdir(chunk);
    symlinkSync(outside, "esc");
  } finally {
    process.chdir(start);
  }
});
afterAll(() => execFileSync("rm", ["-rf", base]));

describe.skipIf(!supportsPi16())("confine with a real path longer than PATH_MAX (pi 1.6)", () => {
  let runtime: Runtime;
  beforeAll(() => {
    runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, confine: true, tools: ["read", "ls", "grep"] }), pool: { maxThreads: 1 } });
  });
  afterAll(() => runtime.close());

  it("refuses read, ls and grep through a link outside that lies past PATH_MAX (pi 1.6)", async () => {
    for (const [name, args] of [
      ["read", { path: "l1/l2/esc/secret.txt" }],
      ["ls", { path: "l1/l2/esc" }],
      ["grep", { pattern: "TOP", path: "l1/l2/esc" }],
    ] as const) {
      const outcome = await runtime.runToolCall({ type: "toolCall", id: `c-${name}`, name, arguments: args });
      const text = (outcome.result.content[0] as { text: string }).text;
      expect(outcome.isError, name).toBe(true);
      // confine's refusal, naming the path as given, and nothing of what lies outside.
      expect(text, name).toMatch(new RegExp(`^Path "${args.path}" could not be checked against the workspace .*: ENAMETOOLONG`));
      expect(text, name).not.toContain("TOP SECRET");
    }
  });
});
