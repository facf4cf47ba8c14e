/**
 * Comments in src/ that name a source file name one that exists: a file
 * moved, split or removed leaves no comment sending the reader to nothing.
 * A `*.ts` name is found as a path (from the commenting file's folder, from
 * src/ or from the repository's root) or, bare, as the name of a file of the
 * repository's own code; a `*.js` name is checked where it is a path into
 * src/ (`./x.js`, `../x.js`, `src/x.js`): other `.js` names are other
 * packages' and the build's.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const srcDir = join(root, "src");
/** Folders of the repository's own code, where a bare file name may live. */
const codeFolders = ["src", "test", "scripts", "bench"];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

const knownNames = new Set(
  codeFolders.flatMap((folder) => (existsSync(join(root, folder)) ? filesUnder(join(root, folder)) : [])).map((file) => basename(file)),
);

/** The text of every comment in `text` (found around the parsed nodes, as the compiler finds them). */
function commentsOf(text: string): string[] {
  const source = ts.createSourceFile("file.ts", text, ts.ScriptTarget.Latest, true);
  const comments = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) comments.set(range.pos, text.slice(range.pos, range.end));
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return [...comments.values()];
}

/** The source file names a comment gives: a URL's path is none, nor a quoted value or a fenced example's. */
function fileNamesIn(comment: string): string[] {
  const withoutUrls = comment.replace(/```[\s\S]*?```/g, "").replace(/\b[a-z]+:\/\/\S+/g, "");
  return [...withoutUrls.matchAll(/(?<![\w@./"'-])(?:\.{1,2}\/)*[\w@-][\w@./-]*\.(?:d\.ts|ts|js)\b/g)].map((match) => match[0]);
}

/** Whether `name`, met in a comment of `file`, names a file that exists; undefined where it is not checked. */
function isKnownFile(file: string, name: string): boolean | undefined {
  if (name.endsWith(".d.ts")) return undefined;
  if (name.endsWith(".js")) {
    const isSrcPath = name.startsWith("./") || name.startsWith("../") || name.startsWith("src/");
    if (!isSrcPath) return undefined;
    const target = name.startsWith("src/") ? join(root, name) : resolve(dirname(file), name);
    if (!target.startsWith(srcDir)) return undefined;
    return [target, target.replace(/\.js$/, ".ts")].some((candidate) => existsSync(candidate));
  }
  if (!name.includes("/")) return knownNames.has(name);
  return [resolve(dirname(file), name), join(srcDir, name), join(root, name)].some((candidate) => existsSync(candidate));
}

/** Every `file: name` where a comment of src/ names a file that is not there. */
function staleReferences(): string[] {
  return filesUnder(srcDir)
    .filter((file) => /\.(ts|mts|cts|js|mjs)$/.test(file))
    .flatMap((file) =>
      commentsOf(readFileSync(file, "utf8"))
        .flatMap(fileNamesIn)
        .filter((name) => isKnownFile(file, name) === false)
        .map((name) => `${relative(root, file)}: ${name}`),
    );
}

describe("file names in src/'s comments", () => {
  it("are read from comments, with URLs left out, and judged against the files there are (the check can fail)", () => {
    expect(
      fileNamesIn(
        '/** See thread-host.ts and ./protocol.js; https://example.com/a/b.ts is no file; ```ts\n f("src/a.ts")\n``` pi\'s agent-loop.ts, new URL("./my-tool.js") */',
      ),
    ).toEqual(["thread-host.ts", "./protocol.js", "agent-loop.ts"]);
    const inWorkers = join(srcDir, "workers", "worker-pool.ts");
    expect(isKnownFile(inWorkers, "thread-host.ts")).toBe(true);
    expect(isKnownFile(inWorkers, "./protocol.js")).toBe(true);
    expect(isKnownFile(inWorkers, "workers/thread-host.ts")).toBe(true);
    expect(isKnownFile(inWorkers, "no-such-file.ts")).toBe(false);
    expect(isKnownFile(inWorkers, "./no-such-file.js")).toBe(false);
    expect(isKnownFile(inWorkers, "piscina/dist/worker.js")).toBeUndefined();
  });

  it("name files that exist", () => {
    expect(staleReferences()).toEqual([]);
  });
});
