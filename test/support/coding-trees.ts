/**
 * Generated workspaces and tool calls for the differential tests of pi's
 * coding tools: a seeded tree (text files short and long enough to
 * truncate, a long line, CRLF and BOM files, binary bytes, a PNG, a large
 * folder, nested folders, symbolic links to files and folders, dangling, in
 * a loop and to a folder outside) and a sequence of calls of every tool
 * over it, the successful and the failing kinds alike, some with a signal
 * aborted before the call and some (a quarter) under `confine`. The same
 * seed gives the same tree and calls.
 */
import { execFileSync } from "node:child_process";
import { accessSync, constants, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { crc32, deflateSync } from "node:zlib";

import { createRandom } from "./soak.js";

/** A small deterministic PRNG (mulberry32, the soak's). */
export const random = createRandom;

const words = ["alpha", "beta", "gamma", "delta", "TODO", "fixme", "return", "const", "value", "import", "élan", "naïve", "→", "\t"];

/** A valid RGB PNG of `width` × `height` pixels. */
export function png(width: number, height: number, next: () => number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body) >>> 0);
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;
  header[9] = 2;
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let index = 0; index < rows.length; index++) rows[index] = index % (width * 3 + 1) === 0 ? 0 : Math.floor(next() * 256);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function line(next: () => number, count: number): string {
  return Array.from({ length: count }, () => words[Math.floor(next() * words.length)]).join(" ");
}

/** The folder outside the workspace `root` that its `escape` link points to. */
export function outsideOf(root: string): string {
  return `${root}.outside`;
}

/**
 * Writes the tree of `seed` at `root` (emptied first), and `outsideOf(root)`
 * with a file in it; returns the text files' names and a line of each. The
 * root is a git repository: pi's find leaves out fd's `--no-require-git`
 * inside one, which Debian's fd 8.6 lacks.
 */
export function writeTree(root: string, seed: number): { files: string[]; lines: Map<string, string[]> } {
  const next = random(seed);
  rmSync(root, { recursive: true, force: true });
  const outside = outsideOf(root);
  rmSync(outside, { recursive: true, force: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, "secret.txt"), "secret alpha TODO\n");
  mkdirSync(join(root, "src", "nested", "deeper"), { recursive: true });
  mkdirSync(join(root, "many"), { recursive: true });
  execFileSync("git", ["init", "-q", "--template=", root]);
  const lines = new Map<string, string[]>();
  const files: string[] = [];
  const addText = (name: string, lineCount: number, { crlf = false, bom = false } = {}) => {
    const content = Array.from({ length: lineCount }, (_, index) => `${index} ${line(next, 1 + Math.floor(next() * 8))}`);
    const newline = crlf ? "\r\n" : "\n";
    writeFileSync(join(root, name), (bom ? "\uFEFF" : "") + content.join(newline) + (next() < 0.5 ? newline : ""));
    lines.set(name, content);
    files.push(name);
  };
  addText("README.md", 5 + Math.floor(next() * 20));
  addText("src/main.ts", 40 + Math.floor(next() * 80));
  addText("src/nested/util.ts", 10 + Math.floor(next() * 30), { crlf: true });
  addText("src/nested/deeper/big.txt", 2_500 + Math.floor(next() * 2_000));
  addText("notes.txt", 3);
  addText("bom.txt", 4 + Math.floor(next() * 6), { bom: true, crlf: next() < 0.5 });
  writeFileSync(join(root, "long-line.txt"), `${"x".repeat(60_000 + Math.floor(next() * 10_000))}\nshort\n`);
  writeFileSync(join(root, "binary.bin"), Buffer.from(Array.from({ length: 4_096 }, () => Math.floor(next() * 256))));
  writeFileSync(join(root, "image.png"), png(8 + Math.floor(next() * 24), 8 + Math.floor(next() * 24), next));
  writeFileSync(join(root, "empty.txt"), "");
  for (let index = 0; index < 520 + Math.floor(next() * 60); index++) writeFileSync(join(root, "many", `entry-${index}.txt`), `${index}\n`);
  symlinkSync("README.md", join(root, "readme-link.md"));
  symlinkSync("src", join(root, "srclink"));
  symlinkSync("nowhere.txt", join(root, "dangling.txt"));
  symlinkSync("loop-b", join(root, "loop-a"));
  symlinkSync("loop-a", join(root, "loop-b"));
  symlinkSync(outside, join(root, "escape"));
  return { files, lines };
}

