import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { builtinTools, ToolpoolError } from "toolpool";
import {
  createDiffTool,
  DIFF_MAX_EDIT_LENGTH,
  createGrepTool,
  createHashTool,
  createPatchTool,
  readRegularFile,
  resolveInWorkspace,
  workspaceFromModuleUrl,
  type WorkerToolContext,
} from "./support/built.js";

const ctx = <D>(): WorkerToolContext<D> => ({ toolCallId: "t1", signal: new AbortController().signal, onUpdate: () => {} });

let base: string;
let root: string;
let outside: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-workspace-")));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(join(outside, "secret.txt"), "secret\n");
  symlinkSync(join(outside, "secret.txt"), join(root, "leak.txt"));
  symlinkSync(outside, join(root, "leak-dir"));
  symlinkSync("/dev/zero", join(root, "zero"));
  symlinkSync(join(root, "a.txt"), join(root, "sub", "inner-link.txt"));
  execFileSync("mkfifo", [join(root, "fifo")]);
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe("resolveInWorkspace", () => {
  const ws = () => ({ realRoot: root, allowWrite: false });

  it("resolves relative and absolute paths inside the root to real paths", () => {
    expect(resolveInWorkspace(ws(), "t", "path", "a.txt")).toBe(join(root, "a.txt"));
    expect(resolveInWorkspace(ws(), "t", "path", join(root, "sub", "..", "a.txt"))).toBe(join(root, "a.txt"));
    expect(resolveInWorkspace(ws(), "t", "path", "sub/inner-link.txt")).toBe(join(root, "a.txt"));
    expect(resolveInWorkspace(ws(), "t", "path", ".")).toBe(root);
  });

  it("refuses absolute paths, .. and symlinks that leave the root, without saying whether they exist", () => {
    for (const path of ["/etc/passwd", "../outside/secret.txt", "leak.txt", "leak-dir/secret.txt", "zero", "/nonexistent-x"]) {
      expect(() => resolveInWorkspace(ws(), "t", "path", path)).toThrow(/is outside the workspace root/);
    }
    expect(() => resolveInWorkspace(ws(), "t", "path", "missing.txt")).toThrow("t: path not found: missing.txt");
  });

  it("counts absolute paths written through the root as given (a symlink) as inside", () => {
    const linked = join(base, "linked-root");
    symlinkSync(root, linked);
    const [hash] = builtinTools(["hash"], { root: linked });
    const workspace = workspaceFromModuleUrl(hash!.moduleUrl);
    expect(workspace).toEqual({ realRoot: root, root: linked, allowWrite: false });
    expect(resolveInWorkspace(workspace, "t", "path", join(linked, "a.txt"))).toBe(join(root, "a.txt"));
    expect(() => resolveInWorkspace({ realRoot: root, allowWrite: false }, "t", "path", join(linked, "a.txt"))).toThrow(/outside/);
    expect(() => resolveInWorkspace(workspace, "t", "path", join(linked, "leak.txt"))).toThrow(/outside/);
  });

  it("reads the workspace from a module URL, defaulting to the working directory without writes", () => {
    expect(workspaceFromModuleUrl("file:///x/hash.js?root=%2Fsrv%2Fws&allowWrite=1")).toEqual({ realRoot: "/srv/ws", allowWrite: true });
    expect(workspaceFromModuleUrl("file:///x/hash.js")).toEqual({ realRoot: realpathSync(process.cwd()), allowWrite: false });
  });
});

describe("readRegularFile", () => {
  it("refuses a FIFO at once instead of blocking in open()", () => {
    expect(() => readRegularFile(join(root, "fifo"), "fifo", 1024)).toThrow("fifo is not a regular file (a FIFO)");
  });

  it("refuses devices and caps what it reads by the bytes read, not by stat sizes", () => {
    expect(() => readRegularFile("/dev/zero", "zero", 1024)).toThrow("zero is not a regular file (a character device)");
    // /proc files say size 0 and hold more.
    expect(() => readRegularFile(realpathSync("/proc/self/maps"), "maps", 16)).toThrow("maps holds more than the 16-byte limit");
    expect(readRegularFile(join(root, "a.txt"), "a", 14).toString()).toBe("one\ntwo\nthree\n");
    expect(() => readRegularFile(join(root, "a.txt"), "a", 13)).toThrow("a is 14 bytes, over the 13-byte limit");
  });
});

describe("a folder swapped for a link after the path was resolved", () => {
  it("is caught when the file is opened: nothing outside the root is read", () => {
    // As if resolveInWorkspace had resolved root/swapped/secret.txt while
    // `swapped` was a real folder, and it became a link before the open.
    const swapped = join(root, "swapped");
    symlinkSync(outside, swapped);
    try {
      expect(() => readRegularFile(join(swapped, "secret.txt"), "hash: swapped/secret.txt", 1_000)).toThrow(/changed while it was opened/);
      expect(readRegularFile(join(root, "a.txt"), "a.txt", 1_000).toString("utf8")).toBe("one\ntwo\nthree\n");
    } finally {
      rmSync(swapped);
    }
  });
});

