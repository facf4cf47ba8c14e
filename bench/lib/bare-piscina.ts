/** Bare Piscina as the dispatch suites run it beside toolpool. */
import { Piscina } from "piscina";

/**
 * A bare Piscina of `threads` threads running `module`'s default export:
 * at its `"defaults"` (the thread counts are the one thing set), or at the
 * `"toolpool"` settings, the options toolpool's pool gives Piscina
 * (src/workers/piscina-host.ts) besides its own queue and balancer, which
 * are toolpool's work and so measured as its overhead.
 */
export function createBarePiscina(settings: "defaults" | "toolpool", module: URL, threads: number, idleTimeout: number): Piscina {
  if (settings === "defaults") return new Piscina({ filename: module.href, minThreads: threads, maxThreads: threads });
  return new Piscina({
    filename: module.href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout,
    concurrentTasksPerWorker: 1,
    stricterFIFO: true,
    recordTiming: false,
  });
}
