import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Worker-thread tests run against the built package (dist/); keep files
    // in separate forks so a misbehaving pool cannot leak into another file.
    pool: "forks",
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // With --coverage (CI's npm test): the share of src/ that tests loading
    // src/ run in their own process; the build, worker threads and child
    // processes are not mapped back. The floor sits a few points under the
    // figure CONTRIBUTING.md gives; it holds for the whole suite only.
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      reporter: ["text-summary", "json-summary"],
      reportsDirectory: "coverage",
      thresholds: { lines: 21, statements: 20, branches: 17, functions: 14 },
    },
    projects: [
      {
        extends: true,
        test: { name: "suite", include: ["test/**/*.test.ts"], exclude: ["test/soak.test.ts", "test/fleet-soak.test.ts"] },
      },
      // The fleet soak (node kills over minutes) runs under `npm run soak` only.
      ...(process.env.TOOLPOOL_FLEET_SOAK ? [{ extends: true, test: { name: "fleet-soak", include: ["test/fleet-soak.test.ts"] } }] : []),
      {
        extends: true,
        test: {
          name: "soak",
          include: ["test/soak.test.ts"],
          // The soak compares the process RSS before and after. V8 grows the
          // young generation under load (to 16 MiB a semi-space) and gives it
          // back only lazily: capped, the comparison measures memory that was
          // kept, not heap headroom. (The JS heap in use stays flat either way.)
          execArgv: ["--max-semi-space-size=2"],
        },
      },
    ],
  },
});
