import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  type FSWatcher,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  watch,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createPatch } from "diff";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createPatchTool, replaceFile, TEMPORARY_FILE_MAX_AGE_MS, type WorkerToolContext } from "./support/internals.js";
import { until } from "./support/helpers.js";

const ctx = <D>(): WorkerToolContext<D> => ({ toolCallId: "t1", signal: new AbortController().signal, onUpdate: () => {} });
const isRoot = process.getuid?.() === 0;
/** The unprivileged user of most Linux systems. */
const NOBODY = 65534;
const patchAB = "--- a\n+++ b\n@@ -1,1 +1,1 @@\n-a\n+b\n";

let root: string;
const workspace = () => ({ realRoot: root, allowWrite: true });

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-replace-")));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A file holding "a\n" with `mode` (set after creation, so no umask applies). */
function fileWith(name: string, mode: number): string {
  const path = join(root, name);
  writeFileSync(path, "a\n");
  chmodSync(path, mode);
  return path;
}

const modeOf = (path: string): number => statSync(path).mode & 0o7777;
const temporaryFiles = (): string[] => readdirSync(root).filter((name) => name.endsWith(".toolpool.tmp"));

async function patchError(name: string): Promise<string> {
  const error = await createPatchTool(workspace())({ path: name, patch: patchAB, write: true }, ctx()).catch((caught: Error) => caught);
  expect(error).toBeInstanceOf(Error);
  return (error as Error).message;
}

