/**
 * The sandbox's read, write and edit operations against a link put in the
 * way after confine's check (a sandboxed bash beside them swapping a folder
 * for a link): each tried with the link already there, so that the open
 * itself meets it. pi's own operations (`fs` by path) follow it: the control.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { containedFileIo, containedLsOperations, containedReadOperations, containedWriteOperations } from "./support/internals.js";

const base = realpathSync(mkdtempSync(join(tmpdir(), "toolpool-contained-")));
const workspace = join(base, "workspace");
const outside = join(base, "outside");
const within = { root: workspace, alsoAllowed: [] };
const noImage = async () => undefined;

beforeAll(() => {
  mkdirSync(workspace);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "host secret\n");
  writeFileSync(join(workspace, "own.txt"), "own\n");
  // The swapped folder, and a link that stays inside.
  symlinkSync(outside, join(workspace, "d"));
  symlinkSync(join(workspace, "own.txt"), join(workspace, "inside-link.txt"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function collect(chunks: AsyncIterable<Buffer>): Promise<string> {
  let text = "";
  for await (const chunk of chunks) text += chunk.toString("utf8");
  return text;
}

describe.skipIf(process.platform !== "linux")("the sandbox's file operations against a swapped link", () => {
  it("pi's own operations follow the link out (the control)", async () => {
    expect(await readFile(join(workspace, "d", "secret.txt"), "utf8")).toBe("host secret\n");
  });

  it("read refuses a file the open finds outside, by each of its ways in", async () => {
    const read = containedReadOperations(within, noImage);
    const path = join(workspace, "d", "secret.txt");
    await expect(read.readFile(path)).rejects.toThrow(/outside the workspace .* as it was opened/);
    await expect(collect(read.createReadStream(path))).rejects.toThrow(/outside the workspace/);
    await expect(read.detectImageMimeType(path)).rejects.toThrow(/outside the workspace/);
  });

  it("read still reads inside, through a link that stays inside", async () => {
    const read = containedReadOperations(within, noImage);
    expect((await read.readFile(join(workspace, "inside-link.txt"))).toString()).toBe("own\n");
    expect(await collect(read.createReadStream(join(workspace, "own.txt")))).toBe("own\n");
  });

  it("write neither changes a file outside nor makes one there", async () => {
    const write = containedWriteOperations(within);
    await expect(write.writeFile(join(workspace, "d", "secret.txt"), "overwritten")).rejects.toThrow(/outside the workspace/);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("host secret\n");
    await expect(write.writeFile(join(workspace, "d", "new.txt"), "made")).rejects.toThrow(/outside the workspace/);
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
  });

  it("write makes and replaces files inside as pi's does", async () => {
    const write = containedWriteOperations(within);
    await write.writeFile(join(workspace, "made.txt"), "first, longer");
    await write.writeFile(join(workspace, "made.txt"), "second");
    expect(readFileSync(join(workspace, "made.txt"), "utf8")).toBe("second");
    await writeFile(join(base, "control.txt"), "first, longer");
    await writeFile(join(base, "control.txt"), "second");
    expect(readFileSync(join(workspace, "made.txt"))).toEqual(readFileSync(join(base, "control.txt")));
  });

  it("edit's reads and writes refuse the file outside", async () => {
    const io = containedFileIo(within);
    await expect(io.readFile(join(workspace, "d", "secret.txt"))).rejects.toThrow(/outside the workspace/);
    await expect(io.writeFile(join(workspace, "d", "secret.txt"), "edited")).rejects.toThrow(/outside the workspace/);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("host secret\n");
  });

  it("ls refuses to list a folder the open finds outside, and lists inside as pi's does", async () => {
    const ls = containedLsOperations(within, async () => true);
    await expect(ls.readdir(join(workspace, "d"))).rejects.toThrow(/outside the workspace/);
    expect((await ls.readdir(workspace)).sort()).toEqual((await readdir(workspace)).sort());
  });
});
