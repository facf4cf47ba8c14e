/**
 * Where bash's full-output files go. pi leaves them in `os.tmpdir()` for
 * ever, readable by later sessions and out of a confined `read`'s reach.
 * Here: a 0700 folder per runtime and session, removed at close, bounded in
 * size (oldest first, never the latest call's file).
 * @module
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import { basename, dirname, join, sep } from "node:path";

const outputFileNameWhole = /^pi-bash-[0-9a-f]{16}\.log$/;
/** Closes pi's `[... Full output: <path>]` note. */
const outputFileNameAtStart = /^(pi-bash-[0-9a-f]{16}\.log)\]/;

/** One `codingTools` set's folder (main thread), while any runtime has it. */
export class BashOutputFolder {
  #folder: string | undefined;
  #runtimes = 0;
  #onExit: (() => void) | undefined;

  /** The function returned is the runtime's close. */
  readonly openForRuntime = (): (() => Promise<void>) => {
    if (this.#folder === undefined) {
      const folder = mkdtempSync(join(os.tmpdir(), "toolpool-bash-output-"));
      this.#folder = folder;
      this.#onExit = () => rmSync(folder, { recursive: true, force: true });
      process.once("exit", this.#onExit);
    }
    this.#runtimes += 1;
    let isReleased = false;
    return async () => {
      if (isReleased) return;
      isReleased = true;
      this.#runtimes -= 1;
      if (this.#runtimes > 0 || this.#folder === undefined) return;
      const folder = this.#folder;
      this.#folder = undefined;
      if (this.#onExit !== undefined) process.off("exit", this.#onExit);
      await rm(folder, { recursive: true, force: true }).catch(() => {});
    };
  };

  /** Undefined while no runtime has the set. */
  sessionFolder(sessionKey: string | undefined): string | undefined {
    if (this.#folder === undefined) return undefined;
    const name = sessionKey === undefined ? "no-session" : `session-${createHash("sha256").update(sessionKey).digest("hex").slice(0, 32)}`;
    return join(this.#folder, name);
  }
}

let outputFolderOfCall: string | undefined;
let isTmpdirRouted = false;

/** Runs one bash call with pi's output files in `folder`; keeps this call's file. */
export async function withBashOutputFolder<T>(folder: string | undefined, maxBytes: number, run: () => Promise<T>): Promise<T> {
  if (folder === undefined) return run();
  routeTmpdir();
  await mkdir(folder, { recursive: true, mode: 0o700 });
  let outcome: { result: T } | { error: unknown };
  outputFolderOfCall = folder;
  try {
    outcome = { result: await run() };
  } catch (error) {
    outcome = { error };
  } finally {
    outputFolderOfCall = undefined;
  }
  const own = ownOutputFile(outcome, folder);
  if (own !== undefined) await boundOutputFiles(dirname(folder), own, maxBytes).catch(() => {});
  if ("error" in outcome) throw outcome.error;
  return outcome.result;
}

/**
 * pi's `details.fullOutputPath`, or for a thrown error the last `Full output:`
 * note naming a file of `folder` (never one the command printed).
 */
function ownOutputFile(outcome: { result: unknown } | { error: unknown }, folder: string): string | undefined {
  let path: unknown;
  if ("result" in outcome) {
    path = (outcome.result as { details?: { fullOutputPath?: unknown } } | undefined)?.details?.fullOutputPath;
  } else {
    const message = outcome.error instanceof Error ? outcome.error.message : "";
    const prefix = `Full output: ${folder}${sep}`;
    const at = message.lastIndexOf(prefix);
    const name = at < 0 ? undefined : outputFileNameAtStart.exec(message.slice(at + prefix.length))?.[1];
    path = name === undefined ? undefined : join(folder, name);
  }
  if (typeof path !== "string" || dirname(path) !== folder || !outputFileNameWhole.test(basename(path))) return undefined;
  return path;
}

/** pi's `tmpdir()` on this thread: the running call's output folder while there is one. */
function routeTmpdir(): void {
  if (isTmpdirRouted) return;
  isTmpdirRouted = true;
  const systemTmpdir = os.tmpdir;
  os.tmpdir = () => outputFolderOfCall ?? systemTmpdir();
  // pi imports { tmpdir } from "node:os": its binding follows the module object once synced.
  syncBuiltinESMExports();
}

/** Removes the oldest output files until at most `maxBytes`; never `keep`. */
export async function boundOutputFiles(runtimeFolder: string, keep: string, maxBytes: number): Promise<void> {
  const files: { path: string; size: number; mtimeMs: number }[] = [];
  for (const session of await readdir(runtimeFolder).catch(() => [] as string[])) {
    const folder = join(runtimeFolder, session);
    for (const name of await readdir(folder).catch(() => [] as string[])) {
      if (!outputFileNameWhole.test(name)) continue;
      const path = join(folder, name);
      const info = await stat(path).catch(() => undefined);
      if (info !== undefined) files.push({ path, size: info.size, mtimeMs: info.mtimeMs });
    }
  }
  let total = files.reduce((sum, file) => sum + file.size, 0);
  files.sort((a, b) => a.mtimeMs - b.mtimeMs);
  for (const file of files) {
    if (total <= maxBytes) break;
    if (file.path === keep) continue;
    await rm(file.path, { force: true });
    total -= file.size;
  }
}