describe("replaceFile (patch with write: true)", () => {
  it("clears setuid and setgid and keeps every other permission bit, whatever the umask", async () => {
    const suid = fileWith("suid", 0o6775);
    const shared = fileWith("shared", 0o1666);
    await createPatchTool(workspace())({ path: "suid", patch: patchAB, write: true }, ctx());
    await createPatchTool(workspace())({ path: "shared", patch: patchAB, write: true }, ctx());
    expect([readFileSync(suid, "utf8"), modeOf(suid).toString(8)]).toEqual(["b\n", "775"]);
    expect([readFileSync(shared, "utf8"), modeOf(shared).toString(8)]).toEqual(["b\n", "1666"]);
    expect(temporaryFiles()).toEqual([]);
  });

  it("refuses a read-only file, even where its user may write anything, and leaves it as it was", async () => {
    const readOnly = fileWith("read-only.txt", 0o444);
    expect(await patchError("read-only.txt")).toBe("patch: read-only.txt is read-only (mode 0444): not written; make it writable first");
    expect([readFileSync(readOnly, "utf8"), modeOf(readOnly)]).toEqual(["a\n", 0o444]);
    expect(temporaryFiles()).toEqual([]);
  });

  it("refuses a file with several hard links, so that no name keeps stale content", async () => {
    const linked = fileWith("linked.txt", 0o644);
    linkSync(linked, join(root, "other-name.txt"));
    expect(await patchError("linked.txt")).toBe(
      "patch: linked.txt has 2 hard links; patch writes a new file in its place, which would leave the other names with the old content: not written",
    );
    expect([readFileSync(linked, "utf8"), readFileSync(join(root, "other-name.txt"), "utf8")]).toEqual(["a\n", "a\n"]);
    // Without its other name, it is patched as any file.
    rmSync(join(root, "other-name.txt"));
    await createPatchTool(workspace())({ path: "linked.txt", patch: patchAB, write: true }, ctx());
    expect(readFileSync(linked, "utf8")).toBe("b\n");
  });

  it("does not write over a file replaced since it was read", () => {
    const path = fileWith("raced.txt", 0o644);
    const read = { stats: statSync(path, { bigint: true }), bytes: readFileSync(path) };
    writeFileSync(join(root, "raced.new"), "another writer\n");
    renameSync(join(root, "raced.new"), path);
    expect(() => replaceFile(path, read, "b\n", "patch: raced.txt")).toThrow(
      "patch: raced.txt cannot be written: it was replaced while it was patched (by another writer?); patch it again",
    );
    expect(readFileSync(path, "utf8")).toBe("another writer\n");
    expect(temporaryFiles()).toEqual([]);
  });

  it.runIf(isRoot)("as root: gives the new file the old one's owner and group, and drops setuid (runs only as root)", async () => {
    const foreign = fileWith("foreign-suid", 0o6755);
    chownSync(foreign, NOBODY, NOBODY);
    chmodSync(foreign, 0o6755);
    await createPatchTool(workspace())({ path: "foreign-suid", patch: patchAB, write: true }, ctx());
    const after = statSync(foreign);
    expect({ uid: after.uid, gid: after.gid, mode: (after.mode & 0o7777).toString(8), content: readFileSync(foreign, "utf8") }).toEqual({
      uid: NOBODY,
      gid: NOBODY,
      mode: "755",
      content: "b\n",
    });
  });

  it.runIf(isRoot)("as another user: refuses a file whose owner or group it cannot keep (runs only as root, which can switch users)", (context) => {
    const dir = join(root, "shared-dir");
    chmodSync(root, 0o755);
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    // Root's, writable by all: nobody could replace it, but the new file would be nobody's.
    writeFileSync(join(dir, "roots.txt"), "a\n");
    chmodSync(join(dir, "roots.txt"), 0o666);
    // Nobody's, in root's group, which nobody is not a member of.
    writeFileSync(join(dir, "group.txt"), "a\n");
    chownSync(join(dir, "group.txt"), NOBODY, 0);
    chmodSync(join(dir, "group.txt"), 0o664);
    // The built modules may lie in a folder nobody may enter (a clone under /root): the child gets a copy of what it imports.
    const modules = mkdtempSync(join(tmpdir(), "toolpool-replace-modules-"));
    chmodSync(modules, 0o755);
    cpSync(new URL("../dist/tools/", import.meta.url), join(modules, "tools"), { recursive: true });
    cpSync(realpathSync(new URL("../node_modules/diff/", import.meta.url)), join(modules, "node_modules", "diff"), {
      recursive: true,
      dereference: true,
    });
    context.onTestFinished(() => rmSync(modules, { recursive: true, force: true }));
    const script = `
      import { createPatchTool } from ${JSON.stringify(pathToFileURL(join(modules, "tools", "patch.js")).href)};
      const patch = createPatchTool({ realRoot: ${JSON.stringify(dir)}, allowWrite: true });
      const ctx = { toolCallId: "t", signal: new AbortController().signal, onUpdate() {} };
      for (const path of ["roots.txt", "group.txt"]) {
        await patch({ path, patch: ${JSON.stringify(patchAB)}, write: true }, ctx).then(() => console.log("written"), (error) => console.log(error.message));
      }`;
    // Its working folder too: the module resolves it when it loads.
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { uid: NOBODY, gid: NOBODY, cwd: modules, encoding: "utf8" });
    if ((child.error as NodeJS.ErrnoException | undefined)?.code === "EACCES") {
      // A Node binary in a folder only root may enter (a cached registry Node under /root, say).
      console.warn(`SKIPPED: uid ${NOBODY} cannot execute ${process.execPath}`);
      context.skip();
    }
    expect(child.error).toBeUndefined();
    expect(child.stderr).toBe("");
    expect(child.stdout.trim().split("\n")).toEqual([
      `patch: roots.txt belongs to uid 0, and toolpool runs as uid ${NOBODY}, which cannot give a new file that owner: not written`,
      `patch: group.txt belongs to uid ${NOBODY} and gid 0, which toolpool's user (uid ${NOBODY}) cannot give a new file (EPERM): not written`,
    ]);
    expect([readFileSync(join(dir, "roots.txt"), "utf8"), readFileSync(join(dir, "group.txt"), "utf8")]).toEqual(["a\n", "a\n"]);
    expect(readdirSync(dir).filter((name) => name.endsWith(".toolpool.tmp"))).toEqual([]);
  });

  it("refuses, and writes nothing, when another process changes the file in place while its hunks are placed", async () => {
    const lines = Array.from({ length: 4000 }, (_, i) => `line ${i}\n`);
    const original = lines.join("");
    // Every other line changed, no context: 2,000 hunks, so that placing them checks the signal (every 1,024 comparisons).
    const patch = createPatch("big.txt", original, lines.map((line, i) => (i % 2 === 0 ? `changed ${line}` : line)).join(""), "", "", { context: 0 });
    const changes = [
      // An append, as a log or another editor's save in place does.
      'require("node:fs").appendFileSync(process.argv[1], "appended by another process\\n")',
      // A change of the same size: only the content tells it.
      'const fs = require("node:fs"); const fd = fs.openSync(process.argv[1], "r+"); fs.writeSync(fd, "LINE", 0); fs.closeSync(fd)',
    ];
    for (const [index, change] of [...changes, changes[0]!].entries()) {
      const path = join(root, "big.txt");
      writeFileSync(path, original);
      let checks = 0;
      let changedAt: number | undefined;
      // The patch checks its signal at the start, after reading, then during the placement: the third check runs
      // the other process, synchronously, while the hunks are being placed.
      const signal = {
        aborted: false,
        throwIfAborted() {
          if (++checks !== 3) return;
          const child = spawnSync(process.execPath, ["-e", change, path], { encoding: "utf8" });
          expect(child.status, child.stderr).toBe(0);
          changedAt = checks;
        },
      } as unknown as AbortSignal;
      const changed = readFileSync(path, "utf8");
      const error = await createPatchTool(workspace())({ path: "big.txt", patch, write: true }, { ...ctx(), signal }).catch(
        (caught: Error) => caught,
      );
      expect(changedAt, `try ${index + 1}`).toBe(3);
      expect((error as Error).message, `try ${index + 1}`).toBe(
        "patch: big.txt cannot be written: it was changed while it was patched (by another writer?); nothing was written, patch it again",
      );
      // The other process's change is there, and nothing of the patch.
      const after = readFileSync(path, "utf8");
      expect(after).not.toBe(changed);
      expect(after.startsWith("line 0") || after.startsWith("LINE 0")).toBe(true);
      expect(after.includes("changed line")).toBe(false);
      expect(temporaryFiles()).toEqual([]);
    }
  });

  it("patches a file whose name looks like a stale temporary file, and never removes it", async () => {
    const longAgo = (Date.now() - TEMPORARY_FILE_MAX_AGE_MS - 60_000) / 1000;
    for (const name of [".notes.0123456789ab.toolpool.tmp", ".notes.1-9.0123456789ab.toolpool.tmp"]) {
      const path = fileWith(name, 0o644);
      utimesSync(path, longAgo, longAgo);
      const result = await createPatchTool(workspace())({ path: name, patch: patchAB, write: true }, ctx());
      expect((result.content[0] as { text: string }).text).toBe(`patch: applied 1 hunk to ${name} (2 bytes written)`);
      expect(readFileSync(path, "utf8")).toBe("b\n");
      rmSync(path);
    }
  });
});

