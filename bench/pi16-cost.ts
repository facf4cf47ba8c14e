/**
 * With pi 1.6's rules: what a call costs in toolpool beside pi 1.6.0's own
 * `runToolCall`, and what validation costs beside pi-ai 1.6.0's
 * `validateToolArguments`, side by side in one process. Needs Node >= 22.19
 * (pi 1.6's); `npm run bench` runs it as its `pi16` suite under such a Node.
 *
 *   node dist-bench/pi16-cost.js [--calls N] [--reps N] [--json]
 *
 * Per call, every contender runs the same in-process no-op tool (pi has no
 * pool): pi 1.6.0's `runToolCall`, toolpool's `runtime.runToolCall` and a
 * batch of one through `executeToolCalls`, both with `pi: "1.6"`; and, for
 * information, `runtime.runToolCall` of a worker tool (the call crosses to a
 * thread and back). One at a time and 64 in flight; the contenders take turns
 * repetition by repetition; medians of µs per call over the repetitions.
 */
import { parseArgs } from "node:util";

import { createRuntime, supportsPi16, workerTool, type AgentTool, type Runtime } from "toolpool";

import { validateToolArguments16 } from "../dist/coordinator/validation/pi-1.6/validate-arguments-16.js";
import { grepSchema, noopParameters, noopResult } from "./lib/constants.js";
import { rotate, runInFlight, runSerial } from "./lib/run-loop.js";
import { summarize, type Summary } from "./lib/stats.js";

type Pi16RunToolCall = (toolCall: unknown, options: Record<string, unknown>) => Promise<{ isError: boolean }>;
type Pi16Validate = (tool: unknown, toolCall: unknown) => unknown;

export interface Pi16Row {
  name: string;
  /** `serial`: one at a time; `inFlight`: 64 outstanding; `validation`: one validation. */
  mode: "serial" | "inFlight" | "validation";
  usPerCall: Summary;
  /** This row's median ÷ pi 1.6.0's median in the same mode (validation: same case). */
  ratioToPi?: number;
}

export interface Pi16CostResult {
  node: string;
  calls: number;
  reps: number;
  rows: Pi16Row[];
}

const inFlight = 64;

interface Contender {
  name: string;
  isPi: boolean;
  call: (index: number) => Promise<unknown>;
}

const validArgs = { pattern: "TODO", path: "src", ignoreCase: true, maxResults: 50, globs: ["*.ts", "*.md"] };
const validationCases = [
  { name: "valid", args: validArgs },
  { name: 'coercible ("50", "true")', args: { ...validArgs, maxResults: "50", ignoreCase: "true" } },
  { name: "invalid (missing, extra key)", args: { path: "src", extra: 1 } },
];

async function measureCalls(contenders: Contender[], calls: number, reps: number): Promise<Pi16Row[]> {
  const rows: Pi16Row[] = [];
  for (const mode of ["serial", "inFlight"] as const) {
    const samples = new Map(contenders.map((c) => [c.name, [] as number[]]));
    for (let rep = -1; rep < reps; rep++) {
      for (const contender of rotate(contenders, rep + 1)) {
        const start = performance.now();
        if (mode === "serial") await runSerial(contender.call, calls);
        else await runInFlight(contender.call, calls, inFlight);
        const us = ((performance.now() - start) * 1000) / calls;
        // Repetition -1 warms every contender up.
        if (rep >= 0) samples.get(contender.name)!.push(us);
      }
    }
    const pi = summarize(samples.get(contenders.find((c) => c.isPi)!.name)!);
    for (const contender of contenders) {
      const usPerCall = summarize(samples.get(contender.name)!);
      rows.push({ name: contender.name, mode, usPerCall, ...(contender.isPi ? {} : { ratioToPi: usPerCall.median / pi.median }) });
    }
  }
  return rows;
}

function measureValidation(piValidate: Pi16Validate, calls: number, reps: number): Pi16Row[] {
  const rows: Pi16Row[] = [];
  for (const testCase of validationCases) {
    const contenders = [
      {
        name: `pi-ai 1.6.0 validateToolArguments, ${testCase.name}`,
        isPi: true,
        run: () => tryValidate(() => piValidate({ name: "grep", parameters: grepSchema }, { name: "grep", arguments: testCase.args })),
      },
      {
        name: `toolpool, pi 1.6 rules, ${testCase.name}`,
        isPi: false,
        run: () => tryValidate(() => validateToolArguments16("grep", grepSchema, testCase.args)),
      },
    ];
    const samples = new Map(contenders.map((c) => [c.name, [] as number[]]));
    for (let rep = -1; rep < reps; rep++) {
      for (const contender of rotate(contenders, rep + 1)) {
        const start = performance.now();
        for (let i = 0; i < calls; i++) contender.run();
        if (rep >= 0) samples.get(contender.name)!.push(((performance.now() - start) * 1000) / calls);
      }
    }
    const pi = summarize(samples.get(contenders[0]!.name)!);
    for (const contender of contenders) {
      const usPerCall = summarize(samples.get(contender.name)!);
      rows.push({ name: contender.name, mode: "validation", usPerCall, ...(contender.isPi ? {} : { ratioToPi: usPerCall.median / pi.median }) });
    }
  }
  return rows;
}

