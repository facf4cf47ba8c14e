/**
 * The temporary files `patch` writes beside a file before renaming them over
 * it, and their removal when their writer is gone.
 *
 * A call past its time limit (or its abort grace) has its worker thread
 * terminated wherever it is, so a write cut short never reaches its own
 * cleanup. Nothing on that thread can be relied on afterwards; instead each
 * temporary file names the process and the thread that write it
 * (`.NAME.wWRITER-TID.RANDOM.toolpool.tmp`), and every `patch` that writes
 * into a folder first removes the temporary files there whose writer is
 * proven gone.
 *
 * A process id proves nothing on a shared volume: two containers both run
 * node as pid 1, and the thread ids of one mean nothing in the other's
 * `/proc`. So WRITER is an id of this process that no other process on any
 * host shares (a digest of the boot id, the pid namespace, the pid and the
 * process's start time; random per thread where those cannot be read), and a
 * thread's end is judged only for files of this very process (Linux:
 * `/proc/self/task/TID` is gone). A file of any other writer (another
 * process, another pid namespace, another host, an older naming) is proven
 * gone only by its modification time: a writer writes its whole file at once,
 * so one untouched for {@link TEMPORARY_FILE_MAX_AGE_MS} has stopped (and
 * were it only stuck, its rename would fail, losing nothing). Until then the
 * tools that walk folders (`grep`) skip every `*.toolpool.tmp` file.
 *
 * Loaded inside a worker thread; imports only Node built-ins and its siblings.
 *
 * @module
 */
// Synchronous file calls on purpose: see the note in diff.ts.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { closeFolder, openFolder, pathInFolder, type OpenedFolder } from "./opened-folder.js";

/** How every temporary file toolpool writes ends. */
const TEMPORARY_FILE_SUFFIX = ".toolpool.tmp";

/**
 * A temporary file of another writer untouched for this long is removed by
 * the next `patch` that writes into its folder: no write of at most 8 MiB
 * stays unfinished that long, and one that did would only see its rename fail.
 */
export const TEMPORARY_FILE_MAX_AGE_MS = 10 * 60 * 1000;

/** Bytes of the file's own name kept in its temporary name: names are limited to 255 bytes. */
const MAX_NAME_PREFIX_BYTES = 128;

/** `.wWRITER-TID.RANDOM.toolpool.tmp` at the end of a temporary name: the writing process and its thread. */
const writerPattern = /\.w([0-9a-f]{16})-(\d+)\.[0-9a-f]{12}\.toolpool\.tmp$/;
/** Any temporary name toolpool gives, this one's or an older one's (`.NAME.PID-TID.RANDOM…`, `.NAME.RANDOM…`). */
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

/**
 * This process's writer id, the same on each of its threads and unlike any
 * other process's, in this pid namespace or another, on this host or another
 * sharing the volume; `isShared` is false where it had to be random (then
 * only age removes even this process's files).
 */
const writer = ((): { id: string; isShared: boolean } => {
  try {
    const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const pidNamespace = readlinkSync("/proc/self/ns/pid");
    const stat = readFileSync("/proc/self/stat", "utf8");
    // Field 22 (start time), counted after the command name, which may hold spaces and parentheses.
    const startTime = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    if (bootId === "" || startTime === undefined) throw new Error("no process identity");
    const id = createHash("sha256").update(`${bootId}\0${pidNamespace}\0${process.pid}\0${startTime}`).digest("hex").slice(0, 16);
    return { id, isShared: true };
  } catch {
    return { id: randomBytes(8).toString("hex"), isShared: false };
  }
})();

/** Whether `name` is one of toolpool's temporary files: the tools that walk folders skip them. */
export function isTemporaryFileName(name: string): boolean {
  return name.startsWith(".") && name.endsWith(TEMPORARY_FILE_SUFFIX);
}

/** A temporary file just created, open for writing. */
interface TemporaryFile {
  readonly fd: number;
  /** Its name in its folder. */
  readonly name: string;
  /** Its path: through the folder's descriptor where the platform allows (see opened-folder.ts), unless the folder was given by path. */
  readonly path: string;
}

/**
 * Creates a temporary file in `folder` for the file named `name`,
 * exclusively (nothing already there is followed or overwritten), readable
 * and writable by its creator only. Its name says which process and thread
 * write it. A folder given by path is opened for the call (see
 * opened-folder.ts).
 */
export function createTemporaryFile(folder: OpenedFolder | string, name: string): TemporaryFile {
  return withFolder(folder, (opened) => {
    const temporaryName = `.${cutUtf8(name, MAX_NAME_PREFIX_BYTES)}.w${writer.id}-${kernelThreadId}.${randomBytes(6).toString("hex")}${TEMPORARY_FILE_SUFFIX}`;
    const fd = openSync(pathInFolder(opened, temporaryName), "wx", 0o600);
    // A folder opened for this call only is closed on return: its descriptor's path would name nothing.
    return { fd, name: temporaryName, path: typeof folder === "string" ? join(folder, temporaryName) : pathInFolder(opened, temporaryName) };
  });
}

/**
 * Removes the temporary files in `folder` whose writer is gone (see the
 * module's note), never the one named `keep` (the file being patched, which
 * may look like a temporary file). Best effort: what cannot be read or
 * removed stays. Returns the names removed.
 */
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
        // Gone already (renamed into place, or removed by another sweep), or not ours to remove.
      }
    }
    return removed;
  });
}

/** Runs `use` on `folder`, opening (and then closing) it when given by path. */
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
  // Only this process's own threads can be proven ended; any other writer waits for its age.
  if (written === null || !writer.isShared || kernelThreadId === 0 || written[1] !== writer.id || written[2] === "0") return false;
  // A thread of this process that has ended, terminated mid-write.
  return !existsSync(`/proc/self/task/${written[2]}`);
}

/** The longest start of `text` within `maxBytes` UTF-8 bytes, without half a character. */
function cutUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  return cut.endsWith("\uFFFD") ? cut.slice(0, -1) : cut;
}
