import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Worker-thread tests run against the built package (dist/); keep files
    // in separate forks so a misbehaving pool cannot leak into another file.
    pool: "forks",
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
