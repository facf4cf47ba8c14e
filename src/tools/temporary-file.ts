/**
 * `patch`'s temporary files, and their removal once their writer is gone. A
 * terminated thread never reaches its cleanup, so each name says who writes it
 * (`.NAME.wWRITER-TID.RANDOM.toolpool.tmp`) and every `patch` first sweeps
 * its folder. A pid proves nothing on a shared volume (containers all run
 * pid 1), so WRITER digests boot id, pid namespace, pid and start time, and a
 * thread's end is judged only for this process's own files. Any other file is
 * gone only once untouched for {@link TEMPORARY_FILE_MAX_AGE_MS} (a stuck
 * writer's rename then fails, losing nothing); walkers like `grep` skip them.
 * Synchronous on purpose (see diff.ts).
 *
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { closeFolder, openFolder, pathInFolder, type OpenedFolder } from "./opened-folder.js";

const TEMPORARY_FILE_SUFFIX = ".toolpool.tmp";

/** Longer than any write stays unfinished. */
export const TEMPORARY_FILE_MAX_AGE_MS = 10 * 60 * 1000;

/** File names are limited to 255 bytes. */
const MAX_NAME_PREFIX_BYTES = 128;

const writerPattern = /\.w([0-9a-f]{16})-(\d+)\.[0-9a-f]{12}\.toolpool\.tmp$/;
/** Any temporary name toolpool gives, including older forms without a writer. */
const temporaryPattern = /^\..*\.[0-9a-f]{12}\.toolpool\.tmp$/s;

/** 0 where it cannot be known (no `/proc`, or another pid namespace's). */
const kernelThreadId = ((): number => {
  try {
    const [pid, task, tid] = readlinkSync("/proc/thread-self").split("/");
    return pid === String(process.pid) && task === "task" && tid !== undefined && /^\d+$/.test(tid) ? Number(tid) : 0;
  } catch {
    return 0;
  }
})();

/** Same on each thread, unlike any other process's; `isShared` false where random (only age removes its files). */
const writer = ((): { id: string; isShared: boolean } => {
  try {
    const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const pidNamespace = readlinkSync("/proc/self/ns/pid");
    const stat = readFileSync("/proc/self/stat", "utf8");
    // Field 22, counted after the command name, which may hold spaces and parentheses.
    const startTime = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    if (bootId === "" || startTime === undefined) throw new Error("no process identity");
    const id = createHash("sha256").update(`${bootId}\0${pidNamespace}\0${process.pid}\0${startTime}`).digest("hex").slice(0, 16);
    return { id, isShared: true };
  } catch {
    return { id: randomBytes(8).toString("hex"), isShared: false };
  }
})();

export function isTemporaryFileName(name: string): boolean {
  return name.startsWith(".") && name.endsWith(TEMPORARY_FILE_SUFFIX);
}

interface TemporaryFile {
  readonly fd: number;
  readonly name: string;
  /** Through the folder's descriptor where possible, unless the folder was given by path. */
  readonly path: string;
}

/** Created exclusively (nothing there is followed or overwritten), mode 0600. */
export function createTemporaryFile(folder: OpenedFolder | string, name: string): TemporaryFile {
  return withFolder(folder, (opened) => {
    const temporaryName = `.${cutUtf8(name, MAX_NAME_PREFIX_BYTES)}.w${writer.id}-${kernelThreadId}.${randomBytes(6).toString("hex")}${TEMPORARY_FILE_SUFFIX}`;
    const fd = openSync(pathInFolder(opened, temporaryName), "wx", 0o600);
    // A folder opened for this call is closed on return: its descriptor's path would name nothing.
    return { fd, name: temporaryName, path: typeof folder === "string" ? join(folder, temporaryName) : pathInFolder(opened, temporaryName) };
  });
}

/** Best effort; never removes `keep`, the file being patched, which may look like a temporary file. */
export function sweepTemporaryFiles(folder: OpenedFolder | string, keep?: string): string[] {
  return withFolder(folder, (opened) => {
    let names: string[];
    try {
      names = readdirSync(opened.base);
    } catch {
      return [];
    }
    const removed: string[] = [];
    const now = Date.now();
    for (const name of names) {
      if (name === keep || !isTemporaryFileName(name) || !temporaryPattern.test(name)) continue;
      const path = pathInFolder(opened, name);
      try {
        if (!isAbandoned(name, path, now)) continue;
        unlinkSync(path);
        removed.push(name);
      } catch {
        // Gone already, or not ours to remove.
      }
    }
    return removed;
  });
}

function withFolder<T>(folder: OpenedFolder | string, use: (opened: OpenedFolder) => T): T {
  if (typeof folder !== "string") return use(folder);
  const opened = openFolder(folder);
  try {
    return use(opened);
  } finally {
    closeFolder(opened);
  }
}

function isAbandoned(name: string, path: string, now: number): boolean {
  const stats = lstatSync(path);
  if (!stats.isFile()) return false;
  if (now - stats.mtimeMs > TEMPORARY_FILE_MAX_AGE_MS) return true;
  const written = writerPattern.exec(name);
  // Only this process's own threads can be proven ended.
  if (written === null || !writer.isShared || kernelThreadId === 0 || written[1] !== writer.id || written[2] === "0") return false;
  return !existsSync(`/proc/self/task/${written[2]}`);
}

function cutUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  return cut.endsWith("\uFFFD") ? cut.slice(0, -1) : cut;
}
