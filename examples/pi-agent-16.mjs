// A pi 1.6 `Agent` whose tools run on toolpool's worker-thread pool: the
// same as pi-agent.mjs (pi 0.73), for `@earendil-works/pi-agent-core` 1.6.
//
// What pi 1.6 changed for this: an `Agent` takes its model calls from a
// `streamFn` (pi-agent-core no longer finds a provider by itself), and
// pi-ai 1.6 keeps providers in a `Models` collection: `createModels()`,
// then `models.streamSimple` is the `streamFn`. The runtime follows pi
// 1.6's tool-execution rules with `pi: "1.6"`, which needs Node >= 22.19.
//
//   npm run build
//   ANTHROPIC_API_KEY=... node examples/pi-agent-16.mjs   # a real model
//   node examples/pi-agent-16.mjs                          # offline: a scripted "faux" model
import { Agent } from "@earendil-works/pi-agent-core";
import { createModels, fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import { anthropicProvider } from "@earendil-works/pi-ai/providers/anthropic";

import { builtinTools, createRuntime } from "toolpool";

const runtime = createRuntime({ pi: "1.6", tools: builtinTools(["grep", "hash"]), pool: { maxThreads: 2 } });

const models = createModels();
const model = process.env.ANTHROPIC_API_KEY ? anthropicModel() : scriptedModel();

const agent = new Agent({
  initialState: {
    systemPrompt: "You are a coding agent. Use the tools to answer; be brief.",
    model,
    tools: runtime.agentTools(),
  },
  streamFn: (model, context, options) => models.streamSimple(model, context, options),
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

/** With an API key: Anthropic's provider in the collection, one of its models. */
function anthropicModel() {
  models.setProvider(anthropicProvider());
  return models.getModel("anthropic", "claude-sonnet-4-5");
}

/** Without an API key: a model that calls two tools at once, then answers. */
function scriptedModel() {
  const faux = fauxProvider();
  models.setProvider(faux.provider);
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
