import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyPatch } from "diff";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type AgentToolResult,
  type WorkerToolContext,
  createDiffTool,
  diffSpec,
  createGrepTool,
  createProgressThrottle,
  globToRegExp,
  grepSpec,
  prefilterStats,
  createHashTool,
  hashSpec,
  createPatchTool,
  patchSpec,
} from "./support/internals.js";
import { textOf } from "./support/helpers.js";

interface FakeCtx<D> extends WorkerToolContext<D> {
  updates: AgentToolResult<D>[];
}

function makeCtx<D>(signal: AbortSignal = new AbortController().signal): FakeCtx<D> {
  const updates: AgentToolResult<D>[] = [];
  return { toolCallId: "t1", signal, onUpdate: (p) => updates.push(p), updates };
}

function abortedCtx<D>(): FakeCtx<D> {
  const controller = new AbortController();
  controller.abort();
  return makeCtx<D>(controller.signal);
}

/** A signal that turns aborted after `checks` reads of `aborted`: aborts mid-run without timers. */
function signalAbortingAfter(checks: number): AbortSignal {
  const controller = new AbortController();
  let reads = 0;
  const tick = (): void => {
    if (++reads > checks && !controller.signal.aborted) controller.abort();
  };
  return {
    get aborted() {
      tick();
      return controller.signal.aborted;
    },
    throwIfAborted() {
      tick();
      controller.signal.throwIfAborted();
    },
  } as unknown as AbortSignal;
}

let root: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-tools-")));
});

/** The tools confined to the test's temporary root, with writes allowed. */
const workspace = () => ({ realRoot: root, allowWrite: true });
const diff: ReturnType<typeof createDiffTool> = (args, ctx) => createDiffTool(workspace())(args, ctx);
const grep: ReturnType<typeof createGrepTool> = (args, ctx) => createGrepTool(workspace())(args, ctx);
const hash: ReturnType<typeof createHashTool> = (args, ctx) => createHashTool(workspace())(args, ctx);
const patch: ReturnType<typeof createPatchTool> = (args, ctx) => createPatchTool(workspace())(args, ctx);

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function fixture(name: string, files: Record<string, string | Buffer>): string {
  const dir = join(root, name);
  for (const [rel, content] of Object.entries(files)) {
    const abs = join(dir, rel);
    mkdirSync(join(abs, ".."), { recursive: true });
    writeFileSync(abs, content);
  }
  return dir;
}

describe("tool specs", () => {
  it("are JSON-schema objects with matching names", () => {
    for (const [spec, name] of [
      [grepSpec, "grep"],
      [hashSpec, "hash"],
      [diffSpec, "diff"],
      [patchSpec, "patch"],
    ] as const) {
      expect(spec.name).toBe(name);
      expect(spec.parameters.type).toBe("object");
      expect(spec.parameters.additionalProperties).toBe(false);
      expect(spec.description.length).toBeGreaterThan(20);
    }
  });
});

