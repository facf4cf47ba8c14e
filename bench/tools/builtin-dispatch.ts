/**
 * Bare-Piscina task of suite 5: runs a built-in tool's `execute` in the
 * worker, as toolpool's worker entry would, minus everything toolpool adds
 * (abort signal backed by shared memory, result checks, leftover-work checks,
 * partial results). The task names the tool module by URL.
 */
interface ToolModule {
  execute: (args: unknown, ctx: { toolCallId: string; signal: AbortSignal; onUpdate: () => void }) => Promise<unknown>;
}

const modules = new Map<string, Promise<ToolModule>>();
const neverAborted = new AbortController().signal;
const ignoreUpdate = (): void => {};

export default async function runBuiltinTool(task: { moduleUrl: string; toolCallId: string; args: unknown }): Promise<unknown> {
  let loading = modules.get(task.moduleUrl);
  if (loading === undefined) {
    loading = import(task.moduleUrl) as Promise<ToolModule>;
    modules.set(task.moduleUrl, loading);
  }
  const tool = await loading;
  return tool.execute(task.args, { toolCallId: task.toolCallId, signal: neverAborted, onUpdate: ignoreUpdate });
}
