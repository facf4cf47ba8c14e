import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  createDiffTool,
  createGrepTool,
  createHashTool,
  createPatchTool,
  escapeControlCharacters,
  quotePath,
  type WorkerToolContext,
} from "./support/internals.js";
import { textOf } from "./support/helpers.js";

const ctx = <D>(): WorkerToolContext<D> => ({ toolCallId: "t1", signal: new AbortController().signal, onUpdate: () => {} });

/** What a reader might take for a line break: none may appear in a tool's output where one line is meant. */
const lineBreaks = /[\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]/;
/** Any control character: none may reach the output raw from a path. */
const controls = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** Decodes a C-style quoted path (as git writes them) back to its name: the quoting loses nothing. */
function unquote(shown: string): string {
  if (!shown.startsWith('"')) return shown;
  const bytes: number[] = [];
  const named: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };
  for (let i = 1; i < shown.length - 1; i++) {
    if (shown[i] !== "\\") {
      bytes.push(...Buffer.from(shown[i]!, "utf8"));
      continue;
    }
    const next = shown[++i]!;
    if (named[next] !== undefined) bytes.push(named[next]);
    else {
      bytes.push(parseInt(shown.slice(i, i + 3), 8));
      i += 2;
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** Hostile names: each holds something that could end a line, move the cursor, or reorder what is shown. */
const hostileNames = [
  "x.txt:1: FORGED MATCH\nreal.txt",
  "cr\r.txt",
  "tab\there.txt",
  "esc\u001b[2J.txt",
  "nel\u0085x.txt",
  "ls\u2028x.txt",
  "bidi\u202eexe.txt",
  'quote".txt',
  "back\\slash.txt",
];

describe("quotePath", () => {
  it("leaves ordinary paths, non-ASCII ones included, as they are", () => {
    for (const path of ["src/a.ts", "café/naïve.txt", "日本語.md", "a b:c.txt"]) expect(quotePath(path)).toBe(path);
  });

  it("quotes a path holding a control character, quote or backslash, C-style, on one line, losing nothing", () => {
    expect(quotePath("x.txt:1: FORGED MATCH\nreal.txt")).toBe('"x.txt:1: FORGED MATCH\\nreal.txt"');
    expect(quotePath("esc\u001b[2J.txt")).toBe('"esc\\033[2J.txt"');
    expect(quotePath("ls\u2028x.txt")).toBe('"ls\\342\\200\\250x.txt"');
    for (const name of hostileNames) {
      const shown = quotePath(name);
      expect(shown).toMatch(/^".*"$/s);
      expect(shown).not.toMatch(controls);
      expect(unquote(shown)).toBe(name);
    }
  });

  it("escapes control characters of a free text but keeps tabs", () => {
    expect(escapeControlCharacters("a\tb\rc\u001bd\u2029e")).toBe("a\tb\\rc\\033d\\342\\200\\251e");
  });
});

describe("paths with control characters in the tools' output", () => {
  let root: string;

  beforeAll(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-quote-")));
    mkdirSync(join(root, "dir\nx.txt:9: FORGED"));
    for (const name of hostileNames) writeFileSync(join(root, name), "needle\n");
    writeFileSync(join(root, "dir\nx.txt:9: FORGED", "inner.txt"), "needle\n");
    writeFileSync(join(root, "plain.txt"), "needle\ncarriage\rx.txt:1: FORGED\n");
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  const workspace = () => ({ realRoot: root, allowWrite: true });

  it("grep prints one line per match, each file name quoted when it must be, and escapes control characters of matched lines", async () => {
    const result = await createGrepTool(workspace())({ pattern: "needle|carriage" }, ctx());
    const lines = textOf(result).split("\n");
    // One file per hostile name, the file in the hostile folder, and plain.txt's two lines.
    expect(lines).toHaveLength(hostileNames.length + 3);
    for (const line of lines) expect(line).not.toMatch(lineBreaks);
    const files = lines.map((line) => /^("(?:[^"\\]|\\.)*"|[^:]*):\d+: /.exec(line)![1]!).map(unquote);
    expect(new Set(files)).toEqual(new Set([...hostileNames, "dir\nx.txt:9: FORGED/inner.txt", "plain.txt"]));
    expect(lines).toContain("plain.txt:2: carriage\\rx.txt:1: FORGED");
    expect(JSON.stringify(result.details)).not.toMatch(controls);
  });

  it("grep, hash, diff and patch quote a hostile path in their results and error texts", async () => {
    const name = hostileNames[0]!;
    const shown = quotePath(name);
    const grep = await createGrepTool(workspace())({ pattern: "nothing-here", path: name }, ctx());
    expect(textOf(grep)).toBe(`No matches for /nothing-here/ in ${shown} (1 files scanned).`);
    const hash = await createHashTool(workspace())({ path: name }, ctx());
    expect(textOf(hash)).toMatch(new RegExp(`^sha256 [0-9a-f]{64}  ${escapeRegExp(shown)}$`));
    const diff = await createDiffTool(workspace())({ oldPath: name, newText: "pin\n" }, ctx());
    expect(textOf(diff).split("\n")[0]).toBe(`--- ${shown}`);
    const patch = "--- a\n+++ b\n@@ -1,1 +1,1 @@\n-needle\n+pin\n";
    const dryRun = await createPatchTool(workspace())({ path: name, patch: patch.replace("-needle", "-absent") }, ctx()).catch(
      (error: Error) => error,
    );
    expect((dryRun as Error).message).toContain(`does not apply to ${shown}:`);
    const written = await createPatchTool(workspace())({ path: name, patch, write: true }, ctx());
    expect(textOf(written)).toBe(`patch: applied 1 hunk to ${shown} (4 bytes written)`);
    for (const result of [grep, hash, diff, written]) expect(JSON.stringify(result.details)).not.toMatch(controls);

    const missing = "missing\nx.txt:1: FORGED";
    for (const call of [
      createHashTool(workspace())({ path: missing }, ctx()),
      createGrepTool(workspace())({ pattern: "x", path: missing }, ctx()),
      createDiffTool(workspace())({ oldPath: missing, newText: "" }, ctx()),
      createPatchTool(workspace())({ path: missing, patch }, ctx()),
      createHashTool(workspace())({ path: `/elsewhere\n${missing}` }, ctx()),
    ]) {
      const error = (await call.catch((caught: Error) => caught)) as Error;
      expect(error).toBeInstanceOf(Error);
      expect(error.message).not.toMatch(lineBreaks);
      expect(error.message).toContain('"');
    }
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
}
