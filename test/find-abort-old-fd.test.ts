import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { codingTools, createRuntime, supportsPi16 } from "toolpool";
import { afterAll, describe, expect, it } from "vitest";

import { fdShortfallOf } from "./support/internals.js";
import { which } from "./support/coding-trees.js";

const workspace = join(tmpdir(), `toolpool-find-abort-${process.pid}`);
mkdirSync(workspace, { recursive: true });
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

const oldFd = which(["fdfind", "fd"]);
const hasOldFd = oldFd !== undefined && fdShortfallOf(oldFd, join(workspace, "no-bin")) !== undefined;

describe.skipIf(!supportsPi16() || !hasOldFd)("find with an fd that lacks --no-require-git (pi 1.6)", () => {
  it("answers an already-aborted call as pi does, 'Operation aborted' (pi 1.6)", async () => {
    const runtime = createRuntime({ pi: "1.6", tools: codingTools({ workspace, tools: ["find"] }), pool: { maxThreads: 1 } });
    try {
      const [find] = runtime.agentTools();
      const controller = new AbortController();
      controller.abort();
      await expect(find!.execute("c1", { pattern: "*.txt" }, controller.signal)).rejects.toThrow(/^Operation aborted$/);
    } finally {
      await runtime.close();
    }
  });
});