/** A tool call of the generated sequence. */
export interface GeneratedCall {
  name: string;
  arguments: Record<string, unknown>;
  /** Made with a signal aborted before the call (through the tools' `execute`). */
  isAborted: boolean;
  /** Run under `confine`. */
  isConfined: boolean;
  /** Its path leaves the workspace: `confine` refuses it. */
  leaves: boolean;
  /** Through the tools' `execute` (a throw compared as the error it is), else through the agent loop's `runToolCall`. */
  throughExecute: boolean;
}

type Call = Pick<GeneratedCall, "name" | "arguments"> & { leaves?: boolean };

/** Paths through the tree's links, and out of the workspace (`leaves`), for every tool that takes a path. */
function linkCalls(root: string, readmeLine: string): Call[] {
  const outside = outsideOf(root);
  return [
    { name: "read", arguments: { path: "readme-link.md" } },
    { name: "read", arguments: { path: "srclink/main.ts", limit: 5 } },
    { name: "read", arguments: { path: "dangling.txt" } },
    { name: "read", arguments: { path: "loop-a" } },
    { name: "read", arguments: { path: "loop-a/inner.txt" } },
    { name: "read", arguments: { path: "escape/secret.txt" }, leaves: true },
    { name: "read", arguments: { path: `../${basename(outside)}/secret.txt` }, leaves: true },
    { name: "read", arguments: { path: join(outside, "secret.txt") }, leaves: true },
    { name: "ls", arguments: { path: "srclink" } },
    { name: "ls", arguments: { path: "loop-a" } },
    { name: "ls", arguments: { path: "dangling.txt" } },
    { name: "ls", arguments: { path: "escape" }, leaves: true },
    { name: "grep", arguments: { pattern: "alpha", path: "srclink" } },
    { name: "grep", arguments: { pattern: "alpha", path: "loop-b" } },
    { name: "grep", arguments: { pattern: "TODO", path: "escape" }, leaves: true },
    { name: "find", arguments: { pattern: "*.ts", path: "srclink" } },
    { name: "find", arguments: { pattern: "*", path: "loop-a" } },
    { name: "edit", arguments: { path: "readme-link.md", edits: [{ oldText: readmeLine, newText: `${readmeLine} (through a link)` }] } },
    { name: "edit", arguments: { path: "loop-a", edits: [{ oldText: "a", newText: "b" }] } },
    { name: "edit", arguments: { path: "notes.txt", edits: [] } },
    { name: "edit", arguments: { path: "loop-b", edits: [] } },
    { name: "edit", arguments: { path: "escape/secret.txt", edits: [{ oldText: "secret", newText: "changed" }] }, leaves: true },
    { name: "write", arguments: { path: "dangling.txt", content: "made through a dangling link\n" } },
    { name: "write", arguments: { path: "loop-b", content: "never\n" } },
    { name: "write", arguments: { path: "escape/planted.txt", content: "planted\n" }, leaves: true },
  ];
}

