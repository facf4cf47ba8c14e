/**
 * The settings of a coding tool's module instance, and what each call adds.
 *
 * As for the built-in tools (see `../workspace.ts`), a tool's settings travel
 * in its module URL's query (`coding-tool-worker.js?tool=bash&…`): Node keys
 * ES modules by their full URL, so each tool of each `codingTools` call is a
 * module instance of its own in every worker, and the worker protocol stays
 * the same. What differs per call, the session's workspace, comes with the
 * call as `ctx.context` (a {@link CodingCallContext}).
 *
 * @module
 */

import type { FdShortfall } from "./fd-requirement.js";

/** pi's coding tools that `codingTools` offers. */
export type CodingToolName = "read" | "bash" | "edit" | "write" | "grep" | "find" | "ls";

/** Every coding tool name, in pi's order. */
export const codingToolNames: readonly CodingToolName[] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/** The deadlines of bash calls, in milliseconds. */
interface BashDeadlineSettings {
  /** The deadline of a call that gives no `timeout` of its own. */
  readonly timeoutMs: number;
  /** The latest deadline of any call, its own `timeout` included. */
  readonly maxTimeoutMs: number;
  /** How long processes that ignore SIGTERM have before SIGKILL. */
  readonly graceMs: number;
  /** Whether background processes outlive the call that started them, as in pi. */
  readonly keepBackground: boolean;
  /** The total size the runtime's full-output files are held within (`bash-output-files.ts`). */
  readonly outputFilesMaxBytes: number;
}

/** What a coding tool's module instance was made for. */
interface CodingToolSettings {
  readonly tool: CodingToolName;
  /** Whether path arguments must stay inside the workspace. */
  readonly confine: boolean;
  readonly bash: BashDeadlineSettings;
  /** pi's options of this tool (plain data), as given to its factory. */
  readonly piOptions: Readonly<Record<string, unknown>>;
  /** A module whose default export adds options with functions (a spawn hook, operations): a `file:` URL. */
  readonly piOptionsModule?: string;
  /** The entry module of the pi-coding-agent to run (`file:` URL); absent: the one toolpool resolves. */
  readonly piEntry?: string;
  /** Whether each call brings its workspace and pi session in its arguments (`call-scope.ts`) rather than in its context. */
  readonly isCallScoped: boolean;
  /** find only: what the fd pi's find runs lacks, found when `codingTools` was called (`fd-requirement.ts`); absent when nothing does. */
  readonly fdShortfall?: FdShortfall;
}

/**
 * What pi's bash tells a command of the pi session it runs for, in its
 * environment (`PI_SESSION_ID`, `PI_SESSION_FILE`, `PI_PROVIDER`,
 * `PI_MODEL`, `PI_REASONING_LEVEL`): plain data, the part of pi's
 * extension context that pi's bash reads.
 */
export interface PiSessionInfo {
  /** The session's id. */
  readonly id: string;
  /** The session's file, when it has one. */
  readonly file?: string;
  /** The model's provider and id, when a model is set. */
  readonly model?: { readonly provider: string; readonly id: string };
  /** The thinking level, when pi gives one. */
  readonly thinkingLevel?: string;
}

/** What a call of a coding tool learns of its session, computed on the main thread. */
export interface CodingCallContext {
  /** The session's workspace, absolute, as given: pi's `cwd` for the call. */
  readonly cwd: string;
  /** Its real path (symlinks resolved): the bound of `confine`. */
  readonly root: string;
  /** The pi session the call runs for, when the runtime serves one (bash exports it to the command as pi does). */
  readonly piSession?: PiSessionInfo;
  /**
   * The session's folder of bash's full-output files (`bash-output-files.ts`),
   * for bash (which writes them there) and read (which, confined, may read
   * them); absent for the other tools.
   */
  readonly outputFolder?: string;
}

const settingsParam = "settings";

/** `moduleUrl` with `settings` in its query. */
export function toCodingModuleUrl(moduleUrl: URL, settings: CodingToolSettings): URL {
  const url = new URL(moduleUrl.href);
  url.searchParams.set(settingsParam, JSON.stringify(settings));
  return url;
}

/** The settings a coding tool's module instance was loaded with. */
export function codingSettingsFromUrl(moduleUrl: string): CodingToolSettings {
  const text = new URL(moduleUrl).searchParams.get(settingsParam);
  if (text === null) throw new Error("This module runs pi's coding tools for codingTools(): load it through codingTools(), not on its own");
  return JSON.parse(text) as CodingToolSettings;
}
