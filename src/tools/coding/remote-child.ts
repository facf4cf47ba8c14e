/**
 * A pool thread's child process as its spawn helper reports it: Node's
 * `ChildProcess`, for the calls pi's bash, grep and find make.
 * @module
 */
import type { ChildProcess, spawn as nodeSpawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { constants as osConstants } from "node:os";
import { PassThrough, Writable } from "node:stream";

import {
  errorFields,
  type HelperReport,
  type HelperRequest,
  type OutputName,
  type SpawnErrorFields,
  type SpawnRequest,
  startReported,
} from "./spawn-protocol.js";

type Spawn = typeof nodeSpawn;

function spawnError(fields: SpawnErrorFields): Error {
  const { message, ...rest } = fields;
  return Object.assign(new Error(message), rest);
}

function checkSignal(signal: unknown): void {
  const isKnown =
    typeof signal === "string" ? Object.hasOwn(osConstants.signals, signal) : typeof signal === "number" && Number.isInteger(signal) && signal >= 0;
  if (isKnown) return;
  throw Object.assign(new TypeError(`Unknown signal: ${String(signal)}`), { code: "ERR_UNKNOWN_SIGNAL" });
}

/** Replayed to the thread's own child if the helper never started it. */
type EarlyRequest = Extract<HelperRequest, { kind: "stdin" | "stdin-end" | "kill" }>;

/**
 * A child the spawn helper started (or the thread, if the helper died before
 * reading any request), driven by {@link RemoteChild.receive}.
 */
export class RemoteChild extends EventEmitter {
  pid: number | undefined = undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  killed = false;
  readonly spawnfile: string;
  readonly spawnargs: string[];
  readonly stdin: Writable | null;
  readonly stdout: PassThrough | null;
  readonly stderr: PassThrough | null;
  readonly stdio: [Writable | null, PassThrough | null, PassThrough | null];
  readonly request: SpawnRequest;
  #send: (request: HelperRequest) => void;
  #early: EarlyRequest[] | undefined = [];
  #native: ChildProcess | undefined;
  #closeArgs: [number | null, NodeJS.Signals | null] | undefined;
  #isCloseEmitted = false;
  readonly #heldOutputs = new Set<OutputName>();
  wasSent = false;
  #held: HelperReport[] | undefined;

  constructor(request: SpawnRequest, send: (request: HelperRequest) => void) {
    super();
    this.request = request;
    this.#send = send;
    this.spawnfile = request.file;
    this.spawnargs = [request.file, ...request.args];
    this.stdin = request.stdio[0] === "pipe" ? this.#stdinWriter() : null;
    this.stdout = request.stdio[1] === "pipe" ? this.#outputStream("stdout") : null;
    this.stderr = request.stdio[2] === "pipe" ? this.#outputStream("stderr") : null;
    this.stdio = [this.stdin, this.stdout, this.stderr];
  }

  get isClosed(): boolean {
    return this.#closeArgs !== undefined;
  }

  get isStarted(): boolean {
    return this.pid !== undefined;
  }

  /** Through the helper, which holds the handle: a reused pid is never signalled. */
  kill(signal: NodeJS.Signals | number = "SIGTERM"): boolean {
    checkSignal(signal);
    if (this.#native !== undefined) {
      const sent = this.#native.kill(signal);
      if (sent) this.killed = true;
      return sent;
    }
    if (this.isClosed || this.exitCode !== null || this.signalCode !== null) return false;
    this.#request({ kind: "kill", id: this.request.id, signal });
    this.killed = true;
    return true;
  }

  ref(): void {}
  unref(): void {}

  /**
   * Applies one report. What follows the start waits a turn, as with Node's own
   * children, so a caller that awaits `spawn` and then listens hears the rest.
   */
  receive(report: HelperReport): void {
    if (this.#held !== undefined) {
      this.#held.push(report);
      return;
    }
    this.#apply(report);
    if (report.kind !== "spawned") return;
    const held: HelperReport[] = [];
    this.#held = held;
    setImmediate(() => this.#releaseHeld(held));
  }

  #releaseHeld(held: HelperReport[]): void {
    if (this.#held !== held) return;
    this.#held = undefined;
    for (const next of held) this.receive(next);
  }

  #apply(report: HelperReport): void {
    switch (report.kind) {
      case "ready":
        return;
      case "spawned":
        this.pid = report.pid;
        this.#early = undefined;
        this.emit("spawn");
        return;
      case "error":
        // Never crash the thread where nobody listens any more.
        if (this.listenerCount("error") > 0) this.emit("error", spawnError(report.error));
        return;
      case "data": {
        const stream = report.stream === "stdout" ? this.stdout : this.stderr;
        if (stream === null || stream.destroyed) return;
        // A slow reader holds this output back in the helper; the other flows on.
        if (!stream.write(report.data) && !this.#heldOutputs.has(report.stream) && this.#native === undefined) {
          const name = report.stream;
          this.#heldOutputs.add(name);
          this.#request({ kind: "pause", id: this.request.id, stream: name });
          stream.once("drain", () => {
            this.#heldOutputs.delete(name);
            if (!this.isClosed) this.#request({ kind: "resume", id: this.request.id, stream: name });
          });
        }
        return;
      }
      case "end":
        (report.stream === "stdout" ? this.stdout : this.stderr)?.end();
        return;
      case "exit":
        this.exitCode = report.code;
        this.signalCode = report.signal;
        this.emit("exit", report.code, report.signal);
        return;
      case "close":
        this.#closeArgs = [report.code, report.signal];
        // A child that never started closes without an exit, its exit code Node's negative error number.
        if (this.exitCode === null && this.signalCode === null) {
          this.exitCode = report.code;
          this.signalCode = report.signal;
        }
        // As Node does: unread output flows so that the streams close.
        for (const stream of [this.stdout, this.stderr]) {
          if (stream === null) continue;
          stream.end();
          if (!stream.readableFlowing && stream.listenerCount("data") === 0 && stream.listenerCount("readable") === 0) stream.resume();
        }
        this.#maybeClose();
        return;
    }
  }

  /** Ends this child once its helper is gone; an unreported start fails rather than run twice. */
  abandon(reason: string): void {
    if (this.#held !== undefined) this.#releaseHeld(this.#held);
    if (this.isClosed) return;
    if (this.pid === undefined) {
      this.fail(new Error(`spawn ${this.request.file}: ${reason}`));
      return;
    }
    const { id } = this.request;
    if (this.exitCode === null && this.signalCode === null) {
      for (const target of this.request.detached ? [-this.pid, this.pid] : [this.pid]) {
        try {
          process.kill(target, "SIGKILL");
        } catch {}
      }
      this.receive({ kind: "exit", id, code: null, signal: "SIGKILL" });
    }
    this.receive({ kind: "close", id, code: this.exitCode, signal: this.signalCode });
  }

  /** Starts the child with Node's own `spawn`, replaying what was sent meanwhile. */
  adopt(spawn: Spawn): void {
    const { request } = this;
    const early = this.#early ?? [];
    this.#early = undefined;
    const native = startReported(spawn, request, (message) => this.receive(message));
    if (native === undefined) return;
    this.#native = native;
    this.#send = (message) => {
      if (message.kind === "stdin") native.stdin?.write(message.data);
      else if (message.kind === "stdin-end") native.stdin?.end();
      else if (message.kind === "kill") native.kill(message.signal);
      else if (message.kind === "release") native[message.stream]?.destroy();
    };
    for (const message of early) this.#send(message);
  }

  fail(error: Error): void {
    if (this.isClosed) return;
    const { id } = this.request;
    this.#early = undefined;
    this.receive({ kind: "error", id, error: errorFields(error) });
    this.receive({ kind: "close", id, code: null, signal: null });
  }

  #request(message: EarlyRequest | Extract<HelperRequest, { kind: "pause" | "resume" }>): void {
    if (this.#early !== undefined && message.kind !== "pause" && message.kind !== "resume") this.#early.push(message);
    this.#send(message);
  }

  #outputStream(name: OutputName): PassThrough {
    const stream = new PassThrough();
    stream.on("close", () => {
      if (!stream.readableEnded && this.#closeArgs === undefined) this.#send({ kind: "release", id: this.request.id, stream: name });
      this.#maybeClose();
    });
    return stream;
  }

  #stdinWriter(): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.#request({ kind: "stdin", id: this.request.id, data: chunk });
        callback();
      },
      final: (callback) => {
        this.#request({ kind: "stdin-end", id: this.request.id });
        callback();
      },
    });
  }

  #maybeClose(): void {
    if (this.#isCloseEmitted || this.#closeArgs === undefined) return;
    if ((this.stdout !== null && !this.stdout.closed) || (this.stderr !== null && !this.stderr.closed)) return;
    this.#isCloseEmitted = true;
    this.emit("close", ...this.#closeArgs);
  }
}
