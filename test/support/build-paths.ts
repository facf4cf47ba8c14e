// Where the build (`npm run build`) writes what tests start as processes or
// hand to threads by URL. Paths only: importing this loads no module of
// src/ or dist/, so a unit test on src/ may use it too.
import { fileURLToPath } from "node:url";

/** The built CLI (`toolpool run`, `toolpool node`), for tests that start it as a process. */
export const builtCliPath = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
/** The built package's entry, for scripts that a test runs in a process of their own. */
export const builtIndexUrl = new URL("../../dist/index.js", import.meta.url);
/** The built coding tools' folder: tests import their modules at run time, as a worker thread does. */
export const builtCodingToolsUrl = new URL("../../dist/tools/coding/", import.meta.url);
