/**
 * A Piscina task that runs one of pi's coding tools, as pi makes it, with
 * nothing of toolpool: the bare-threads arm of `bench/coding-sessions.ts`.
 * Partial results are dropped; there is no abort, no validation, no cap.
 */
interface PiTool {
  name: string;
  execute: (toolCallId: string, args: unknown) => Promise<unknown>;
}

const piFactories = ["createReadTool", "createBashTool", "createEditTool", "createWriteTool", "createGrepTool", "createFindTool", "createLsTool"];

/** pi's tools of a workspace, made once per thread. */
const toolsByCwd = new Map<string, Promise<Map<string, PiTool>>>();

function toolsOf(cwd: string): Promise<Map<string, PiTool>> {
  let tools = toolsByCwd.get(cwd);
  if (tools === undefined) {
    tools = import("@earendil-works/pi-coding-agent").then((module) => {
      const pi = module as unknown as Record<string, (cwd: string) => PiTool>;
      return new Map(piFactories.map((name) => pi[name]!(cwd)).map((tool) => [tool.name, tool]));
    });
    toolsByCwd.set(cwd, tools);
  }
  return tools;
}

export default async function runPiTool(task: { cwd: string; toolCallId: string; name: string; args: unknown }): Promise<unknown> {
  const tool = (await toolsOf(task.cwd)).get(task.name);
  if (tool === undefined) throw new Error(`no pi tool named ${task.name}`);
  return tool.execute(task.toolCallId, task.args);
}
