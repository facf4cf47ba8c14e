/** Worker module of the fleet suite: sleeps `ms` milliseconds (no CPU). */
export async function execute(args: { ms?: number }): Promise<{ content: { type: "text"; text: string }[]; details: Record<string, never> }> {
  await new Promise((resolve) => setTimeout(resolve, args.ms ?? 0));
  return { content: [{ type: "text", text: "waited" }], details: {} };
}
