/** One progress line on stderr, so stdout stays a clean markdown report. */
export function logStep(message: string): void {
  process.stderr.write(`[bench ${(performance.now() / 1000).toFixed(1)}s] ${message}\n`);
}
