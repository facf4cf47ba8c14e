/**
 * The generated source tree of the built-in tools suite: a seeded tree of
 * thousands of TypeScript-like files (tens of MiB) in a temp dir, with a few
 * `.gitignore` files, ignored build output and binary files, so that `grep`
 * and `ripgrep` have the same real work to do. Same seed, same bytes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { createRandom, vocabulary } from "./corpus.js";

export interface SourceTreeOptions {
  /** Text files searched (ignored and binary files come on top). */
  files: number;
  /** Average size of a text file in bytes. */
  averageBytes: number;
  seed: number;
  /**
   * Text files of `bytes` each, spread evenly among the others (counted in
   * `files`): a few files of several MiB among many small ones.
   */
  largeFiles?: { count: number; bytes: number };
}

export interface SourceTree {
  root: string;
  /** Text files outside ignored directories: the files `grep` searches. */
  textFiles: number;
  /** Bytes of those files. */
  textBytes: number;
  /** Absolute paths of a sample of text files (for `hash`), in a fixed order. */
  sample: string[];
  /** A literal marker planted on one line of every 50th text file. */
  marker: string;
  /** How many lines carry {@link marker}. */
  markerLines: number;
  /** Deletes the whole tree. */
  remove: () => void;
}

const filesPerDir = 40;
const dirsPerParent = 16;

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

/** About `bytes` bytes of source text, as lines. */
function generateLines(random: () => number, bytes: number): string[] {
  const out: string[] = [];
  let size = 0;
  while (size < bytes) {
    const verb = pick(random, vocabulary);
    const noun = pick(random, vocabulary);
    const name = `${verb}${noun[0]!.toUpperCase()}${noun.slice(1)}${Math.floor(random() * 1000)}`;
    const block = [
      `/** ${verb}s the ${noun} of a ${pick(random, vocabulary)}. */`,
      `export function ${name}(${noun}: number, ${verb}: string): number {`,
    ];
    const body = 2 + Math.floor(random() * 6);
    for (let i = 0; i < body; i++) {
      block.push(`  const ${pick(random, vocabulary)}${i} = ${noun} * ${Math.floor(random() * 97)} + ${verb}.length; // ${pick(random, vocabulary)}`);
    }
    block.push(`  return ${noun} + ${body};`, "}", "");
    for (const line of block) size += line.length + 1;
    out.push(...block);
  }
  return out;
}

/** Directory of the `index`-th text file: a tree 16 wide, 40 files a directory. */
function dirOf(index: number): string {
  const leaf = Math.floor(index / filesPerDir);
  const parts = [`d${leaf % dirsPerParent}`];
  let rest = Math.floor(leaf / dirsPerParent);
  while (rest > 0) {
    parts.unshift(`p${rest % dirsPerParent}`);
    rest = Math.floor(rest / dirsPerParent);
  }
  return join("src", ...parts);
}

export function createSourceTree(options: SourceTreeOptions): SourceTree {
  const random = createRandom(options.seed);
  const root = mkdtempSync(join(tmpdir(), "toolpool-bench-tree-"));
  const marker = "FIXME(bench-marker)";
  const madeDirs = new Set<string>();
  const ensureDir = (dir: string): void => {
    if (madeDirs.has(dir)) return;
    mkdirSync(join(root, dir), { recursive: true });
    madeDirs.add(dir);
  };
  // Git rules both tools honor: build output and logs are ignored, one file re-included.
  writeFileSync(join(root, ".gitignore"), "build/\n*.log\n");
  let textBytes = 0;
  let markerLines = 0;
  const largeEvery = options.largeFiles === undefined || options.largeFiles.count <= 0 ? 0 : Math.floor(options.files / options.largeFiles.count);
  // Never the first file: every large one has small files before and after it in walk order.
  const isLargeFile = (index: number): boolean => largeEvery > 0 && index % largeEvery === Math.floor(largeEvery / 2);
  const sample: string[] = [];
  for (let index = 0; index < options.files; index++) {
    const dir = dirOf(index);
    ensureDir(dir);
    const size = isLargeFile(index) ? options.largeFiles!.bytes : Math.round(options.averageBytes * (0.25 + 1.5 * random()));
    const lines = generateLines(random, size);
    if (index % 50 === 0) {
      lines.splice(Math.floor(random() * lines.length), 0, `// ${marker}: ${pick(random, vocabulary)}`);
      markerLines += 1;
    }
    const text = `${lines.join("\n")}\n`;
    const path = join(root, dir, `mod${index % filesPerDir}.ts`);
    writeFileSync(path, text);
    textBytes += Buffer.byteLength(text);
    if (index % 97 === 0) sample.push(path);
    if (index % filesPerDir === 0) {
      // Per directory: an ignored log, and every 10th directory ignored build output and a binary file.
      writeFileSync(join(root, dir, "trace.log"), `${marker} in an ignored log\n`);
      if (index % (filesPerDir * 10) === 0) {
        ensureDir(join(dir, "build"));
        writeFileSync(join(root, dir, "build", "out.js"), `// ${marker} in ignored build output\n`.repeat(20));
        const binary = Buffer.alloc(4096, 0x41);
        binary[100] = 0;
        binary.write(marker, 200);
        writeFileSync(join(root, dir, "blob.bin"), binary);
      }
    }
  }
  // The root .gitignore is searched too (grep reads every non-ignored file, and so does `rg --hidden`).
  const textFiles = options.files + 1;
  textBytes += "build/\n*.log\n".length;
  return { root, textFiles, textBytes, sample, marker, markerLines, remove: () => rmSync(root, { recursive: true, force: true }) };
}