/** The calls of `seed` over its tree at `root`: every tool, matching and failing, some aborted before they start and some confined. */
export function generateCalls(seed: number, root: string, tree: { files: string[]; lines: Map<string, string[]> }): GeneratedCall[] {
  const next = random(seed ^ 0x5bd1e995);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const calls: Call[] = [];
  const text = tree.files;
  for (const file of [...text, "long-line.txt", "binary.bin", "image.png", "empty.txt", "missing.txt", "src"])
    calls.push({ name: "read", arguments: { path: file } });
  calls.push({
    name: "read",
    arguments: { path: "src/nested/deeper/big.txt", offset: 1 + Math.floor(next() * 100), limit: 1 + Math.floor(next() * 50) },
  });
  calls.push({ name: "read", arguments: { path: "src/main.ts", offset: 10_000 } });
  calls.push({ name: "read", arguments: { path: "src/nested/deeper/big.txt", offset: 2_000 } });
  for (let index = 0; index < 6; index++) {
    const file = pick(text.filter((name) => !name.includes("big")));
    const lines = tree.lines.get(file)!;
    const target = lines[Math.floor(next() * lines.length)]!;
    const kind = pick(["match", "trailing-space", "missing", "duplicate", "legacy", "multi"] as const);
    if (kind === "match")
      calls.push({ name: "edit", arguments: { path: file, edits: [{ oldText: target, newText: `${target} // edited ${index}` }] } });
    if (kind === "trailing-space") calls.push({ name: "edit", arguments: { path: file, edits: [{ oldText: `${target}   `, newText: "fuzzy" }] } });
    if (kind === "missing") calls.push({ name: "edit", arguments: { path: file, edits: [{ oldText: "no such text anywhere", newText: "x" }] } });
    if (kind === "duplicate") calls.push({ name: "edit", arguments: { path: file, edits: [{ oldText: "a", newText: "b" }] } });
    if (kind === "legacy") calls.push({ name: "edit", arguments: { path: file, oldText: target, newText: "legacy form" } });
    if (kind === "multi")
      calls.push({
        name: "edit",
        arguments: {
          path: file,
          edits: [
            { oldText: lines[0]!, newText: "first" },
            { oldText: lines[0]!, newText: "again" },
          ],
        },
      });
  }
  calls.push({ name: "edit", arguments: { path: "missing.txt", edits: [{ oldText: "a", newText: "b" }] } });
  calls.push({ name: "write", arguments: { path: "written/new/file.txt", content: line(next, 30) } });
  calls.push({ name: "write", arguments: { path: "notes.txt", content: "replaced\n" } });
  calls.push({ name: "read", arguments: { path: "written/new/file.txt" } });
  for (const pattern of ["TODO", "alpha|beta", "no-such-token-anywhere", "^0 ", "("]) calls.push({ name: "grep", arguments: { pattern } });
  calls.push({ name: "grep", arguments: { pattern: "gamma", path: "src", ignoreCase: true, context: 1, limit: 5 } });
  calls.push({ name: "grep", arguments: { pattern: "delta", glob: "*.ts", literal: true } });
  calls.push({ name: "grep", arguments: { pattern: "x", path: "long-line.txt" } });
  for (const pattern of ["*.ts", "**/*.txt", "nothing-*"]) calls.push({ name: "find", arguments: { pattern } });
  calls.push({ name: "ls", arguments: {} });
  calls.push({ name: "ls", arguments: { path: "many" } });
  calls.push({ name: "ls", arguments: { path: "many", limit: 7 } });
  calls.push({ name: "ls", arguments: { path: "missing" } });
  calls.push({ name: "ls", arguments: { path: "README.md" } });
  calls.push({ name: "bash", arguments: { command: "echo out; echo err >&2; exit 0" } });
  calls.push({ name: "bash", arguments: { command: `exit ${1 + Math.floor(next() * 200)}` } });
  calls.push({ name: "bash", arguments: { command: "seq 1 5000" } });
  calls.push({ name: "bash", arguments: { command: "head -c 70000 /dev/zero | tr '\\0' 'y'" } });
  calls.push({ name: "bash", arguments: { command: "ls src && cat README.md | wc -l" } });
  calls.push({ name: "bash", arguments: { command: "printf 'no newline'" } });
  calls.push({ name: "bash", arguments: { command: "true" } });
  calls.push({ name: "bash", arguments: { command: "echo x", timeout: -1 } });
  // One stream: a command's stderr and stdout are read from two pipes, whose order is the reader's.
  calls.push({ name: "bash", arguments: { command: "{ cat loop-a; ls -d srclink/nested; } 2>&1" } });
  const readme = tree.lines.get("README.md")!;
  // The link calls go in at random places, after some of what the others do to the tree and before the rest.
  for (const call of linkCalls(root, readme[Math.floor(next() * readme.length)]!)) calls.splice(Math.floor(next() * (calls.length + 1)), 0, call);
  let leaving = 0;
  return calls.map((call, index) => {
    // The first call of each runtime (the plain one's, then the confined one's) may meet a cold thread.
    // Of the calls whose path leaves, the first is confined and the second not, the rest either way.
    const leaves = call.leaves === true;
    if (leaves) leaving += 1;
    const isConfined = leaves ? leaving === 1 || (leaving > 2 && next() < 0.5) : index === 1 || (index > 1 && next() < 0.25);
    const isAborted = index < 2 || next() < 0.08;
    return { ...call, isAborted, isConfined, leaves, throughExecute: isAborted || next() < 0.5 };
  });
}