/** Runs one validation; a validation error is an outcome here, not a failure of the bench. */
function tryValidate(run: () => unknown): unknown {
  try {
    return run();
  } catch (error) {
    return error;
  }
}

export async function runPi16Cost(calls: number, reps: number): Promise<Pi16CostResult> {
  if (!supportsPi16()) throw new Error(`pi 1.6 needs Node >= 22.19; this is ${process.version}`);
  const agentCore = (await import("@earendil-works/pi-agent-core")) as unknown as { runToolCall: Pi16RunToolCall };
  const piAi = (await import("@earendil-works/pi-ai")) as unknown as { validateToolArguments: Pi16Validate };
  const execute = async (): Promise<typeof noopResult> => noopResult;
  const inlineTool: AgentTool = { name: "noop", label: "noop", description: "Returns a constant", parameters: noopParameters, execute };
  const inline: Runtime = createRuntime({ pi: "1.6", tools: [inlineTool] });
  const pooled: Runtime = createRuntime({
    pi: "1.6",
    tools: [
      workerTool({
        name: "noop",
        description: "Returns a constant",
        parameters: noopParameters,
        module: new URL("./tools/noop.js", import.meta.url),
      }),
    ],
    pool: { minThreads: 1, maxThreads: 1 },
  });
  try {
    const toolCall = (index: number) => ({ type: "toolCall" as const, id: `call_${index}`, name: "noop", arguments: {} });
    const assistantMessage = { role: "assistant" as const, content: [toolCall(0)], stopReason: "toolUse" as const };
    const context = { systemPrompt: "", messages: [], tools: [inlineTool] };
    const check = (outcome: { isError: boolean }): void => {
      if (outcome.isError) throw new Error(`a no-op call failed: ${JSON.stringify(outcome)}`);
    };
    const contenders: Contender[] = [
      {
        name: "pi 1.6.0 runToolCall",
        isPi: true,
        call: async (index) => check(await agentCore.runToolCall(toolCall(index), { tools: [inlineTool], context, assistantMessage })),
      },
      {
        name: "toolpool runtime.runToolCall",
        isPi: false,
        call: async (index) => check(await inline.runToolCall(toolCall(index), { assistantMessage, context })),
      },
      {
        name: "toolpool executeToolCalls (batch of 1)",
        isPi: false,
        call: async (index) => {
          const { messages } = await inline.executeToolCalls({ role: "assistant", content: [toolCall(index)] });
          check(messages[0]!);
        },
      },
      {
        name: "toolpool runtime.runToolCall, worker tool (1 thread)",
        isPi: false,
        call: async (index) => check(await pooled.runToolCall(toolCall(index), { assistantMessage, context })),
      },
    ];
    const rows = await measureCalls(contenders, calls, reps);
    rows.push(...measureValidation(piAi.validateToolArguments, calls, reps));
    return { node: process.version, calls, reps, rows };
  } finally {
    await Promise.all([inline.close(), pooled.close()]);
  }
}

/** Markdown lines of a result. */
export function renderPi16Cost(result: Pi16CostResult): string[] {
  const lines = [
    `## With pi 1.6's rules: per call and validation beside pi 1.6.0 (Node ${result.node}, ${result.calls} calls × ${result.reps} reps)`,
    "",
    "Same in-process no-op tool for every per-call contender (pi runs tools in process); the worker row is for information. " +
      `Modes: one at a time, ${inFlight} in flight; validation of a grep-like schema per case.`,
    "",
    "| contender | mode | µs per call | ÷ pi 1.6.0 |",
    "|---|---|---:|---:|",
  ];
  for (const row of result.rows) {
    const mode = row.mode === "serial" ? "one at a time" : row.mode === "inFlight" ? `${inFlight} in flight` : "validation";
    const decimals = row.usPerCall.median < 10 ? 2 : 1;
    const range = `${row.usPerCall.median.toFixed(decimals)} [${row.usPerCall.min.toFixed(decimals)}–${row.usPerCall.max.toFixed(decimals)}]`;
    lines.push(`| ${row.name} | ${mode} | ${range} | ${row.ratioToPi === undefined ? "" : `${row.ratioToPi.toFixed(2)}×`} |`);
  }
  lines.push("");
  return lines;
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const { values } = parseArgs({
    options: { calls: { type: "string", default: "20000" }, reps: { type: "string", default: "7" }, json: { type: "boolean" } },
  });
  if (!supportsPi16()) {
    console.error(`pi 1.6 needs Node >= 22.19; this is ${process.version}`);
    process.exit(2);
  }
  const result = await runPi16Cost(Number(values.calls), Number(values.reps));
  console.log(values.json === true ? JSON.stringify(result) : renderPi16Cost(result).join("\n"));
}
