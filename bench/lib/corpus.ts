/**
 * The generated corpus of suite 5: a seeded tree of TypeScript-like source
 * files in a temp dir, plus an edited copy of every file, so that grep, hash,
 * diff and patch calls have real work to do. Same seed, same bytes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { createTwoFilesPatch } from "diff";

export interface CorpusOptions {
  packages: number;
  filesPerPackage: number;
  /** Lines per file, on average. */
  linesPerFile: number;
  seed: number;
}

export interface CorpusFile {
  /** Absolute path of the original. */
  path: string;
  /** Absolute path of the edited copy. */
  nextPath: string;
  /** Unified diff from the original to the edited copy, as the patch tool takes it. */
  patch: string;
}

export interface Corpus {
  root: string;
  /** Absolute paths of the package directories (grep roots). */
  packageDirs: string[];
  files: CorpusFile[];
  bytes: number;
  /** Deletes the whole tree. */
  remove: () => void;
}

/** mulberry32: a small, fast, seeded PRNG; returns floats in [0, 1). */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Words the generated code is made of; grep patterns draw from the same list. */
export const vocabulary = [
  "buffer",
  "config",
  "cursor",
  "decode",
  "encode",
  "handler",
  "index",
  "limit",
  "merge",
  "offset",
  "parse",
  "queue",
  "render",
  "schema",
  "session",
  "stream",
  "token",
  "update",
  "worker",
  "yield",
];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function generateFile(random: () => number, lines: number): string[] {
  const out: string[] = [];
  while (out.length < lines) {
    const verb = pick(random, vocabulary);
    const noun = pick(random, vocabulary);
    const name = `${verb}${noun[0]!.toUpperCase()}${noun.slice(1)}${Math.floor(random() * 1000)}`;
    out.push(`/** ${verb}s the ${noun} of a ${pick(random, vocabulary)}${random() < 0.1 ? " (TODO: cache it)" : ""}. */`);
    out.push(`export function ${name}(${noun}: number, ${verb}: string): number {`);
    const body = 2 + Math.floor(random() * 6);
    for (let i = 0; i < body; i++) {
      const a = pick(random, vocabulary);
      const b = pick(random, vocabulary);
      out.push(`  const ${a}${i} = ${noun} * ${Math.floor(random() * 97)} + ${verb}.length; // ${b}`);
    }
    out.push(`  return ${noun} + ${body};`);
    out.push("}");
    out.push("");
  }
  return out;
}

/** A few scattered edits: changed, inserted and deleted lines. */
function editFile(random: () => number, lines: readonly string[]): string[] {
  const out = [...lines];
  const edits = 2 + Math.floor(random() * 4);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(random() * out.length);
    const kind = random();
    if (kind < 0.4) out[at] = `${out[at]} // edited: ${pick(random, vocabulary)}`;
    else if (kind < 0.7) out.splice(at, 0, `// inserted: ${pick(random, vocabulary)} ${pick(random, vocabulary)}`);
    else out.splice(at, 1);
  }
  return out;
}

export function createCorpus(options: CorpusOptions): Corpus {
  const random = createRandom(options.seed);
  const root = mkdtempSync(join(tmpdir(), "toolpool-bench-corpus-"));
  const packageDirs: string[] = [];
  const files: CorpusFile[] = [];
  let bytes = 0;
  for (let p = 0; p < options.packages; p++) {
    const pkg = `pkg${String(p).padStart(2, "0")}`;
    const dir = join(root, "src", pkg);
    const nextDir = join(root, "next", pkg);
    mkdirSync(dir, { recursive: true });
    mkdirSync(nextDir, { recursive: true });
    packageDirs.push(dir);
    for (let f = 0; f < options.filesPerPackage; f++) {
      const name = `mod${String(f).padStart(3, "0")}.ts`;
      const lines = generateFile(random, Math.round(options.linesPerFile * (0.5 + random())));
      const edited = editFile(random, lines);
      const text = `${lines.join("\n")}\n`;
      const nextText = `${edited.join("\n")}\n`;
      const path = join(dir, name);
      const nextPath = join(nextDir, name);
      writeFileSync(path, text);
      writeFileSync(nextPath, nextText);
      bytes += text.length + nextText.length;
      files.push({ path, nextPath, patch: createTwoFilesPatch(`a/${pkg}/${name}`, `b/${pkg}/${name}`, text, nextText) });
    }
  }
  return { root, packageDirs, files, bytes, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** One tool call of a session, in the shape of an assistant message's block. */
export interface CorpusToolCall {
  type: "toolCall";
  id: string;
  name: "grep" | "hash" | "diff" | "patch";
  arguments: Record<string, unknown>;
}

/**
 * The turns of one session: `turns` batches of `callsPerTurn` calls, each a
 * seeded pick among grep (one package), hash (one file), diff (a file and its
 * edited copy) and patch (apply the edit, result returned, not written).
 */
export function createSessionTurns(corpus: Corpus, session: number, turns: number, callsPerTurn: number, seed: number): CorpusToolCall[][] {
  const random = createRandom(seed * 7919 + session);
  return Array.from({ length: turns }, (_, turn) =>
    Array.from({ length: callsPerTurn }, (_, index): CorpusToolCall => {
      const id = `s${session}_t${turn}_c${index}`;
      const file = pick(random, corpus.files);
      switch (Math.floor(random() * 4)) {
        case 0:
          return {
            type: "toolCall",
            id,
            name: "grep",
            arguments: { pattern: `${pick(random, vocabulary)}[A-Z]\\w+\\d{2}\\(`, path: pick(random, corpus.packageDirs), maxResults: 50 },
          };
        case 1:
          return { type: "toolCall", id, name: "hash", arguments: { path: file.path } };
        case 2:
          return { type: "toolCall", id, name: "diff", arguments: { oldPath: file.path, newPath: file.nextPath } };
        default:
          return { type: "toolCall", id, name: "patch", arguments: { path: file.path, patch: file.patch } };
      }
    }),
  );
}