/**
 * Puts `rg` and `fd` shims first on PATH (pi's grep and find look them up
 * there): ripgrep and fd list matches in the order their threads find them,
 * which differs from run to run, so the shims ask for one order (`--sort
 * path`; fd on one thread). Debian's fd 8.6 lacks the `--no-require-git`
 * that pi 1.6 passes; the shim drops it, so that find has results to
 * compare. Both sides of a differential run the same shims. Call before the
 * runtime starts its threads (they take the environment then).
 */
export function useDeterministicSearchTools(folder: string): void {
  mkdirSync(folder, { recursive: true });
  const rg = which(["rg"]);
  const fd = which(["fd", "fdfind"]);
  if (rg !== undefined) writeFileSync(join(folder, "rg"), `#!/bin/sh\nexec ${rg} --sort path "$@"\n`, { mode: 0o755 });
  if (fd !== undefined) {
    const script = ["#!/bin/sh", 'for arg do shift; [ "$arg" = "--no-require-git" ] || set -- "$@" "$arg"; done', `exec ${fd} --threads 1 "$@"`].join(
      "\n",
    );
    writeFileSync(join(folder, "fd"), `${script}\n`, { mode: 0o755 });
  }
  process.env.PATH = `${folder}:${process.env.PATH ?? ""}`;
}

/** The first of `names` that is an executable in a folder of PATH, by its path; undefined when none is. */
export function which(names: string[]): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    for (const name of names) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {}
    }
  }
  return undefined;
}

/**
 * Makes `folder` a pi agent folder (`PI_CODING_AGENT_DIR`) whose `bin/fd`,
 * which pi's find runs before any fd on PATH, acts as an fd older than 8.7
 * (Debian 12's 8.6): it refuses `--no-require-git` with fd 8.6's usage error,
 * answers `--version` with `fd 8.6.0`, and hands anything else to the
 * machine's fd, whatever its version. Returns the path of that `fd`, or
 * undefined where PATH has no fd.
 */
export function writeOldFd(folder: string): string | undefined {
  const fd = which(["fd", "fdfind"]);
  if (fd === undefined) return undefined;
  mkdirSync(join(folder, "bin"), { recursive: true });
  const script = [
    "#!/bin/sh",
    'for arg do [ "$arg" = "--no-require-git" ] && { echo "error: Found argument \'--no-require-git\' which wasn\'t expected, or isn\'t valid in this context" >&2; exit 2; }; done',
    '[ "$1" = "--version" ] && { echo "fd 8.6.0"; exit 0; }',
    `exec ${fd} "$@"`,
  ];
  writeFileSync(join(folder, "bin", "fd"), `${script.join("\n")}\n`, { mode: 0o755 });
  return join(folder, "bin", "fd");
}
