import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createPatchTool } from "../dist/tools/patch.js";
import { replaceFile } from "../dist/tools/replace-file.js";
import type { WorkerToolContext } from "../src/types.js";

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
    const read = statSync(path);
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
    const script = `
      import { createPatchTool } from ${JSON.stringify(new URL("../dist/tools/patch.js", import.meta.url).href)};
      const patch = createPatchTool({ realRoot: ${JSON.stringify(dir)}, allowWrite: true });
      const ctx = { toolCallId: "t", signal: new AbortController().signal, onUpdate() {} };
      for (const path of ["roots.txt", "group.txt"]) {
        await patch({ path, patch: ${JSON.stringify(patchAB)}, write: true }, ctx).then(() => console.log("written"), (error) => console.log(error.message));
      }`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { uid: NOBODY, gid: NOBODY, encoding: "utf8" });
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
});
