/**
 * Takes docs/live-view.png: a demo run of `toolpool serve`'s live view (a
 * server on a free loopback port, several sessions, a tool error and a
 * crashed worker), shot by a headless Chromium driven by playwright-core.
 *
 *   npm run build && node scripts/screenshot-live-view.mjs [OUT.png]
 *
 * Chromium: $TOOLPOOL_CHROMIUM, else /usr/bin/chromium (Debian's `chromium`).
 */
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

import { createRuntime, createServer, workerTool } from "../dist/index.js";

const out = process.argv[2] ?? fileURLToPath(new URL("../docs/live-view.png", import.meta.url));
const token = "demo-token";
const work = workerTool({
  name: "work",
  description: "Waits, then returns, fails or crashes",
  parameters: {
    type: "object",
    properties: { ms: { type: "integer" }, fail: { type: "string" }, crash: { type: "boolean" } },
    additionalProperties: false,
  },
  module: new URL("./live-view-demo-tools.mjs", import.meta.url),
});
const grep = workerTool({
  name: "grep",
  description: "Stands in for a search (waits)",
  parameters: { type: "object", properties: { ms: { type: "integer" } } },
  module: new URL("./live-view-demo-tools.mjs", import.meta.url),
});
const server = createServer(createRuntime({ tools: [work, grep], pool: { maxThreads: 4, minThreads: 4 } }), { port: 0, token });
const url = await server.listen();

async function batch(session, calls) {
  const response = await fetch(`${url}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${token}`, "x-toolpool-session": session },
    body: JSON.stringify({
      assistantMessage: {
        role: "assistant",
        content: calls.map(([id, name, args]) => ({ type: "toolCall", id, name, arguments: args })),
      },
    }),
  });
  await response.arrayBuffer();
}

/** Turns of one session: `turns` batches of `calls` calls, each call `ms` long give or take. */
async function session(name, turns, calls, ms, extra = () => ({})) {
  for (let turn = 0; turn < turns; turn++) {
    await batch(
      name,
      Array.from({ length: calls }, (_, index) => {
        const id = `${name.split("-")[0]}-${turn}.${index}`;
        const tool = index % 2 === 0 ? "work" : "grep";
        return [id, tool, { ms: Math.round(ms * (0.5 + ((turn * 7 + index * 13) % 10) / 10)), ...extra(turn, index) }];
      }),
    );
  }
}

const browser = await chromium.launch({
  executablePath: process.env.TOOLPOOL_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: process.getuid?.() === 0 ? ["--no-sandbox"] : [],
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1100 }, deviceScaleFactor: 1 });
  await page.goto(`${url}/ui`);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Connect" }).click();
  await page.waitForFunction(() => document.querySelectorAll("[data-thread]").length >= 4);
  await page.selectOption("#window", "15");
  const sessions = Promise.all([
    session("eval-farm", 10, 6, 400),
    session("agent-alice", 12, 2, 250, (turn, index) => (turn === 3 && index === 1 ? { fail: "pattern not found" } : {})),
    session("agent-bob", 10, 3, 300),
    session("ci-harness", 6, 2, 400, (turn, index) => (turn === 2 && index === 0 ? { crash: true } : {})),
  ]);
  // Mid-run: calls waiting and running, the crash already in.
  await page.waitForFunction(
    () => document.querySelector('[data-outcome="fault"]') !== null && document.querySelectorAll("[data-call-id]").length >= 110,
  );
  await page.waitForFunction(() => [...document.querySelectorAll("#sessions tbody tr")].some((row) => Number(row.children[1]?.textContent) > 0));
  await mkdir(dirname(out), { recursive: true });
  await page.screenshot({ path: out, fullPage: true });
  console.log(`wrote ${out}`);
  await sessions;
} finally {
  await browser.close();
  await server.close();
}
