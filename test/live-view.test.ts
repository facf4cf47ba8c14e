import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer as createTcpServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { createRuntime, createServer, supportsPi16, type ToolpoolServer } from "toolpool";

import { GateController } from "./support/gates.js";
import { fault, work } from "./support/pool-event-tools.js";
import { until } from "./support/helpers.js";
import { spawnServe, type ServeProcess } from "./support/serve-process.js";

// A real headless Chromium (Debian's `chromium`, driven by playwright-core)
// opens the live view of a real server running real worker threads.
const chromiumPath = process.env.TOOLPOOL_CHROMIUM || "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);
const isCi = Boolean(process.env.CI);
if (!hasChromium && !isCi) {
  console.warn(`test/live-view.test.ts: skipped: no Chromium at ${chromiumPath} (install Debian's chromium or set TOOLPOOL_CHROMIUM)`);
}

/** The page's `document`, as the functions run in the browser below use it (tests compile without the DOM's types). */
interface PageElement {
  textContent: string | null;
  children: ArrayLike<PageElement>;
}
declare const document: {
  getElementById(id: string): PageElement | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
};
declare const sessionStorage: { length: number };
declare const location: { href: string; hash: string };

const token = `live-view-${randomUUID()}`;
const gates = new GateController();
const servers: ToolpoolServer[] = [];
let browser: Browser | undefined;

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close({ graceMs: 0 })));
  gates.reset();
});

afterAll(async () => {
  await browser?.close();
  gates.close();
});

/** The browser of every test here, launched once. */
async function launchBrowser(): Promise<void> {
  if (!hasChromium) throw new Error(`CI needs Chromium at ${chromiumPath} (.ci/run installs Debian's chromium; TOOLPOOL_CHROMIUM names another)`);
  const isRoot = process.getuid?.() === 0;
  browser ??= await chromium.launch({ executablePath: chromiumPath, headless: true, args: isRoot ? ["--no-sandbox"] : [] });
}

/** Posts one batch of `session` and resolves with its JSON outcome. */
async function postBatch(url: string, session: string, calls: { id: string; name: string; arguments?: object }[]): Promise<unknown> {
  const response = await fetch(`${url}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${token}`, "x-toolpool-session": session },
    body: JSON.stringify({
      assistantMessage: {
        role: "assistant",
        content: calls.map((call) => ({ type: "toolCall", id: call.id, name: call.name, arguments: call.arguments ?? {} })),
      },
    }),
  });
  expect(response.status).toBe(200);
  return response.json();
}

