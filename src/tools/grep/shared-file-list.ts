/**
 * Shared-memory protocol of a spread `grep`: the walking thread lists paths
 * in a shared buffer; parts take chunks from a shared counter. Rules:
 * - the list grows by whole chunks until the walk ends; a path is UTF-8
 *   ended by a NUL;
 * - a chunk is taken once (`Atomics.add` on {@link Slot.nextChunk});
 * - once enough is found, or the calling thread is done, {@link Slot.stop}
 *   is set and no one takes another chunk;
 * - every change a waiting part needs bumps {@link Slot.version} then
 *   notifies: parts wait on that slot only.
 *
 * @module
 */

export const Slot = {
  nextChunk: 0,
  linesFound: 1,
  bytesFound: 2,
  /** No one takes another chunk once set. */
  stop: 3,
  /** A multiple of the chunk size until the walk ends. */
  filesListed: 4,
  bytesListed: 5,
  listDone: 6,
  version: 7,
} as const;

export const controlSlots = 8;

export const chunkFiles = 64;

export function createControl(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(controlSlots * Int32Array.BYTES_PER_ELEMENT));
}

export function isControl(value: unknown): value is Int32Array {
  return value instanceof Int32Array && value.buffer instanceof SharedArrayBuffer && value.length === controlSlots;
}

function announce(control: Int32Array): void {
  Atomics.add(control, Slot.version, 1);
  Atomics.notify(control, Slot.version);
}

export function stopAll(control: Int32Array): void {
  Atomics.store(control, Slot.stop, 1);
  announce(control);
}

export function isStopped(control: Int32Array): boolean {
  return Atomics.load(control, Slot.stop) !== 0;
}

/** -1 when none of `chunks` is left or the stop flag is set. */
export function takeChunk(control: Int32Array, chunks: number): number {
  if (isStopped(control)) return -1;
  const index = Atomics.add(control, Slot.nextChunk, 1);
  return index < chunks ? index : -1;
}

/** Past `maxLines` or `maxBytes`, sets the stop flag. */
export function countFound(control: Int32Array, lines: number, bytes: number, maxLines: number, maxBytes: number): void {
  const totalLines = Atomics.add(control, Slot.linesFound, lines) + lines;
  const totalBytes = Atomics.add(control, Slot.bytesFound, bytes) + bytes;
  if (totalLines > maxLines || totalBytes > maxBytes) stopAll(control);
}

/** The walking thread's side: lists whole chunks as the walk finds them. */
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

  get listed(): number {
    return this.#listed;
  }

  /** From the chunk of a path that did not fit on, nothing more is listed: the calling thread searches it. */
  get isFull(): boolean {
    return this.#isFull;
  }

  /** False once the stop flag is set: the walk may stop. */
  publish(paths: readonly string[]): boolean {
    if (isStopped(this.control)) return false;
    const whole = paths.length - (paths.length % chunkFiles);
    if (!this.#isFull && whole > this.#listed) this.#listUpTo(paths, whole);
    return true;
  }

  /** `paths` undefined when the walk failed. */
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

export class FileListReader {
  readonly #control: Int32Array;
  readonly #paths: SharedArrayBuffer;
  readonly paths: string[] = [];
  #decoded = 0;

  constructor(control: Int32Array, paths: SharedArrayBuffer) {
    this.#control = control;
    this.#paths = paths;
  }

  /** Waits until chunk `index` is listed, the list ended or stop is set; undefined once `deadline` (`performance.now()`) passed. */
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

  update(): void {
    const listedBytes = Atomics.load(this.#control, Slot.bytesListed);
    if (listedBytes <= this.#decoded) return;
    const names = Buffer.from(this.#paths, this.#decoded, listedBytes - this.#decoded)
      .toString("utf8")
      .split("\0");
    // The last piece follows the last NUL: empty.
    for (let i = 0; i < names.length - 1; i++) this.paths.push(names[i]!);
    this.#decoded = listedBytes;
  }
}
