/**
 * Where bash's full-output files go. pi's bash saves the whole output of a
 * call whose output passes its display limit (50 KB or 2,000 lines) to a
 * file, `pi-bash-<random>.log`, and names that file in the result for the
 * model to read; pi puts it in the machine's temp folder (`os.tmpdir()`)
 * and never removes it. On a server of many sessions that is a pile that
 * grows for ever, readable by every later session's bash, and out of reach
 * of a confined `read`.
 *
 * Here each runtime that takes the tools gets a folder of its own under the
 * temp folder (`toolpool-bash-output-<random>`, mode 0700), and in it a
 * folder per session (named by a digest of its key; calls without a key
 * share one): a bash call's file goes in its session's folder, and a
 * confined `read` may read that folder, no other session's. The folder is
 * removed when the runtime closes (and when the process exits, should it
 * not have closed). After each call that left a file, the runtime's files
 * are held within a total size: the oldest are removed first, never the
 * file of the call that just ended (so a single file larger than the whole
 * bound is what is left).
 *
 * On the worker thread, pi's `tmpdir()` (pi's `utils/output-files.js` is the
 * one place pi creates these files) answers the call's session folder while
 * a bash call runs: a thread runs one call at a time, and pi creates the
 * file while the call runs, so no other call can see the folder.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import { basename, dirname, join, sep } from "node:path";

/** The names pi gives bash's full-output files. */
const outputFileNameWhole = /^pi-bash-[0-9a-f]{16}\.log$/;
/** Such a name at the start of a text, closing pi's `[... Full output: <path>]` note. */
const outputFileNameAtStart = /^(pi-bash-[0-9a-f]{16}\.log)\]/;

/**
 * The bash output folder of one `codingTools` set (main thread): created for
 * the first runtime that takes the set, removed when the last of them has
 * closed (a set is usually given to one runtime).
 */
export class BashOutputFolder {
  #folder: string | undefined;
  #runtimes = 0;
  #onExit: (() => void) | undefined;

  /** For {@link ToolNeeds.openForRuntime}: a runtime takes the set; the function returned is its close. */
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

  /** The folder of the session `sessionKey`'s files, inside the runtime's; undefined while no runtime has the set. */
  sessionFolder(sessionKey: string | undefined): string | undefined {
    if (this.#folder === undefined) return undefined;
    const name = sessionKey === undefined ? "no-session" : `session-${createHash("sha256").update(sessionKey).digest("hex").slice(0, 32)}`;
    return join(this.#folder, name);
  }
}

let outputFolderOfCall: string | undefined;
let isTmpdirRouted = false;

/**
 * Runs `run` (one bash call on this worker thread) with pi's output files
 * going to `folder` (created, mode 0700), then holds the runtime's files
 * (`folder`'s parent) within `maxBytes`, keeping the file this call left.
 * Without `folder`, `run` runs as pi would.
 */
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
 * The output file the call left, if it lies in the call's own `folder`:
 * pi's `details.fullOutputPath` for a result; for a thrown error (a timeout
 * or abort, whose message is all pi gives), the last `Full output: <path>]`
 * naming a file of `folder`, as pi's note follows the output's tail. Names
 * the command itself printed are never taken for it.
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

/**
 * Removes the oldest output files of `runtimeFolder` (every session's)
 * until their total size is at most `maxBytes`; `keep` is never removed.
 * Files that vanish meanwhile (another thread's removal) are skipped.
 */
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
