/**
 * The temporary files `patch` writes beside a file before renaming them over
 * it, and their removal when their writer is gone.
 *
 * A call past its time limit (or its abort grace) has its worker thread
 * terminated wherever it is, so a write cut short never reaches its own
 * cleanup. Nothing on that thread can be relied on afterwards; instead each
 * temporary file names the thread that writes it (`.NAME.PID-TID.RANDOM.toolpool.tmp`),
 * and every `patch` that writes into a folder first removes the temporary
 * files there whose thread has ended (Linux: `/proc/self/task/TID` is gone)
 * or that have not changed for {@link TEMPORARY_FILE_MAX_AGE_MS} (a thread
 * that cannot be checked, another process, an older naming). Until then the
 * tools that walk folders (`grep`) skip every `*.toolpool.tmp` file.
 *
 * Loaded inside a worker thread; imports only Node built-ins.
 *
 * @module
 */
// Synchronous file calls on purpose: see the note in diff.ts.
import { randomBytes } from "node:crypto";
import { existsSync, lstatSync, openSync, readdirSync, readlinkSync, unlinkSync } from "node:fs";
import { join } from "node:path";

/** How every temporary file toolpool writes ends. */
export const TEMPORARY_FILE_SUFFIX = ".toolpool.tmp";

/**
 * A temporary file untouched for this long is removed by the next `patch`
 * that writes into its folder, whoever wrote it: no write of at most 8 MiB
 * stays unfinished that long, and one that did would only see its rename fail.
 */
export const TEMPORARY_FILE_MAX_AGE_MS = 10 * 60 * 1000;

/** Bytes of the file's own name kept in its temporary name: names are limited to 255 bytes. */
const MAX_NAME_PREFIX_BYTES = 128;

/** `.PID-TID.RANDOM.toolpool.tmp` at the end of a temporary name, with the writer's process and thread. */
const writerPattern = /\.(\d+)-(\d+)\.[0-9a-f]{12}\.toolpool\.tmp$/;
/** Any temporary name toolpool gives, this one's or an older one's (`.NAME.RANDOM.toolpool.tmp`). */
const temporaryPattern = /^\..*\.[0-9a-f]{12}\.toolpool\.tmp$/s;

/**
 * This thread's id in the kernel (Linux), which `/proc/self/task` lists while
 * the thread runs; 0 where it cannot be known (no `/proc`, or a `/proc` of
 * another pid namespace).
 */
const kernelThreadId = ((): number => {
  try {
    const [pid, task, tid] = readlinkSync("/proc/thread-self").split("/");
    return pid === String(process.pid) && task === "task" && tid !== undefined && /^\d+$/.test(tid) ? Number(tid) : 0;
  } catch {
    return 0;
  }
})();

/** Whether `name` is one of toolpool's temporary files: the tools that walk folders skip them. */
export function isTemporaryFileName(name: string): boolean {
  return name.startsWith(".") && name.endsWith(TEMPORARY_FILE_SUFFIX);
}

/** A temporary file just created, open for writing. */
export interface TemporaryFile {
  readonly fd: number;
  readonly path: string;
}

/**
 * Creates a temporary file in `dir` for the file named `name`, exclusively
 * (nothing already there is followed or overwritten), readable and writable
 * by its creator only. Its name says which process and thread write it.
 */
export function createTemporaryFile(dir: string, name: string): TemporaryFile {
  const path = join(
    dir,
    `.${cutUtf8(name, MAX_NAME_PREFIX_BYTES)}.${process.pid}-${kernelThreadId}.${randomBytes(6).toString("hex")}${TEMPORARY_FILE_SUFFIX}`,
  );
  return { fd: openSync(path, "wx", 0o600), path };
}

/**
 * Removes the temporary files in `dir` whose writer is gone (see the
 * module's note). Best effort: what cannot be read or removed stays.
 * Returns the names removed.
 */
export function sweepTemporaryFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  const now = Date.now();
  for (const name of names) {
    if (!isTemporaryFileName(name) || !temporaryPattern.test(name)) continue;
    const path = join(dir, name);
    try {
      if (!isAbandoned(name, path, now)) continue;
      unlinkSync(path);
      removed.push(name);
    } catch {
      // Gone already (renamed into place, or removed by another sweep), or not ours to remove.
    }
  }
  return removed;
}

function isAbandoned(name: string, path: string, now: number): boolean {
  const stats = lstatSync(path);
  if (!stats.isFile()) return false;
  if (now - stats.mtimeMs > TEMPORARY_FILE_MAX_AGE_MS) return true;
  const writer = writerPattern.exec(name);
  if (writer === null || kernelThreadId === 0 || Number(writer[1]) !== process.pid || writer[2] === "0") return false;
  // A thread of this process that has ended, terminated mid-write.
  return !existsSync(`/proc/self/task/${writer[2]}`);
}

/** The longest start of `text` within `maxBytes` UTF-8 bytes, without half a character. */
function cutUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  return cut.endsWith("\uFFFD") ? cut.slice(0, -1) : cut;
}