describe("grep", () => {
  let tree: string;
  beforeAll(() => {
    tree = fixture("grep-tree", {
      ".gitignore": "*.log\nbuild/\n",
      "a.ts": "const needle = 1;\nno match here\n  needle again\r\n",
      "b.md": "Needle in caps\n",
      "app.log": "needle in ignored log\n",
      "build/out.ts": "needle in ignored dir\n",
      "sub/.gitignore": "secret.txt\n!keep.log\n",
      "sub/c.ts": "x\ny\nneedle deep\n",
      "sub/secret.txt": "needle secret\n",
      "sub/keep.log": "needle kept by negation\n",
      "other/secret.txt": "needle not ignored here\n",
      "node_modules/pkg/index.js": "needle in node_modules\n",
      ".git/config": "needle in git\n",
      "bin.dat": Buffer.concat([Buffer.from("needle "), Buffer.from([0, 1, 2]), Buffer.from(" needle\n")]),
      "long.txt": `needle ${"x".repeat(400)}\n`,
    });
  });

  it("finds exact file:line: text lines, honoring nested .gitignore and skipping binary, .git and node_modules", async () => {
    const ctx = makeCtx();
    const result = await grep({ pattern: "needle", path: tree }, ctx);
    expect(textOf(result).split("\n")).toEqual([
      "a.ts:1: const needle = 1;",
      "a.ts:3:   needle again",
      `long.txt:1: ${`needle ${"x".repeat(400)}`.slice(0, 300)}…`,
      "other/secret.txt:1: needle not ignored here",
      "sub/c.ts:3: needle deep",
      "sub/keep.log:1: needle kept by negation",
    ]);
    expect(result.details).toEqual({ matches: 6, filesScanned: 8, truncated: false });
    expect(ctx.updates).toEqual([]);
  });

  it("applies flags and the glob filter", async () => {
    const result = await grep({ pattern: "^needle", path: tree, flags: "i", glob: "*.md" }, makeCtx());
    expect(textOf(result)).toBe("b.md:1: Needle in caps");
    const ts = await grep({ pattern: "needle", path: tree, glob: "?.ts" }, makeCtx());
    expect(textOf(ts).split("\n")).toEqual(["a.ts:1: const needle = 1;", "a.ts:3:   needle again", "sub/c.ts:3: needle deep"]);
  });

  it("truncates at maxResults and says so", async () => {
    const result = await grep({ pattern: "needle", path: tree, maxResults: 2 }, makeCtx());
    const lines = textOf(result).split("\n");
    expect(lines.slice(0, 2)).toEqual(["a.ts:1: const needle = 1;", "a.ts:3:   needle again"]);
    expect(lines[2]).toMatch(/^\[truncated: showing the first 2 matches/);
    expect(result.details.truncated).toBe(true);
    expect(result.details.matches).toBe(2);
  });

  it("reports no matches in text, not as an error", async () => {
    const result = await grep({ pattern: "zzz_nothing", path: tree }, makeCtx());
    expect(textOf(result)).toMatch(/^No matches/);
    expect(result.details.matches).toBe(0);
  });

  it("searches a single file given as path", async () => {
    const result = await grep({ pattern: "deep", path: join(tree, "sub", "c.ts") }, makeCtx());
    expect(textOf(result)).toBe("c.ts:3: needle deep");
  });

  it("throws on a bad pattern, bad maxResults and a missing path", async () => {
    await expect(grep({ pattern: "(", path: tree }, makeCtx())).rejects.toThrow(/^grep: invalid pattern/);
    await expect(grep({ pattern: "a", path: tree, maxResults: 0 }, makeCtx())).rejects.toThrow(/maxResults/);
    await expect(grep({ pattern: "a", path: join(tree, "missing") }, makeCtx())).rejects.toThrow(/grep: path not found/);
  });

  it("throws when the signal is already aborted", async () => {
    await expect(grep({ pattern: "needle", path: tree }, abortedCtx())).rejects.toThrow(/abort/i);
  });

  it("stops mid-walk when the signal is aborted during the run", async () => {
    await expect(grep({ pattern: "needle", path: tree }, makeCtx(signalAbortingAfter(5)))).rejects.toThrow(/abort/i);
  });

  it("sends throttled progress updates on a long run", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`f${String(i).padStart(2, "0")}.txt`] = `hit ${i}\n`;
    const dir = fixture("grep-many", files);
    // A fake clock that advances 50 ms per reading makes the run "long" without sleeping.
    let clock = 0;
    const spy = vi.spyOn(performance, "now").mockImplementation(() => (clock += 50));
    try {
      const ctx = makeCtx<{ matches: number; filesScanned: number; truncated: boolean }>();
      const result = await grep({ pattern: "hit", path: dir }, ctx);
      expect(result.details).toEqual({ matches: 30, filesScanned: 30, truncated: false });
      expect(ctx.updates.length).toBeGreaterThan(0);
      expect(ctx.updates.length).toBeLessThan(30);
      const first = ctx.updates[0]!;
      expect(textOf(first)).toMatch(/^grep: scanned \d+ files, \d+ matches so far$/);
      expect(first.details.filesScanned).toBeGreaterThan(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("grep's cost per file", () => {
  it("scans no more bytes per file than the file holds, also after a large file (by count)", async () => {
    // A 3 MB file first (in walk order), then 40 small ones; the literal is in none of them.
    const files: Record<string, string> = { "a-large.txt": "x".repeat(3 * 1024 * 1024) };
    for (let index = 0; index < 40; index++) files[`b-small-${String(index).padStart(2, "0")}.txt`] = `line ${index}\n`;
    const dir = fixture("grep-cliff", files);
    const totalBytes = Object.values(files).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    const before = prefilterStats.bytesScanned;
    const result = await grep({ pattern: "createHash\\(", path: dir }, makeCtx());
    expect(textOf(result)).toMatch(/^No matches/);
    expect(result.details.filesScanned).toBe(41);
    // One literal ("createHash("): each file's bytes at most once.
    expect(prefilterStats.bytesScanned - before).toBeLessThanOrEqual(totalBytes);
  });
});

describe("progress throttle and glob helpers", () => {
  it("fires only after the interval, then at most once per interval", () => {
    let t = 1000;
    const due = createProgressThrottle(200, () => t);
    expect(due()).toBe(false);
    t = 1199;
    expect(due()).toBe(false);
    t = 1200;
    expect(due()).toBe(true);
    t = 1300;
    expect(due()).toBe(false);
    t = 1400;
    expect(due()).toBe(true);
  });

  it("converts basename globs", () => {
    expect(globToRegExp("*.ts").test("a.ts")).toBe(true);
    expect(globToRegExp("*.ts").test("a.tsx")).toBe(false);
    expect(globToRegExp("?.c").test("ab.c")).toBe(false);
    expect(globToRegExp("a+(b).txt").test("a+(b).txt")).toBe(true);
  });
});

describe("hash", () => {
  const algorithms = ["sha256", "sha1", "md5"] as const;

  it.each(algorithms)("hashes text with %s like node:crypto", async (algorithm) => {
    const text = "héllo wörld\n";
    const hex = createHash(algorithm).update(text, "utf8").digest("hex");
    const result = await hash({ text, algorithm }, makeCtx());
    expect(textOf(result)).toBe(`${algorithm} ${hex}  (text)`);
    expect(result.details).toEqual({ algorithm, hex, bytes: Buffer.byteLength(text) });
  });

  it.each(algorithms)("hashes a multi-chunk file with %s like node:crypto", async (algorithm) => {
    const content = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) & 0xff;
    const file = join(fixture(`hash-${algorithm}`, { "data.bin": content }), "data.bin");
    const hex = createHash(algorithm).update(content).digest("hex");
    const result = await hash({ path: file, algorithm }, makeCtx());
    expect(textOf(result)).toBe(`${algorithm} ${hex}  ${file}`);
    expect(result.details).toEqual({ algorithm, hex, bytes: content.length });
  });

  it("defaults to sha256", async () => {
    const result = await hash({ text: "" }, makeCtx());
    expect(result.details.algorithm).toBe("sha256");
    expect(result.details.hex).toBe(createHash("sha256").digest("hex"));
  });

  it("throws for both or neither input, an unknown algorithm and a missing file", async () => {
    await expect(hash({ text: "a", path: "b" }, makeCtx())).rejects.toThrow('hash: give exactly one of "text" or "path"');
    await expect(hash({}, makeCtx())).rejects.toThrow('hash: give exactly one of "text" or "path"');
    await expect(hash({ text: "a", algorithm: "crc32" as "md5" }, makeCtx())).rejects.toThrow(/unknown algorithm/);
    await expect(hash({ path: join(root, "nope.bin") }, makeCtx())).rejects.toThrow(/hash: file not found/);
  });

  it("throws when the signal is aborted", async () => {
    await expect(hash({ text: "a" }, abortedCtx())).rejects.toThrow(/abort/i);
    const file = join(fixture("hash-abort", { "big.bin": Buffer.alloc(4 * 1024 * 1024) }), "big.bin");
    await expect(hash({ path: file }, makeCtx(signalAbortingAfter(2)))).rejects.toThrow(/abort/i);
  });
});

describe("diff", () => {
  const oldText = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
  const newText = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n";

  it("produces a patch that applyPatch turns into newText", async () => {
    const result = await diff({ oldText, newText }, makeCtx());
    const text = textOf(result);
    expect(text.startsWith("--- old\n+++ new\n@@ ")).toBe(true);
    expect(applyPatch(oldText, text)).toBe(newText);
    expect(result.details).toEqual({ hunks: 2, additions: 2, deletions: 1, identical: false, truncated: false });
  });

  it("honors context and reads files", async () => {
    const dir = fixture("diff-files", { "a.txt": oldText, "b.txt": newText });
    const result = await diff({ oldPath: join(dir, "a.txt"), newPath: join(dir, "b.txt"), context: 10 }, makeCtx());
    expect(result.details.hunks).toBe(1);
    expect(textOf(result)).toContain(`--- ${join(dir, "a.txt")}`);
    expect(applyPatch(oldText, textOf(result))).toBe(newText);
  });

  it("reports identical inputs", async () => {
    const result = await diff({ oldText, newText: oldText }, makeCtx());
    expect(textOf(result)).toBe("The inputs are identical.");
    expect(result.details).toEqual({ hunks: 0, additions: 0, deletions: 0, identical: true, truncated: false });
  });

  it("truncates a huge patch and says so", async () => {
    const big = Array.from({ length: 5000 }, (_, i) => `line ${i} ${"z".repeat(20)}`).join("\n");
    const result = await diff({ oldText: "", newText: big }, makeCtx());
    expect(result.details.truncated).toBe(true);
    expect(Buffer.byteLength(textOf(result))).toBeLessThan(64 * 1024 + 300);
    expect(textOf(result)).toMatch(/\[truncated: the patch is \d+ bytes/);
  });

  it("throws unless each side has exactly one source", async () => {
    await expect(diff({ newText }, makeCtx())).rejects.toThrow('diff: give exactly one of "oldText" or "oldPath"');
    await expect(diff({ oldText, newText, newPath: "x" }, makeCtx())).rejects.toThrow('diff: give exactly one of "newText" or "newPath"');
    await expect(diff({ oldPath: join(root, "missing"), newText }, makeCtx())).rejects.toThrow(/diff: oldPath not found/);
  });

  it("can be aborted while the diff is computed", async () => {
    const a = Array.from({ length: 3000 }, (_, i) => `a${i}`).join("\n");
    const b = Array.from({ length: 3000 }, (_, i) => `b${i}`).join("\n");
    await expect(diff({ oldText: a, newText: b }, makeCtx(signalAbortingAfter(3)))).rejects.toThrow(/abort/i);
  });
});

describe("patch", () => {
  const oldText = "alpha\nbeta\ngamma\ndelta\nepsilon\n";
  const newText = "alpha\nBETA\ngamma\ndelta\nepsilon\nzeta\n";

  it("round-trips a diff tool patch", async () => {
    const d = await diff({ oldText, newText }, makeCtx());
    const result = await patch({ patch: textOf(d), text: oldText }, makeCtx());
    expect(textOf(result)).toBe(newText);
    expect(result.details).toEqual({
      applied: true,
      hunks: 1,
      written: false,
      bytes: Buffer.byteLength(newText),
      truncated: false,
    });
  });

  it("places a hunk at shifted lines, and uses fuzz only when allowed", async () => {
    const d = textOf(await diff({ oldText, newText }, makeCtx()));
    const shifted = `header\n${oldText}`;
    expect(textOf(await patch({ patch: d, text: shifted }, makeCtx()))).toBe(`header\n${newText}`);
    const drifted = oldText.replace("delta", "DELTA");
    await expect(patch({ patch: d, text: drifted }, makeCtx())).rejects.toThrow(/patch: hunk 1 of 1 .* does not apply/);
    expect(textOf(await patch({ patch: d, text: drifted, fuzzFactor: 1 }, makeCtx()))).toBe(newText.replace("delta", "DELTA"));
  });

  it("throws a clear error naming the hunk that does not apply", async () => {
    const two = "@@ -1,2 +1,2 @@\n-alpha\n+ALPHA\n beta\n@@ -4,2 +4,2 @@\n-nothere\n+x\n epsilon\n";
    await expect(patch({ patch: two, text: oldText }, makeCtx())).rejects.toThrow(
      /^patch: hunk 2 of 2 \(@@ -4,2 \+4,2 @@\) does not apply to the text/,
    );
  });

  it("writes the file only with write: true", async () => {
    const dir = fixture("patch-write", { "f.txt": oldText });
    const file = join(dir, "f.txt");
    const d = textOf(await diff({ oldText, newText }, makeCtx()));

    const preview = await patch({ patch: d, path: file }, makeCtx());
    expect(textOf(preview)).toBe(newText);
    expect(preview.details.written).toBe(false);
    expect(readFileSync(file, "utf8")).toBe(oldText);

    const written = await patch({ patch: d, path: file, write: true }, makeCtx());
    expect(written.details).toMatchObject({ applied: true, written: true, bytes: Buffer.byteLength(newText) });
    expect(textOf(written)).toBe(`patch: applied 1 hunk to ${file} (${Buffer.byteLength(newText)} bytes written)`);
    expect(readFileSync(file, "utf8")).toBe(newText);
  });

  it("throws on bad inputs without touching the file", async () => {
    const d = textOf(await diff({ oldText, newText }, makeCtx()));
    await expect(patch({ patch: d }, makeCtx())).rejects.toThrow('patch: give exactly one of "path" or "text"');
    await expect(patch({ patch: d, text: oldText, write: true }, makeCtx())).rejects.toThrow(/needs "path"/);
    await expect(patch({ patch: "not a patch", text: oldText }, makeCtx())).rejects.toThrow(/no hunks/);
    await expect(patch({ patch: d, path: join(root, "absent.txt") }, makeCtx())).rejects.toThrow(/patch: file not found/);
    await expect(patch({ patch: d, text: oldText }, abortedCtx())).rejects.toThrow(/abort/i);
  });
});
