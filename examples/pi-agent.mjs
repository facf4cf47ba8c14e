// A pi `Agent` whose tools run on toolpool's worker-thread pool.
//
// `runtime.agentTools()` turns every toolpool tool into a pi `AgentTool`:
// worker tools dispatch their execute to the pool, so pi's own agent loop
// (its events, hooks and parallel execution) drives them while grep, hash
// and diff burn CPU on worker threads instead of pi's event loop.
//
//   npm run build
//   ANTHROPIC_API_KEY=... node examples/pi-agent.mjs   # a real model
//   node examples/pi-agent.mjs                          # offline: a scripted "faux" model
import { Agent } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage, fauxToolCall, getModel, registerFauxProvider } from "@mariozechner/pi-ai";

import { builtinTools, createRuntime } from "toolpool";

const runtime = createRuntime({ tools: builtinTools(["grep", "hash"]), pool: { maxThreads: 2 } });

const model = process.env.ANTHROPIC_API_KEY ? getModel("anthropic", "claude-sonnet-4-5") : scriptedModel();

const agent = new Agent({
  initialState: {
    systemPrompt: "You are a coding agent. Use the tools to answer; be brief.",
    model,
    tools: runtime.agentTools(),
  },
  toolExecution: "parallel",
});

agent.subscribe((event) => {
  if (event.type === "tool_execution_start") console.log(`→ ${event.toolName} ${JSON.stringify(event.args)}`);
  if (event.type === "tool_execution_end") {
    const text = event.result.content.map((block) => block.text ?? "").join("\n");
    console.log(`← ${event.toolName}${event.isError ? " (error)" : ""}: ${text.split("\n")[0]}`);
  }
  if (event.type === "message_end" && event.message.role === "assistant") {
    const text = event.message.content.filter((block) => block.type === "text").map((block) => block.text).join("");
    if (text) console.log(`assistant: ${text}`);
  }
});

try {
  await agent.prompt("Where is executeToolCalls defined under src/, and what is the sha256 of the word 'toolpool'?");
} finally {
  await runtime.close();
}

/** Without an API key: a model that calls two tools at once, then answers. */
function scriptedModel() {
  const faux = registerFauxProvider();
  faux.setResponses([
    fauxAssistantMessage(
      [
        fauxToolCall("grep", { pattern: "executeToolCalls\\(", path: "src", maxResults: 5 }),
        fauxToolCall("hash", { text: "toolpool" }),
      ],
      { stopReason: "toolUse" },
    ),
    fauxAssistantMessage("Both tools ran on toolpool's worker threads; the results are above."),
  ]);
  return faux.getModel();
}
