/**
 * Child processes of a pool thread started by its spawn helper
 * (`spawn-helper.ts`, which says why) instead of by the thread itself.
 *
 * {@link routedSpawn} wraps Node's `spawn`: a call the helper can make
 * (a command and its arguments, `cwd`, `env`, `detached`, `windowsHide`,
 * and stdio entries that are each "pipe" or "ignore": what pi's bash, grep
 * and find ask for) returns a {@link RemoteChild}, which behaves as Node's
 * `ChildProcess` does for those calls: `pid` once started (and the `spawn`
 * event), `stdout`/`stderr` streams, `stdin` when piped, `kill()`,
 * `killed`, `exitCode`, `signalCode`, and the `error`, `exit` and `close`
 * events in Node's order. Anything else goes to Node's `spawn` as it came.
 *
 * The helper starts with the thread's first child process (one fork of the
 * pool's process per helper, not one per child), and again after it died.
 * When it dies, the children it had started are killed (SIGKILL) and end as
 * killed; a child whose start it never reported fails (it may have started:
 * it is not started twice), unless the helper died before it read any
 * request, in which case the thread starts the child itself. After
 * {@link maxHelperFailures} helpers in a row that died before they were
 * ready, the thread starts its children itself. `TOOLPOOL_SPAWN_HELPER=0`
 * in the environment turns the helper off.
 *
 * @module
 */
