import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";

import { afterEach, describe, expect, it } from "vitest";

import { supportsPi16, type ToolResultMessage } from "toolpool";

import { runCli, type CliRun } from "./support/cli.js";
import { warnSkippedPi16 } from "./support/pi16.js";
import { assistantMessage, batchEndOf, describeEvents, gateKeys, postBatch, readSse, rest, take } from "./support/server-client.js";
import { spawnServe, type ServeProcess } from "./support/serve-process.js";

warnSkippedPi16("test/serve-command.test.ts");

// `toolpool serve` as users start it: the built bin in a child process, its
// config files under test/fixtures/server (paths relative to the repository's root).
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FIXTURES = "test/fixtures/server";

const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

describe("toolpool serve", () => {
  type Served = ServeProcess;

  function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
    return spawnServe(args, env, children);
  }

  it("prints where it listens, and on SIGTERM ends the in-flight batch with all its results, then exits 0", async () => {
    const { child, url, stderr, exited } = await serve([
      "--port",
      "0",
      "--tools",
      `${FIXTURES}/tools.mjs`,
      "--config",
      `${FIXTURES}/quick-shutdown.json`,
    ]);
    const key = gateKeys();
    const stream = readSse(
      await postBatch(url, {
        assistantMessage: assistantMessage([
          { id: "a", name: "work", arguments: { gate: key("a") } },
          { id: "b", name: "stubborn", arguments: { gate: key("b") } },
        ]),
      }),
    );
    expect(describeEvents(await take(stream, 2))).toEqual(["tool_execution_start:a", "tool_execution_start:b"]);
    child.kill("SIGTERM");
    const events = await rest(stream);
    // No gate is ever opened (they live in this process): both calls can only be ended by the shutdown.
    const ends = events.filter((event) => event.event === "tool_execution_end");
    expect(ends.map((event) => [event.data.toolCallId, event.data.isError]).sort()).toEqual([
      ["a", true],
      ["b", true],
    ]);
    expect(batchEndOf(events).messages.map((message) => [message.toolCallId, message.isError])).toEqual([
      ["a", true],
      ["b", true],
    ]);
    expect(await exited).toEqual([0, null]);
    expect(stderr()).toMatch(/SIGTERM/);
  });

  it("takes its tools and settings from --config, and its token from TOOLPOOL_TOKEN", async () => {
    const { child, url, exited } = await serve(["--port", "0", "--config", `${FIXTURES}/serve-config.json`], {
      TOOLPOOL_TOKEN: "from-env",
    });
    expect((await fetch(`${url}/v1/tools`)).status).toBe(401);
    const tools = (await (await fetch(`${url}/v1/tools`, { headers: { authorization: "Bearer from-env" } })).json()) as {
      tools: { name: string }[];
    };
    expect(tools.tools.map((tool) => tool.name)).toEqual(["work", "stubborn"]);
    child.kill("SIGINT");
    expect(await exited).toEqual([0, null]);
  });

  it("admits a batch for the idle shared pool while a tool's own pool is full, and still answers 429 for that tool", async () => {
    // One thread per pool and no queue: one running `heavy` call fills `heavy`'s own pool, and only it.
    const { child, url, exited } = await serve(["--port", "0", "--config", `${FIXTURES}/own-pool-config.json`]);
    const holding = new AbortController();
    const held = readSse(
      await postBatch(
        url,
        { assistantMessage: assistantMessage([{ id: "held", name: "heavy", arguments: { updates: ["running"], gate: `${randomUUID()}:never` } }]) },
        {},
        holding.signal,
      ),
    );
    // Its partial result comes from its thread: the call runs in heavy's pool now.
    expect(describeEvents(await take(held, 2))).toEqual(["tool_execution_start:held", "tool_execution_update:held"]);

    const shared = await postBatch(url, { assistantMessage: assistantMessage([{ id: "light", name: "work" }]) }, { accept: "application/json" });
    const sharedBody = (await shared.json()) as { code?: string; messages?: ToolResultMessage[] };
    expect([shared.status, sharedBody.code]).toEqual([200, undefined]);
    expect(sharedBody.messages!.map((message) => [message.toolCallId, message.isError])).toEqual([["light", false]]);

    const full = await postBatch(url, { assistantMessage: assistantMessage([{ id: "second", name: "heavy" }]) }, { accept: "application/json" });
    expect(full.status).toBe(429);
    const fullBody = (await full.json()) as { code: string; message: string };
    expect(fullBody.code).toBe("TP_ERR_QUEUE_FULL");
    expect(fullBody.message).toContain('tool "heavy"');
    // A batch with a call for each pool is refused too: one of its pools is full.
    const mixed = await postBatch(
      url,
      {
        assistantMessage: assistantMessage([
          { id: "m1", name: "work" },
          { id: "m2", name: "heavy" },
        ]),
      },
      { accept: "application/json" },
    );
    expect(mixed.status).toBe(429);

    holding.abort();
    child.kill("SIGTERM");
    expect(await exited).toEqual([0, null]);
  });

  it("refuses a host beyond loopback without a token, before listening", async () => {
    const { code, stdout, stderr } = await serveUntilExit(["--host", "0.0.0.0", "--port", "0"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^toolpool: --host 0\.0\.0\.0 is not a loopback address/);
  });

  it("takes pi from --config, and --pi overrides it", async () => {
    // The file asks for 1.6, which Node < 22.19 refuses: this serves only if the flag wins.
    const { child, url, exited } = await serve(["--port", "0", "--config", `${FIXTURES}/pi16-config.json`, "--pi", "0.73"]);
    const tools = (await (await fetch(`${url}/v1/tools`)).json()) as { pi: string; tools: { name: string }[] };
    expect(tools.pi).toBe("0.73");
    expect(tools.tools.map((tool) => tool.name)).toEqual(["work", "stubborn"]);
    child.kill("SIGTERM");
    expect(await exited).toEqual([0, null]);
  });

  it('refuses a config file whose pi is not "0.73" or "1.6", naming the choices, before listening', async () => {
    const { code, stdout, stderr } = await serveUntilExit(["--port", "0", "--config", `${FIXTURES}/pi-number-config.json`]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toBe('toolpool: Expected `pi` to be one of "0.73", "1.6", got `1.6` (number)\n');
  });

  it("refuses a config file's unknown setting, top-level or nested, naming it and the closest known one, before listening", async () => {
    const misspelt = await serveUntilExit(["--port", "0", "--config", `${FIXTURES}/misspelt-config.json`]);
    expect(misspelt.code).toBe(2);
    expect(misspelt.stdout).toBe("");
    expect(misspelt.stderr).toMatch(
      /^toolpool: invalid config file .*misspelt-config\.json: unknown setting "toolExecutoin"; did you mean "toolExecution"\?\n$/,
    );
    const nested = await serveUntilExit(["--port", "0", "--config", `${FIXTURES}/misspelt-pool-config.json`]);
    expect(nested.code).toBe(2);
    expect(nested.stdout).toBe("");
    expect(nested.stderr).toBe("toolpool: Unknown option `pool.maxQueu`; did you mean `pool.maxQueue`?\n");
  });

  it.skipIf(supportsPi16())("on a Node older than 22.19, refuses a config file asking for 1.6 with exit 2, naming the Node it needs", async () => {
    const { code, stdout, stderr } = await serveUntilExit(["--port", "0", "--config", `${FIXTURES}/pi16-config.json`]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^toolpool: [^\n]+\n$/);
    expect(stderr).toContain(`\`pi: "1.6"\` needs Node >= 22.19.0, as pi 1.6 does; this is Node ${process.versions.node}`);
  });
});

describe.skipIf(!supportsPi16())("toolpool serve with pi 1.6 (Node >= 22.19)", () => {
  it("follows the config file's pi 1.6: GET /v1/tools reports it, and a batch runs by its rules", async () => {
    const { child, url, exited } = await spawnServe(["--port", "0", "--config", `${FIXTURES}/pi16-config.json`], {}, children);
    const tools = (await (await fetch(`${url}/v1/tools`)).json()) as { pi: string };
    expect(tools.pi).toBe("1.6");
    const response = await postBatch(
      url,
      {
        assistantMessage: assistantMessage([
          { id: "a", name: "work" },
          { id: "b", name: "nope" },
        ]),
      },
      { accept: "application/json" },
    );
    expect(response.status).toBe(200);
    const { messages } = (await response.json()) as { messages: (ToolResultMessage & { durationMs?: number })[] };
    // pi 1.6's rules: the call that executed carries durationMs, the unknown tool none.
    expect(messages.map((message) => [message.toolCallId, message.isError, Number.isInteger(message.durationMs)])).toEqual([
      ["a", false, true],
      ["b", true, false],
    ]);
    child.kill("SIGTERM");
    expect(await exited).toEqual([0, null]);
  });

  it("follows --pi 1.6 over the config file's choice", async () => {
    const { child, url, exited } = await spawnServe(["--port", "0", "--config", `${FIXTURES}/serve-config.json`, "--pi", "1.6"], {}, children);
    const tools = (await (await fetch(`${url}/v1/tools`)).json()) as { pi: string };
    expect(tools.pi).toBe("1.6");
    child.kill("SIGTERM");
    expect(await exited).toEqual([0, null]);
  });
});

/** Runs `toolpool serve ARGS` that is expected to stop before it listens (no token from the environment); resolves with how it ended. */
function serveUntilExit(args: string[]): Promise<CliRun> {
  return runCli(["serve", ...args], { cwd: ROOT, env: { TOOLPOOL_TOKEN: "" } });
}
