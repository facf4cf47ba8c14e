/**
 * Counts, in a vitest JSON report (`--reporter=json --outputFile.json=FILE`),
 * the tests whose full name (describe names and test name) contains a
 * string, by outcome; CI uses it so that tests guarded by a Node version
 * cannot silently skip on the Node that should run them.
 *
 *   node scripts/count-named-tests.mjs REPORT NAME [--require-passed | --require-passed-if-present]
 *
 * Prints one line with the counts. Exits 1 when the report cannot be read,
 * when any test of that name failed, with `--require-passed` when none of
 * them passed, and with `--require-passed-if-present` when some are in the
 * report but none passed (all skipped, say). Without either flag it only
 * reports. Run it with the Node whose report it reads: the line names that Node.
 */
import { readFileSync } from "node:fs";

const [reportPath, name, mode, ...rest] = process.argv.slice(2);
const modes = ["--require-passed", "--require-passed-if-present"];
if (reportPath === undefined || name === undefined || rest.length > 0 || (mode !== undefined && !modes.includes(mode))) {
  console.error(`Usage: count-named-tests.mjs REPORT NAME [${modes.join(" | ")}]; got ${JSON.stringify(process.argv.slice(2))}`);
  process.exit(2);
}

let report;
try {
  report = JSON.parse(readFileSync(reportPath, "utf8"));
} catch (error) {
  console.error(`count-named-tests: cannot read the vitest JSON report ${reportPath}: ${error.message}`);
  process.exit(1);
}
if (!Array.isArray(report.testResults)) {
  console.error(`count-named-tests: ${reportPath} is not a vitest JSON report (no testResults array)`);
  process.exit(1);
}

const counts = { passed: 0, failed: 0, skipped: 0 };
const failedNames = [];
for (const file of report.testResults) {
  for (const test of file.assertionResults ?? []) {
    const fullName = [...(test.ancestorTitles ?? []), test.title].join(" ");
    if (!fullName.includes(name)) continue;
    if (test.status === "passed") counts.passed += 1;
    else if (test.status === "failed") {
      counts.failed += 1;
      failedNames.push(fullName);
    } else counts.skipped += 1; // "skipped", "pending", "todo"
  }
}
const present = counts.passed + counts.failed + counts.skipped;
const summary = `tests named "${name}" on Node ${process.versions.node}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
console.log(summary);

if (counts.failed > 0) {
  console.error(`FAIL: ${counts.failed} test(s) named "${name}" failed:\n  ${failedNames.join("\n  ")}`);
  process.exit(1);
}
if (mode === "--require-passed" && counts.passed === 0) {
  console.error(
    `FAIL: expected at least one test named "${name}" to run and pass, got ${present === 0 ? "none in the report" : `${counts.skipped} skipped and none passed`}`,
  );
  process.exit(1);
}
if (mode === "--require-passed-if-present" && present > 0 && counts.passed === 0) {
  console.error(`FAIL: ${present} test(s) named "${name}" are in the suite and none ran and passed (${counts.skipped} skipped)`);
  process.exit(1);
}