/** Collects what would show a broken page: script errors and Content-Security-Policy refusals. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/401|Unauthorized/.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  return problems;
}

describe.skipIf(!hasChromium && !isCi)("live view (/ui) in Chromium", () => {
  beforeAll(launchBrowser, 120_000);

  it("shows nothing of the pool without the token, then threads, a bar per call (the crash named by its code) and the sessions", async () => {
    const runtime = createRuntime({ tools: [work, fault], pool: { maxThreads: 2, minThreads: 2 } });
    const server = createServer(runtime, { host: "127.0.0.1", port: 0, token });
    servers.push(server);
    const url = await server.listen();
    const page = await browser!.newPage();
    const problems = watchProblems(page);
    await page.goto(`${url}/ui`);

    // Without the token: the form, and nothing of the pool.
    await expect.poll(() => page.getByLabel("Token").isVisible()).toBe(true);
    expect(await page.locator("#pool").isHidden()).toBe(true);
    await page.getByLabel("Token").fill("not-the-token");
    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForFunction(() => document.getElementById("status")?.textContent?.startsWith("Refused"));
    expect(await page.locator("#pool").isHidden()).toBe(true);
    expect(await page.locator("[data-thread]").count()).toBe(0);
    expect(await page.locator("[data-call-id]").count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(server.diagnosePoolEvents()?.watchers).toEqual([]);

    // With it: the threads show at once.
    await page.getByLabel("Token").fill(token);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForFunction(() => document.querySelectorAll("[data-thread]").length >= 2);
    expect(await page.locator("#pool").isVisible()).toBe(true);
    // The timeline opens on its last 15 s.
    expect(await page.locator("#axis-start").textContent()).toBe("−15 s");

    // Three sessions; gamma's call holds its thread until the gate opens.
    const gate = `${randomUUID()}:held`;
    const held = postBatch(url, "gamma", [{ id: "gamma-held", name: "work", arguments: { gate } }]);
    await gates.whenWaiting(gate);
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-thread][data-state="busy"]')].some((lane) => lane.textContent?.includes("gamma-held")),
    );
    // Its row: name, waiting for a thread, waiting for a cap, running, …
    await page.waitForFunction(() => document.querySelector('[data-session="gamma"]')?.children[3]?.textContent === "1");
    expect(await page.locator('[data-session="gamma"] td').nth(2).textContent()).toBe("0");
    await Promise.all([
      postBatch(url, "alpha", [
        { id: "alpha-1", name: "work", arguments: { text: "one" } },
        { id: "alpha-2", name: "work", arguments: { fail: "the tool failed" } },
      ]),
      postBatch(url, "beta", [
        { id: "beta-1", name: "fault", arguments: {} },
        { id: "beta-crash", name: "fault", arguments: { fault: "crash" } },
      ]),
    ]);
    gates.open(gate);
    await held;

    const ids = ["gamma-held", "alpha-1", "alpha-2", "beta-1", "beta-crash"];
    await page.waitForFunction((count) => document.querySelectorAll("[data-call-id]").length === count, ids.length);
    for (const id of ids) expect(await page.locator(`[data-call-id="${id}"]`).count(), id).toBe(1);
    const crash = page.locator('[data-call-id="beta-crash"]');
    expect(await crash.getAttribute("title")).toContain("TP_ERR_WORKER_CRASH");
    expect(await crash.textContent()).toContain("TP_ERR_WORKER_CRASH");
    expect(await crash.getAttribute("title")).toMatch(/session beta/);
    expect(await page.locator('[data-call-id="alpha-2"]').getAttribute("data-outcome")).toBe("error");
    expect(await page.locator('[data-call-id="alpha-1"]').getAttribute("data-outcome")).toBe("ok");
    // Each bar sits in the lane of the thread that ran it.
    for (const id of ids) expect(await page.locator(`[data-thread] [data-call-id="${id}"]`).count(), id).toBe(1);

    for (const session of ["alpha", "beta", "gamma"]) {
      await page.waitForFunction((name) => document.querySelector(`#sessions [data-session="${name}"]`) !== null, session);
    }
    await page.waitForFunction(() => document.querySelector('#tools [data-tool="fault"]')?.textContent?.includes("TP_ERR_WORKER_CRASH ×1"));
    await page.waitForFunction(() => document.getElementById("faults")?.textContent?.includes("beta-crash"));
    // The crashed worker's thread shows as retired.
    await page.waitForFunction(() => document.querySelector('[data-thread][data-state="retired"]') !== null);
    expect(problems).toEqual([]);
    await page.close();
    await until(() => server.diagnosePoolEvents()?.watchers.length === 0, "no pool-events watcher left");
  }, 180_000);
});

/**
 * A TCP relay in front of `target` (`http://HOST:PORT`) that keeps every
 * byte the browser sends: what the server receives, request lines and
 * headers, exactly.
 */