describe("built-in tools in a workspace", () => {
  const ws = (allowWrite = false) => ({ realRoot: root, allowWrite });

  it("end every special-file call with an error", async () => {
    const hash = createHashTool(ws());
    const grep = createGrepTool(ws());
    const diff = createDiffTool(ws());
    const patch = createPatchTool(ws());
    const p = "@@ -1 +1 @@\n-a\n+b\n";
    await expect(hash({ path: "fifo" }, ctx())).rejects.toThrow("hash: fifo is not a regular file (a FIFO)");
    await expect(grep({ pattern: "x", path: "fifo" }, ctx())).rejects.toThrow("grep: path fifo is not a regular file (a FIFO)");
    await expect(diff({ oldPath: "fifo", newText: "" }, ctx())).rejects.toThrow("diff: oldPath fifo is not a regular file (a FIFO)");
    await expect(patch({ patch: p, path: "fifo" }, ctx())).rejects.toThrow("patch: fifo is not a regular file (a FIFO)");
    await expect(hash({ path: "zero" }, ctx())).rejects.toThrow(/outside the workspace root/);
    await expect(grep({ pattern: "secret", path: "/" }, ctx())).rejects.toThrow(/outside the workspace root/);
    await expect(diff({ oldPath: "leak.txt", newText: "" }, ctx())).rejects.toThrow(/outside the workspace root/);
  });

  it("skips FIFOs and links while walking a directory", async () => {
    const result = await createGrepTool(ws())({ pattern: "secret|one" }, ctx());
    expect(result.content[0]).toEqual({ type: "text", text: "a.txt:1: one" });
  });

  it("writes only when allowed, through a temporary file renamed into place", async () => {
    const dir = join(root, "w");
    mkdirSync(dir);
    writeFileSync(join(dir, "f.txt"), "a\n");
    const p = "@@ -1 +1 @@\n-a\n+b\n";
    await expect(createPatchTool(ws(false))({ patch: p, path: "w/f.txt", write: true }, ctx())).rejects.toThrow(/writing files is not allowed here/);
    expect(readFileSync(join(dir, "f.txt"), "utf8")).toBe("a\n");
    await expect(createPatchTool(ws(true))({ patch: p, path: "leak.txt", write: true }, ctx())).rejects.toThrow(/outside/);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret\n");
    const written = await createPatchTool(ws(true))({ patch: p, path: "w/f.txt", write: true }, ctx());
    expect(written.details.written).toBe(true);
    expect(readFileSync(join(dir, "f.txt"), "utf8")).toBe("b\n");
    expect(readdirSync(dir)).toEqual(["f.txt"]);
  });

  it("diff gives up, saying so, when the sides differ by more than its edit bound", async () => {
    const lines = DIFF_MAX_EDIT_LENGTH / 2 + 10;
    const oldText = Array.from({ length: lines }, (_, i) => `old ${i}`).join("\n");
    const newText = Array.from({ length: lines }, (_, i) => `new ${i}`).join("\n");
    await expect(createDiffTool(ws())({ oldText, newText }, ctx())).rejects.toThrow(/^diff: gave up: the inputs differ by more than/);
  }, 60_000);

  it("patch names the first failing hunk of thousands without trying every prefix", async () => {
    const count = 4000;
    const text = Array.from({ length: count * 4 }, (_, i) => `line ${i}`).join("\n");
    const hunks = Array.from({ length: count }, (_, k) => {
      const at = k * 4 + 2;
      const removed = k === 2500 ? "no such line" : `line ${at - 1}`;
      return `@@ -${at},1 +${at},1 @@\n-${removed}\n+changed ${k}\n`;
    }).join("");
    await expect(createPatchTool(ws())({ patch: hunks, text }, ctx())).rejects.toThrow(/^patch: hunk 2501 of 4000 /);
  });
});

describe("builtinTools options", () => {
  it("puts the real root and the write permission in each module URL, and a 30 s default time limit", () => {
    const tools = builtinTools({ root: join(root, "sub", ".."), allowWrite: true });
    expect(tools.map((tool) => tool.name)).toEqual(["grep", "hash", "diff", "patch"]);
    for (const tool of tools) {
      expect(tool.timeoutMs).toBe(30_000);
      expect(workspaceFromModuleUrl(tool.moduleUrl)).toEqual({ realRoot: root, allowWrite: true });
    }
    const [grep] = builtinTools(["grep"], { timeoutMs: 5000 });
    expect(grep!.timeoutMs).toBe(5000);
    expect(workspaceFromModuleUrl(grep!.moduleUrl)).toEqual({ realRoot: realpathSync(process.cwd()), allowWrite: false });
  });

  it("throws TP_ERR_INVALID_OPTION for a missing root, a bad option or an unknown name", () => {
    const codeOf = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (error) {
        return error instanceof ToolpoolError ? `${error.code}: ${error.message}` : String(error);
      }
      return undefined;
    };
    expect(codeOf(() => builtinTools({ root: join(base, "none") }))).toMatch(/^TP_ERR_INVALID_OPTION: Expected `root` to be an existing directory/);
    expect(codeOf(() => builtinTools({ root: join(root, "a.txt") }))).toMatch(/^TP_ERR_INVALID_OPTION: Expected `root`/);
    expect(codeOf(() => builtinTools({ timeoutMs: 0 }))).toBe("TP_ERR_INVALID_OPTION: Expected `timeoutMs` to be a number >= 1, got `0` (number)");
    expect(codeOf(() => builtinTools({ allowWrite: "yes" as unknown as boolean }))).toMatch(
      /^TP_ERR_INVALID_OPTION: Expected `allowWrite` to be a boolean/,
    );
    expect(codeOf(() => builtinTools(["cat" as "grep"]))).toMatch(/^TP_ERR_INVALID_OPTION: Expected `names`/);
    expect(existsSync(root)).toBe(true);
  });
});
