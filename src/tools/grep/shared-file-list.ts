/**
 * The shared-memory protocol of a spread `grep`: the call's own thread walks
 * the tree and lists the files it finds in a shared buffer, while parts on
 * other threads take chunks of that list from a shared counter, search them,
 * and add what they found to shared totals. No message crosses threads until
 * a part returns; everything else goes through one `Int32Array` of named
 * slots and one byte buffer of paths.
 *
 * Rules:
 * - the list grows by whole chunks ({@link chunkFiles} files) until the walk
 *   ends, which lists the rest; a path is UTF-8 ended by a NUL (no path holds
 *   one);
 * - a chunk is taken once (`Atomics.add` on {@link Slot.nextChunk}), by
 *   whoever reaches it first, the walking thread included;
 * - once enough lines or bytes are found, or the calling thread is done,
 *   {@link Slot.stop} is set and no one takes another chunk;
 * - every change a waiting part needs to see bumps {@link Slot.version} and
 *   then notifies it: parts wait on that slot, never on the others.
 *
 * @module
 */

/** The slots of the control array. */
export const Slot = {
  /** The next chunk to take. */
  nextChunk: 0,
  /** Output lines found so far, by every thread. */
  linesFound: 1,
  /** Bytes of output found so far. */
  bytesFound: 2,
  /** Set once enough was found, or the call's own thread stopped: no one takes another chunk. */
  stop: 3,
  /** Files listed so far (a multiple of the chunk size until the walk ends). */
  filesListed: 4,
  /** Bytes of the path buffer holding them. */
  bytesListed: 5,
  /** Set once no more files will be listed. */
  listDone: 6,
  /** Bumped whenever any of the above changes that a waiting part needs to see: what parts wait on. */
  version: 7,
} as const;

/** Slots in the control array. */
export const controlSlots = 8;

/** Files per chunk: the unit a thread takes at a time. */
export const chunkFiles = 64;

/** A control array: {@link controlSlots} slots of shared memory. */
export function createControl(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(controlSlots * Int32Array.BYTES_PER_ELEMENT));
}

/** Whether `value` is a control array (as a part receives it from another thread). */
export function isControl(value: unknown): value is Int32Array {
  return value instanceof Int32Array && value.buffer instanceof SharedArrayBuffer && value.length === controlSlots;
}

/** Bumps the version and wakes every part waiting on it. */
function announce(control: Int32Array): void {
  Atomics.add(control, Slot.version, 1);
  Atomics.notify(control, Slot.version);
}

/** Sets the stop flag and wakes the parts waiting for the walk. */
export function stopAll(control: Int32Array): void {
  Atomics.store(control, Slot.stop, 1);
  announce(control);
}

export function isStopped(control: Int32Array): boolean {
  return Atomics.load(control, Slot.stop) !== 0;
}

/** The next chunk from the shared counter, or -1 when none of `chunks` is left or the stop flag is set. */
export function takeChunk(control: Int32Array, chunks: number): number {
  if (isStopped(control)) return -1;
  const index = Atomics.add(control, Slot.nextChunk, 1);
  return index < chunks ? index : -1;
}

/**
 * Adds one file's output to the shared totals; past `maxLines` lines or
 * `maxBytes` bytes, sets the stop flag.
 */
export function countFound(control: Int32Array, lines: number, bytes: number, maxLines: number, maxBytes: number): void {
  const totalLines = Atomics.add(control, Slot.linesFound, lines) + lines;
  const totalBytes = Atomics.add(control, Slot.bytesFound, bytes) + bytes;
  if (totalLines > maxLines || totalBytes > maxBytes) stopAll(control);
}

/**
 * The walking thread's side: lists file paths in the shared buffer as the
 * walk finds them, whole chunks at a time, and ends the list.
 */
export class FileListWriter {
  readonly control: Int32Array;
  readonly paths: SharedArrayBuffer;
  readonly #bytes: Buffer;
  #listed = 0;
  #written = 0;
  #isFull = false;