async function recordingRelay(target: string): Promise<{ url: string; sent: () => string; close: () => Promise<void> }> {
  const { hostname, port } = new URL(target);
  let sent = "";
  const server: Server = createTcpServer((client) => {
    const upstream = connect(Number(port), hostname);
    client.on("data", (chunk) => (sent += chunk.toString("latin1")));
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent: () => sent,
    close: () => {
      server.close();
      return Promise.resolve();
    },
  };
}

/** The request lines (`GET /ui/ HTTP/1.1`) among the bytes a browser sent. */
function requestLinesOf(sent: string): string[] {
  return sent.match(/^[A-Z]+ \S+ HTTP\/1\.[01]$/gm) ?? [];
}

/** The live view line `toolpool serve` prints on stderr, once it has. */
async function liveViewLine(served: ServeProcess): Promise<string> {
  await until(
    () => /live view.*\n/.test(served.stderr()),
    () => `a live view line on serve's stderr: ${served.stderr()}`,
    { limitMs: 30_000 },
  );
  return /^toolpool serve: live view.*$/m.exec(served.stderr())![0];
}

describe.skipIf(!hasChromium && !isCi)("live view from the link toolpool serve prints", () => {
  const base = join(tmpdir(), `toolpool-live-link-${process.pid}`);
  const children: ChildProcess[] = [];
  beforeAll(launchBrowser, 120_000);
  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
    rmSync(base, { recursive: true, force: true });
  });

  /**
   * Opens `link` (served at `servedUrl`) through a recording relay and waits
   * for a connected view: the stream's status and the pool's threads.
   * Returns what the address bar and the server saw.
   */
  async function openConnected(
    link: string,
    servedUrl: string,
  ): Promise<{ location: { href: string; hash: string }; stored: string | null; requestLines: string[]; sent: string }> {
    const relay = await recordingRelay(servedUrl);
    const page = await browser!.newPage();
    const problems = watchProblems(page);
    try {
      await page.goto(link.replace(servedUrl, relay.url));
      await page.waitForFunction(() => document.getElementById("status")?.textContent === "Connected: live.");
      await page.waitForFunction(() => document.querySelectorAll("[data-thread]").length >= 1);
      expect(await page.locator("#pool").isVisible()).toBe(true);
      expect(problems).toEqual([]);
      const seen = await page.evaluate(() => ({ href: location.href, hash: location.hash }));
      const stored = await page.evaluate(() =>
        (globalThis as unknown as { sessionStorage: { getItem(key: string): string | null } }).sessionStorage.getItem("toolpool-token"),
      );
      return { location: seen, stored, requestLines: requestLinesOf(relay.sent()), sent: relay.sent() };
    } finally {
      await page.close();
      await relay.close();
    }
  }

  it.skipIf(!supportsPi16())(
    "opens connected from the link serve prints with the token it generated, which leaves the address bar and rides no request line (pi 1.6)",
    async () => {
      mkdirSync(join(base, "coding"), { recursive: true });
      const served = await spawnServe(["--coding-tools", "bash", "--root", join(base, "coding"), "--threads", "1"], {}, children);
      const line = await liveViewLine(served);
      const token = /Authorization: Bearer (\S+)/.exec(served.stderr())![1]!;
      const link = /(http:\/\/\S+)$/.exec(line)![1]!;
      expect(link).toBe(`${served.url}/ui/#token=${encodeURIComponent(token)}`);

      const seen = await openConnected(link, served.url);
      expect(seen.location.href).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ui\/$/);
      expect(seen.location.hash).toBe("");
      expect(seen.requestLines).toContain("GET /ui/ HTTP/1.1");
      expect(seen.requestLines).toContain("GET /v1/pool/events HTTP/1.1");
      for (const requestLine of seen.requestLines) {
        expect(requestLine).not.toContain(token);
        expect(requestLine).not.toContain("token");
      }
      // The token went as the header, and only to the stream.
      expect(seen.sent.match(new RegExp(`authorization: Bearer ${token}`, "gi"))).toHaveLength(1);
      served.child.kill("SIGTERM");
      await served.exited;
    },
    120_000,
  );

  it("prints a link without a token it was given, which opens connected with the token in its place", async () => {
    const token = `given-${randomUUID()}+/`;
    mkdirSync(base, { recursive: true });
    writeFileSync(join(base, "token"), `${token}\n`);
    const served = await spawnServe(["--token-file", join(base, "token"), "--threads", "1"], {}, children);
    const line = await liveViewLine(served);
    expect(line).toContain(`${served.url}/ui/#token=...`);
    expect(served.stderr()).not.toContain(token);
    expect(served.stderr()).not.toContain(encodeURIComponent(token));

    const seen = await openConnected(`${served.url}/ui/#token=${encodeURIComponent(token)}`, served.url);
    expect(seen.location.hash).toBe("");
    for (const requestLine of seen.requestLines) expect(requestLine).not.toContain("token");
    served.child.kill("SIGTERM");
    await served.exited;
  }, 120_000);

  it("prints the plain link of a server without a token, which opens connected", async () => {
    const served = await spawnServe(["--threads", "1"], {}, children);
    expect(await liveViewLine(served)).toBe(`toolpool serve: live view: ${served.url}/ui/`);
    const seen = await openConnected(`${served.url}/ui/`, served.url);
    expect(seen.requestLines).toContain("GET /v1/pool/events HTTP/1.1");
    // A tokenless connection keeps no token in the tab (a server that later needs one gets the form, not "Refused").
    expect(seen.stored).toBeNull();
    // An empty token in a link counts as none.
    expect((await openConnected(`${served.url}/ui/#token=`, served.url)).stored).toBeNull();
    served.child.kill("SIGTERM");
    await served.exited;
  }, 120_000);
});
