/**
 * A pool thread's child processes, started by its spawn helper
 * (`spawn-helper.ts` says why). Calls the helper can make get a
 * {@link RemoteChild}; a child whose start was never reported by a dead
 * helper fails rather than start twice. `TOOLPOOL_SPAWN_HELPER=0` turns it off.
 * @module
 */
import type { ChildProcess, SpawnOptions, spawn as nodeSpawn } from "node:child_process";
import { fileURLToPath } from "node:url";

import { RemoteChild } from "./remote-child.js";
import { processMarkerPrefix } from "./process-tree.js";
import type { HelperReport, HelperRequest, HelperStdio, SpawnRequest } from "./spawn-protocol.js";

type Spawn = typeof nodeSpawn;

/** Helpers in a row that may die before ready, after which the thread spawns itself. */
export const maxHelperFailures = 3;

const helperUrl = new URL("./spawn-helper.js", import.meta.url);

const allowedOptions = new Set(["cwd", "env", "stdio", "detached", "windowsHide"]);

/** Undefined when Node's `spawn` must make the call. */
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

/**
 * One thread's spawn helper: restarted after it died, given up after
 * {@link maxHelperFailures} failures.
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

  get isEnabled(): boolean {
    return this.#failures < maxHelperFailures;
  }

  get helperPid(): number | undefined {
    return this.#helperPid;
  }

  /** Undefined when the helper cannot make this call or was given up. */
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

  /** Via a shell that backgrounds it and exits, so it is no child of this process. */
  #started(): ChildProcess {
    if (this.#channel !== undefined) return this.#channel;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const helperArgs = [fileURLToPath(this.#helperUrl), String(process.pid), processMarkerPrefix()];
    const channel = this.#spawn("/bin/sh", ["-c", '"$0" "$@" &', process.execPath, ...helperArgs], {
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
    // A write error to a dead helper decides nothing: `disconnect` comes after its last reports.
    channel.on("disconnect", gone);
    channel.on("error", () => {
      if (channel.pid === undefined) gone();
    });
    return channel;
  }

  #post(child: RemoteChild, message: HelperRequest, channel: ChildProcess): boolean {
    // The helper is gone (its children were handed over) or was replaced.
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

  /** For tests: its started children are killed. */
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
 * Node's `spawn`, with the calls the helper can make started by `helper`.
 * @example `childProcess.spawn = routedSpawn(childProcess.spawn); syncBuiltinESMExports();`
 */
export function routedSpawn(spawn: Spawn, helper = new SpawnHelper(spawn)): Spawn {
  const routed = (...call: unknown[]): unknown => {
    const [file, args, options] = call;
    return helper.spawn(file, args, options) ?? (spawn as (...rest: unknown[]) => unknown)(...call);
  };
  return routed as Spawn;
}