  constructor(control: Int32Array, paths: SharedArrayBuffer) {
    this.control = control;
    this.paths = paths;
    this.#bytes = Buffer.from(paths);
  }

  /** Files listed so far. */
  get listed(): number {
    return this.#listed;
  }

  /** Whether a path did not fit: from its chunk on, nothing more is listed (the calling thread searches the rest). */
  get isFull(): boolean {
    return this.#isFull;
  }

  /**
   * Lists `paths` beyond those already listed, up to the last whole chunk;
   * false once the stop flag is set (enough was found: the walk may stop).
   */
  publish(paths: readonly string[]): boolean {
    if (isStopped(this.control)) return false;
    const whole = paths.length - (paths.length % chunkFiles);
    if (!this.#isFull && whole > this.#listed) this.#listUpTo(paths, whole);
    return true;
  }

  /** The walk has ended: lists the rest of `paths` (none when the walk failed) and tells the parts. */
  end(paths: readonly string[] | undefined): void {
    if (paths !== undefined && !this.#isFull && paths.length > this.#listed) this.#listUpTo(paths, paths.length);
    Atomics.store(this.control, Slot.listDone, 1);
    announce(this.control);
  }

  #listUpTo(paths: readonly string[], end: number): void {
    const capacity = this.#bytes.length;
    for (let i = this.#listed; i < end; i++) {
      const path = paths[i]!;
      if (this.#written + Buffer.byteLength(path, "utf8") + 1 > capacity) {
        // The rest is not listed, from the start of this chunk on.
        this.#isFull = true;
        end = i - (i % chunkFiles);
        break;
      }
      this.#written += this.#bytes.write(path, this.#written, "utf8");
      this.#bytes[this.#written++] = 0;
    }
    this.#listed = Math.max(this.#listed, end);
    Atomics.store(this.control, Slot.bytesListed, this.#written);
    Atomics.store(this.control, Slot.filesListed, this.#listed);
    announce(this.control);
  }
}

/** A part's side: the listed paths, decoded as they come. */
export class FileListReader {
  readonly #control: Int32Array;
  readonly #paths: SharedArrayBuffer;
  /** The paths decoded so far, in list order. */
  readonly paths: string[] = [];
  #decoded = 0;

  constructor(control: Int32Array, paths: SharedArrayBuffer) {
    this.#control = control;
    this.#paths = paths;
  }

  /**
   * Waits until chunk `index` is listed, the list has ended, or the stop flag
   * is set; checks `signal` between waits of `pollMs`. Returns the files
   * listed then, or undefined once `deadline` (a `performance.now()` time)
   * has passed with the chunk still unlisted.
   */
  waitForChunk(index: number, signal: AbortSignal, pollMs: number, deadline: number): number | undefined {
    const control = this.#control;
    for (;;) {
      const version = Atomics.load(control, Slot.version);
      const isDone = Atomics.load(control, Slot.listDone) !== 0;
      const listed = Atomics.load(control, Slot.filesListed);
      if (isDone || listed >= (index + 1) * chunkFiles || isStopped(control)) return listed;
      signal.throwIfAborted();
      if (performance.now() >= deadline) return undefined;
      Atomics.wait(control, Slot.version, version, pollMs);
    }
  }

  /** Decodes the paths listed since the last call into {@link paths}. */
  update(): void {
    const listedBytes = Atomics.load(this.#control, Slot.bytesListed);
    if (listedBytes <= this.#decoded) return;
    const names = Buffer.from(this.#paths, this.#decoded, listedBytes - this.#decoded)
      .toString("utf8")
      .split("\0");
    // The last piece is what follows the last NUL: nothing.
    for (let i = 0; i < names.length - 1; i++) this.paths.push(names[i]!);
    this.#decoded = listedBytes;
  }
}
