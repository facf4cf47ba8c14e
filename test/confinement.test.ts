import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { codingTools, createRuntime, supportsPi16, type Runtime } from "toolpool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { followLinks } from "./support/built.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/confinement.test.ts");

const base = join(tmpdir(), `toolpool-confinement-${process.pid}`);
const workspace = join(base, "workspace");
const outside = join(base, "outside");

beforeAll(() => {
  mkdirSync(join(workspace, "sub"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, "secret.txt"), "secret\n");
  // Dangling links to outside: a file, a chain of three hops whose last leaves, a folder that does not exist yet.
  symlinkSync(join(outside, "notes.md"), join(workspace, "notes.md"));
  symlinkSync("hop2", join(workspace, "hop1"));
  symlinkSync("sub/hop3", join(workspace, "hop2"));
  symlinkSync("../../outside/chained.txt", join(workspace, "sub", "hop3"));
  symlinkSync(join(outside, "newdir"), join(workspace, "dirlink"));
  // Links whose targets lie inside, one of them dangling.
  symlinkSync("sub/target.txt", join(workspace, "inner"));
  symlinkSync(join(workspace, "sub"), join(workspace, "sublink"));
  symlinkSync("loop2", join(workspace, "loop1"));
  symlinkSync("loop1", join(workspace, "loop2"));
  // A loop whose every other hop is a link outside.
  symlinkSync(join(outside, "back"), join(workspace, "outloop"));
  symlinkSync(join(workspace, "outloop"), join(outside, "back"));
  // Links whose targets climb with ".." out of a folder that does not exist, or out of a file, into a link to outside.
  symlinkSync(outside, join(workspace, "esc"));
  writeFileSync(join(workspace, "plain.txt"), "plain\n");
  symlinkSync("missing/../esc/secret.txt", join(workspace, "viamissing"));
  symlinkSync("plain.txt/../esc/secret.txt", join(workspace, "viafile"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("followLinks", () => {
  it("judges every link by where it points, dangling or not, through chains of hops", async () => {
    expect(await followLinks(join(workspace, "notes.md"))).toBe(join(outside, "notes.md"));
    expect(await followLinks(join(workspace, "hop1"))).toBe(join(outside, "chained.txt"));
    expect(await followLinks(join(workspace, "dirlink", "x.txt"))).toBe(join(outside, "newdir", "x.txt"));
    expect(await followLinks(join(workspace, "inner"))).toBe(join(workspace, "sub", "target.txt"));
    expect(await followLinks(join(workspace, "sublink", "..", "sub", "new.txt"))).toBe(join(workspace, "sub", "new.txt"));
    expect(await followLinks(join(workspace, "no", "such", "file"))).toBe(join(workspace, "no", "such", "file"));
    await expect(followLinks(join(workspace, "loop1"))).rejects.toMatchObject({ code: "ELOOP" });
  });

  it("refuses a '..' after a component that does not exist or is not a folder, as the kernel does", async () => {
    await expect(followLinks(join(workspace, "viamissing"))).rejects.toMatchObject({ at: join(workspace, "missing"), reason: "does not exist" });
    await expect(followLinks(join(workspace, "viafile"))).rejects.toMatchObject({ at: join(workspace, "plain.txt"), reason: "is not a folder" });
    // Without a "..", the rest of a missing path is still appended as it is.
    expect(await followLinks(join(workspace, "no", "such", ".", "file"))).toBe(join(workspace, "no", "such", "file"));
  });
});

describe.skipIf(!supportsPi16())("confine through symlinks (pi 1.6)", () => {
  let runtime: Runtime;
  beforeAll(() => {
    runtime = createRuntime({
      pi: "1.6",
      tools: codingTools({ workspace, confine: true, tools: ["read", "edit", "write"] }),
      pool: { maxThreads: 1 },
    });
  });
  afterAll(() => runtime.close());

  const run = async (name: string, args: Record<string, unknown>) => {
    const outcome = await runtime.runToolCall({ type: "toolCall", id: `c-${name}`, name, arguments: args });
    return { isError: outcome.isError, text: (outcome.result.content[0] as { text: string }).text };
  };

  it("refuses a write through a dangling link to outside, and creates nothing there (pi 1.6)", async () => {
    for (const [path, target] of [
      ["notes.md", join(outside, "notes.md")],
      ["hop1", join(outside, "chained.txt")],
      ["dirlink/x.txt", join(outside, "newdir")],
    ] as const) {
      const { isError, text } = await run("write", { path, content: "planted\n" });
      expect(isError, path).toBe(true);
      expect(text).toContain(`Path "${path}" is outside the workspace`);
      expect(existsSync(target), target).toBe(false);
    }
  });

  it("refuses an edit and a read of a dangling link to outside, naming it (pi 1.6)", async () => {
    const edit = await run("edit", { path: "notes.md", edits: [{ oldText: "a", newText: "b" }] });
    expect(edit).toMatchObject({ isError: true });
    expect(edit.text).toContain('Path "notes.md" is outside the workspace');
    const read = await run("read", { path: "hop1" });
    expect(read.isError).toBe(true);
    expect(read.text).toContain('Path "hop1" is outside the workspace');
    expect(existsSync(join(outside, "notes.md"))).toBe(false);
  });

  it("follows links whose targets lie inside, dangling or not, and leaves a loop inside to pi's own answer (pi 1.6)", async () => {
    expect(await run("write", { path: "inner", content: "inside\n" })).toMatchObject({ isError: false });
    expect(readFileSync(join(workspace, "sub", "target.txt"), "utf8")).toBe("inside\n");
    expect(await run("read", { path: "sublink/target.txt" })).toEqual({ isError: false, text: "inside\n" });
    // The loop is not outside: pi's read, edit and write meet it as they would without confine.
    expect(await run("read", { path: "loop1" })).toEqual({
      isError: true,
      text: `ELOOP: too many symbolic links encountered, access '${join(workspace, "loop1")}'`,
    });
    expect(await run("edit", { path: "loop2", edits: [] })).toEqual({
      isError: true,
      text: "Edit tool input is invalid. edits must contain at least one replacement.",
    });
    expect(await run("write", { path: "loop2", content: "x" })).toEqual({
      isError: true,
      text: `ELOOP: too many symbolic links encountered, realpath '${join(workspace, "loop2")}'`,
    });
  });

  it("refuses a loop that passes through a link outside, naming that link (pi 1.6)", async () => {
    const { isError, text } = await run("read", { path: "outloop" });
    expect(isError).toBe(true);
    expect(text).toBe(`Path "outloop" is outside the workspace "${workspace}": it passes through the symbolic link "${join(outside, "back")}"`);
  });

  it("refuses a link that climbs with '..' out of a folder that does not exist, naming it (pi 1.6)", async () => {
    for (const name of ["read", "write"]) {
      const { isError, text } = await run(name, name === "write" ? { path: "viamissing", content: "planted\n" } : { path: "viamissing" });
      expect(isError, name).toBe(true);
      expect(text).toContain(`Path "viamissing" leads through "${join(workspace, "missing")}", which does not exist`);
    }
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret\n");
  });
});
