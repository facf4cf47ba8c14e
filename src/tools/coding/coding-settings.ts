/**
 * A coding tool's settings travel in its module URL's query (Node keys ES
 * modules by URL: one instance per tool per `codingTools` call).
 * @module
 */

import type { FdShortfall } from "./fd-requirement.js";
import type { ResolvedSandbox } from "./sandbox.js";

/** pi's coding tools that `codingTools` offers. */
export type CodingToolName = "read" | "bash" | "edit" | "write" | "grep" | "find" | "ls";

export const codingToolNames: readonly CodingToolName[] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

interface BashDeadlineSettings {
  readonly timeoutMs: number;
  readonly maxTimeoutMs: number;
  readonly graceMs: number;
  readonly keepBackground: boolean;
  readonly outputFilesMaxBytes: number;
}

interface CodingToolSettings {
  readonly tool: CodingToolName;
  readonly confine: boolean;
  /** Absent: commands run without one. */
  readonly sandbox?: ResolvedSandbox;
  readonly bash: BashDeadlineSettings;
  readonly piOptions: Readonly<Record<string, unknown>>;
  readonly piOptionsModule?: string;
  /** Absent: the pi toolpool resolves. */
  readonly piEntry?: string;
  /** Workspace and pi session come in each call's arguments (`call-scope.ts`). */
  readonly isCallScoped: boolean;
  /** find only: what pi's fd lacks (`fd-requirement.ts`). */
  readonly fdShortfall?: FdShortfall;
}

/** The pi session a call runs for, which pi's bash tells the command (`PI_SESSION_ID`…): plain data. */
export interface PiSessionInfo {
  readonly id: string;
  readonly file?: string;
  readonly model?: { readonly provider: string; readonly id: string };
  readonly thinkingLevel?: string;
}

/** Computed on the main thread. */
export interface CodingCallContext {
  /** Absolute, as given: pi's `cwd`. */
  readonly cwd: string;
  /** Its real path (symlinks resolved): the bound of `confine`. */
  readonly root: string;
  /** The folder of other sessions' workspaces (real path), which a sandbox hides but for this one. */
  readonly sessionsFolder?: string;
  readonly piSession?: PiSessionInfo;
  /** bash and read only: the session's folder of bash's full-output files. */
  readonly outputFolder?: string;
}

const settingsParam = "settings";

export function toCodingModuleUrl(moduleUrl: URL, settings: CodingToolSettings): URL {
  const url = new URL(moduleUrl.href);
  url.searchParams.set(settingsParam, JSON.stringify(settings));
  return url;
}

export function codingSettingsFromUrl(moduleUrl: string): CodingToolSettings {
  const text = new URL(moduleUrl).searchParams.get(settingsParam);
  if (text === null) throw new Error("This module runs pi's coding tools for codingTools(): load it through codingTools(), not on its own");
  return JSON.parse(text) as CodingToolSettings;
}
