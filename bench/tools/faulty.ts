/**
 * Worker module of the fault-recovery suite: commits the fault named in
 * `args.fault` (`crash`, `oom`, `spin`), or returns at once.
 */
export async function execute(args: { fault?: string }): Promise<{ content: { type: "text"; text: string }[]; details: object }> {
  switch (args.fault) {
    case "crash":
      await new Promise(() => {
        setTimeout(() => {
          throw new Error("bench crash");
        }, 0);
      });
      break;
    case "oom": {
      const hog: number[][] = [];
      for (;;) hog.push(new Array<number>(100_000).fill(hog.length));
    }
    case "spin":
      for (;;) {
        // never yields: only the time limit stops it
      }
  }
  return { content: [{ type: "text", text: "ok" }], details: {} };
}
