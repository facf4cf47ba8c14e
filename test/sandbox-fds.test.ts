/**
 * The descriptors a sandboxed command inherits: only its standard streams,
 * whatever the host process inherited from its own parent without
 * close-on-exec (a socket of a service manager, a pipe of a supervisor).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { which } from "./support/coding-trees.js";
import { warnSkippedPi16 } from "./support/pi16.js";

warnSkippedPi16("test/sandbox-fds.test.ts");

const hasBwrap = process.platform === "linux" && which(["bwrap"]) !== undefined;
const root = mkdtempSync(join(tmpdir(), "toolpool-sandbox-fds-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function collect(stream: NodeJS.ReadableStream): Promise<string> {
  let text = "";
  stream.setEncoding("utf8");
  for await (const chunk of stream) text += chunk;
  return text;
}

describe.skipIf(!supportsPi16() || !hasBwrap)("the sandbox's descriptors (pi 1.6)", () => {
  it("leaves behind a descriptor the host inherited: the command cannot write to it (pi 1.6)", { timeout: 60_000 }, async () => {
    const fixture = fileURLToPath(new URL("./fixtures/coding/sandbox-fds.mjs", import.meta.url));
    // The host holds the pipe as descriptor 200 without close-on-exec (a shell's redirection), as a supervisor's would be.
    const host = spawn("/bin/bash", ["-c", 'exec "$0" "$@" 200>&5 5>&-', process.execPath, fixture, root], {
      stdio: ["ignore", "pipe", "inherit", "ignore", "ignore", "pipe"],
    });
    const [output, [code]] = await Promise.all([collect(host.stdout!), once(host, "exit")]);
    // What is left holding the pipe (the helper as it leaves) is not waited for: the command's own output says whether it wrote.
    (host.stdio as unknown as (NodeJS.ReadableStream & { destroy(): void })[])[5]?.destroy();
    expect(code).toBe(0);
    const text = JSON.parse(output.trim()) as string;
    expect(text.split("\n")[0]!.trim().split(" ")).toEqual(["0", "1", "2"]);
    expect(text).not.toContain("wrote");
  });
});