/** Whether `/proc/self/fd` names open folders: `patch` then writes through the folder's descriptor. */
const hasFdPaths = existsSync("/proc/self/fd");

describe.runIf(hasFdPaths)("replaceFile while its folder is swapped for a symlink (Linux)", () => {
  let outside: string;
  let watcher: FSWatcher | undefined;

  beforeAll(() => {
    outside = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-outside-")));
    // A file of the same name on the other side: every check by path passes there.
    writeFileSync(join(outside, "a.txt"), "outside\n");
  });

  /** The outside folder holds what it held before, as it was. */
  function expectOutsideUntouched(): void {
    expect(readdirSync(outside)).toEqual(["a.txt"]);
    expect(readFileSync(join(outside, "a.txt"), "utf8")).toBe("outside\n");
  }

  afterAll(() => {
    watcher?.close();
    rmSync(outside, { recursive: true, force: true });
  });

  it("creates nothing outside the workspace when the folder becomes a symlink after the file was read", async () => {
    const dir = mkdtempSync(join(root, "swapped-"));
    writeFileSync(join(dir, "a.txt"), "a\n");
    // Every name created in the outside folder, in order (inotify): a sentinel created afterwards bounds the wait.
    const created: string[] = [];
    watcher = watch(outside, (_event, name) => {
      if (name !== null) created.push(name);
    });
    let checks = 0;
    const signal = {
      aborted: false,
      throwIfAborted() {
        // Once the file is read (the second check), another process moves the folder aside and puts a symlink in its place.
        if (++checks !== 2) return;
        const swap = `const fs = require("node:fs"); fs.renameSync(process.argv[1], process.argv[1] + ".aside"); fs.symlinkSync(process.argv[2], process.argv[1])`;
        const child = spawnSync(process.execPath, ["-e", swap, dir, outside], { encoding: "utf8" });
        expect(child.status, child.stderr).toBe(0);
      },
    } as unknown as AbortSignal;
    const error = await createPatchTool(workspace())(
      { path: `${dir.slice(root.length + 1)}/a.txt`, patch: patchAB, write: true },
      { ...ctx(), signal },
    ).catch((caught: Error) => caught);
    expect(checks).toBeGreaterThanOrEqual(2);
    writeFileSync(join(outside, "sentinel"), "");
    await until(() => created.includes("sentinel"), "the watcher saw the sentinel", { limitMs: 60_000 });
    rmSync(join(outside, "sentinel"));
    // Not even for a moment.
    expect(created.slice(0, created.indexOf("sentinel"))).toEqual([]);
    expectOutsideUntouched();
    expect((error as Error).message).toMatch(/^patch: swapped-\w+\/a\.txt cannot be written: its folder changed while the file was written$/);
    expect(readFileSync(join(`${dir}.aside`, "a.txt"), "utf8")).toBe("a\n");
    watcher.close();
    watcher = undefined;
  });

  it("leaves no file outside the workspace while another process swaps the folder back and forth during 2,000 writes", async () => {
    const dir = mkdtempSync(join(root, "swapping-"));
    const name = dir.slice(root.length + 1);
    writeFileSync(join(dir, "a.txt"), "line 0\n");
    const stop = join(root, `${name}.stop`);
    const swapper = `
      const fs = require("node:fs");
      const [dir, outside, stop] = process.argv.slice(1);
      let swaps = 0;
      while (!fs.existsSync(stop)) {
        fs.renameSync(dir, dir + ".aside");
        fs.symlinkSync(outside, dir);
        fs.unlinkSync(dir);
        fs.renameSync(dir + ".aside", dir);
        swaps++;
      }
      console.log(swaps);`;
    const child = spawn(process.execPath, ["-e", swapper, dir, outside, stop], { stdio: ["ignore", "pipe", "inherit"] });
    let swaps = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      swaps += chunk.toString("utf8");
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const outcomes = new Map<string, number>();
    try {
      // A refused write leaves the file as it was: the next patch starts from the last one written.
      let line = 0;
      for (let n = 0; n < 2000; n++) {
        const patch = `--- a\n+++ b\n@@ -1,1 +1,1 @@\n-line ${line}\n+line ${line + 1}\n`;
        const outcome = await createPatchTool(workspace())({ path: `${name}/a.txt`, patch, write: true }, ctx()).then(
          () => "applied",
          (error: Error) => error.message.replace(/^patch: \S+ /, "").replace(/[/'][^ ]*/g, "PATH"),
        );
        if (outcome === "applied") line++;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    } finally {
      writeFileSync(stop, "");
      await exited;
    }
    expect(Number(swaps)).toBeGreaterThan(0);
    expectOutsideUntouched();
    expect(
      [...outcomes.keys()].filter(
        (outcome) =>
          outcome !== "applied" &&
          !/folder changed|outside the workspace|not found|resolve path|not writable|changed while|replaced while/.test(outcome),
      ),
    ).toEqual([]);
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe(`line ${outcomes.get("applied") ?? 0}\n`);
  });
});