import type { ChildProcess, SpawnOptions, spawn as nodeSpawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { constants as osConstants } from "node:os";
import { PassThrough, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

import {
  errorFields,
  type HelperReport,
  type HelperRequest,
  type HelperStdio,
  type OutputName,
  type SpawnErrorFields,
  type SpawnRequest,
  startReported,
} from "./spawn-protocol.js";

type Spawn = typeof nodeSpawn;

/** How many helpers in a row may die before they are ready until the thread starts its children itself. */
export const maxHelperFailures = 3;

const helperUrl = new URL("./spawn-helper.js", import.meta.url);

const allowedOptions = new Set(["cwd", "env", "stdio", "detached", "windowsHide"]);

/** The request for `spawn(file, args, options)` when the helper can make it; undefined when Node's `spawn` must. */
function requestOf(file: unknown, args: unknown, options: unknown): Omit<SpawnRequest, "id"> | undefined {
  if (typeof file !== "string" || file === "" || file.includes("\0")) return undefined;
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string" && !arg.includes("\0"))) return undefined;
  const given = (options ?? {}) as SpawnOptions;
  if (typeof given !== "object" || given === null) return undefined;
  for (const key of Object.keys(given)) if (!allowedOptions.has(key) && (given as Record<string, unknown>)[key] !== undefined) return undefined;
  if (given.cwd !== undefined && typeof given.cwd !== "string") return undefined;
  if (given.env !== undefined && (typeof given.env !== "object" || given.env === null)) return undefined;
  if (given.detached !== undefined && typeof given.detached !== "boolean") return undefined;
  const stdio = stdioOf(given.stdio);
  if (stdio === undefined) return undefined;
  // As Node's spawn reads an environment: each value as a string, undefined ones left out.
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(given.env ?? process.env)) {
    if (value === undefined) continue;
    const text = `${value}`;
    if (name.includes("\0") || text.includes("\0")) return undefined;
    env[name] = text;
  }
  return { kind: "spawn", file, args: [...args], cwd: given.cwd ?? process.cwd(), env, detached: given.detached ?? false, stdio };
}

function stdioOf(stdio: SpawnOptions["stdio"]): [HelperStdio, HelperStdio, HelperStdio] | undefined {
  const entry = (value: unknown): HelperStdio | undefined =>
    value === undefined || value === null || value === "pipe" ? "pipe" : value === "ignore" ? "ignore" : undefined;
  if (stdio === undefined || typeof stdio === "string") {
    const one = entry(stdio);
    return one === undefined ? undefined : [one, one, one];
  }
  if (!Array.isArray(stdio) || stdio.length > 3) return undefined;
  const all = [entry(stdio[0]), entry(stdio[1]), entry(stdio[2])];
  return all.every((value) => value !== undefined) ? (all as [HelperStdio, HelperStdio, HelperStdio]) : undefined;
}

function spawnError(fields: SpawnErrorFields): Error {
  const { message, ...rest } = fields;
  return Object.assign(new Error(message), rest);
}

/** Throws for a signal Node's `kill` refuses (an unknown name, a number that is no signal's), with Node's code. */
function checkSignal(signal: unknown): void {
  const isKnown =
    typeof signal === "string" ? Object.hasOwn(osConstants.signals, signal) : typeof signal === "number" && Number.isInteger(signal) && signal >= 0;
  if (isKnown) return;
  throw Object.assign(new TypeError(`Unknown signal: ${String(signal)}`), { code: "ERR_UNKNOWN_SIGNAL" });
}

/** What a child was sent before its start was known: replayed to the thread's own child when the helper never started. */
type EarlyRequest = Extract<HelperRequest, { kind: "stdin" | "stdin-end" | "kill" }>;

/**
 * A child process that the spawn helper started (or, when the helper
 * died before it read any request, the thread itself): Node's
 * `ChildProcess` as pi's tools use it. Its events come from
 * {@link RemoteChild.receive}.
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
  /** Until the start is known, what was sent besides the start itself. */
  #early: EarlyRequest[] | undefined = [];
  #native: ChildProcess | undefined;
  #closeArgs: [number | null, NodeJS.Signals | null] | undefined;
  #isClosed = false;
  /** The outputs the helper holds back because their reader here is full. */
  readonly #heldOutputs = new Set<OutputName>();
  /** Whether the request to start this child went out on the helper's channel. */
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

  /** Whether the child has settled: its `close` was received. */
  get isClosed(): boolean {
    return this.#closeArgs !== undefined;
  }

  /** Whether the child was started (a process number is known). */
  get isStarted(): boolean {
    return this.pid !== undefined;
  }

  /**
   * Sends `signal` to the child, as Node's `kill` does. Through the helper,
   * which holds the child's handle, so the signal never reaches another
   * process that was given the number of a child already reaped; before the
   * child's start is known, the helper sends it once the child has started.
   */
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
   * Applies one report of the helper (or of the thread's own fallback
   * child) to this child. What follows the start waits a turn of the event
   * loop, as with Node's own children, whose exit never comes in the tick
   * of their `spawn` event: a caller that awaits the start and then listens
   * (toolpool's bash does) hears the rest, even when the helper's reports
   * of a short command arrived together.
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
        // As Node's children do, but never a crash of the thread where nobody listens any more.
        if (this.listenerCount("error") > 0) this.emit("error", spawnError(report.error));
        return;
      case "data": {
        const stream = report.stream === "stdout" ? this.stdout : this.stderr;
        if (stream === null || stream.destroyed) return;
        // A reader that does not keep up holds this output back in the helper, not here; the other flows on.
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
        // As Node does once the child is gone: output nobody reads is let flow, so that the streams close.
        for (const stream of [this.stdout, this.stderr]) {
          if (stream === null) continue;
          stream.end();
          if (!stream.readableFlowing && stream.listenerCount("data") === 0 && stream.listenerCount("readable") === 0) stream.resume();
        }
        this.#maybeClose();
        return;
    }
  }

  /**
   * Ends this child once its helper is gone. The reports held back for a
   * turn are applied first (the child may have exited already). A child
   * still running is killed (SIGKILL, with its group when it has one) and
   * closes as killed. A child whose start was never reported by a helper
   * that had begun reading requests may have started: it fails, rather than
   * run twice.
   */
  abandon(reason: string): void {
    if (this.#held !== undefined) this.#releaseHeld(this.#held);
    if (this.isClosed) return;
    const { id } = this.request;
    if (this.pid === undefined) {
      this.#early = undefined;
      this.receive({ kind: "error", id, error: { message: `spawn ${this.request.file}: ${reason}` } });
      this.receive({ kind: "close", id, code: null, signal: null });
      return;
    }
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

  /**
   * Starts the child with Node's own `spawn` (the helper died before it
   * read any request) and relays its events; what was sent to the child
   * meanwhile (its input, signals) goes to the new one.
   */
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

  /** Fails the child: its request could not be sent (the channel closed, or the request would not serialize). */
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
      // Destroyed by its reader before the output ended: the helper stops reading it.
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
    if (this.#isClosed || this.#closeArgs === undefined) return;
    if ((this.stdout !== null && !this.stdout.closed) || (this.stderr !== null && !this.stderr.closed)) return;
    this.#isClosed = true;
    this.emit("close", ...this.#closeArgs);
  }
}

/**
 * One thread's spawn helper: started with the first child, started again
 * after it died, given up after {@link maxHelperFailures} failures.
 */
export class SpawnHelper {
  readonly #spawn: Spawn;
  readonly #helperUrl: URL;
  #channel: ChildProcess | undefined;
  #helperPid: number | undefined;
  readonly #children = new Map<number, RemoteChild>();
  #nextId = 1;
  #failures = 0;

  constructor(spawn: Spawn, helper: URL = helperUrl) {
    this.#spawn = spawn;
    this.#helperUrl = helper;
  }

  /** Whether children still go through a helper (false once it failed to start too often). */
  get isEnabled(): boolean {
    return this.#failures < maxHelperFailures;
  }

  /** The helper's process number, once it said it is ready (for tests). */
  get helperPid(): number | undefined {
    return this.#helperPid;
  }

  /** A child started through the helper, or undefined when the helper cannot make this call or is given up. */
  spawn(file: unknown, args: unknown, options: unknown): RemoteChild | undefined {
    if (!this.isEnabled) return undefined;
    const request = requestOf(file, args, options);
    if (request === undefined) return undefined;
    const channel = this.#started();
    const child = new RemoteChild({ ...request, id: this.#nextId++ }, (message) => this.#post(child, message, channel));
    this.#children.set(child.request.id, child);
    child.once("close", () => this.#forget(child));
    if (this.#children.size === 1) this.#setRef(channel, true);
    child.wasSent = this.#post(child, child.request, channel);
    return child;
  }

  #forget(child: RemoteChild): void {
    if (this.#children.get(child.request.id) !== child) return;
    this.#children.delete(child.request.id);
    if (this.#children.size === 0 && this.#channel !== undefined) this.#setRef(this.#channel, false);
  }

  /**
   * The channel to the helper, started if need be: through a shell that
   * starts the helper in the background and exits, so that the helper is
   * not a child of this process (which could not reap it once this thread
   * ended) and runs in a session and process group of its own (`detached`).
   * The channel is the shell's IPC socket, which the helper inherits.
   */
  #started(): ChildProcess {
    if (this.#channel !== undefined) return this.#channel;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const channel = this.#spawn("/bin/sh", ["-c", '"$0" "$@" &', process.execPath, fileURLToPath(this.#helperUrl)], {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
      detached: true,
      env,
      windowsHide: true,
    });
    this.#channel = channel;
    let isReady = false;
    channel.on("message", (report: HelperReport) => {
      if (report.kind !== "ready") {
        this.#children.get(report.id)?.receive(report);
        return;
      }
      isReady = true;
      this.#helperPid = report.pid;
      this.#failures = 0;
    });
    let isGone = false;
    const gone = () => {
      if (isGone) return;
      isGone = true;
      if (!isReady) this.#failures += 1;
      if (this.#channel === channel) {
        this.#channel = undefined;
        this.#helperPid = undefined;
      }
      const children = [...this.#children.values()];
      this.#children.clear();
      for (const child of children) {
        // A helper that never read a request, or never got this one, did not start it: the thread does.
        if (!child.isStarted && (!isReady || !child.wasSent)) child.adopt(this.#spawn);
        else child.abandon("the spawn helper exited before the child's start was reported");
      }
    };
    // Once the last report was read: the channel closes when the helper is gone. (A write to a
    // helper that died fails before its last reports are read; that error decides nothing.)
    channel.on("disconnect", gone);
    channel.on("error", () => {
      if (channel.pid === undefined) gone();
    });
    return channel;
  }

  /** Sends `message` on `channel`; false when it did not go out (the helper is gone, or it would not serialize). */
  #post(child: RemoteChild, message: HelperRequest, channel: ChildProcess): boolean {
    // The helper is gone (its children are handed over then) or a new one runs: this child was not its.
    if (channel !== this.#channel || !channel.connected) return false;
    try {
      channel.send(message);
      return true;
    } catch (error) {
      setImmediate(() => child.fail(error as Error));
      return false;
    }
  }

  #setRef(channel: ChildProcess, isRef: boolean): void {
    const ipc = channel.channel as { ref?: () => void; unref?: () => void } | undefined;
    if (isRef) ipc?.ref?.();
    else ipc?.unref?.();
  }

  /** Ends the helper (its started children are killed): for tests. */
  close(): void {
    const pid = this.#helperPid;
    if (pid !== undefined) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    this.#channel?.disconnect();
  }
}

/**
 * Node's `spawn`, with the calls the helper can make started by `helper`
 * (see the module's description); every other call goes to `spawn`.
 *
 * @example
 * ```ts
 * childProcess.spawn = routedSpawn(childProcess.spawn);
 * syncBuiltinESMExports();
 * ```
 */
export function routedSpawn(spawn: Spawn, helper = new SpawnHelper(spawn)): Spawn {
  const routed = (...call: unknown[]): unknown => {
    const [file, args, options] = call;
    return helper.spawn(file, args, options) ?? (spawn as (...rest: unknown[]) => unknown)(...call);
  };
  return routed as Spawn;
}
