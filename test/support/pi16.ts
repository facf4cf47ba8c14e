import { supportsPi16 } from "toolpool";

/**
 * Says loudly, once per file, that a file's pi 1.6 tests are skipped: pi 1.6
 * (and toolpool's `pi: "1.6"`) needs Node >= 22.19. CI runs them on Node 22
 * and 26, and fails when none of them ran there.
 */
export function warnSkippedPi16(file: string): void {
  if (supportsPi16()) return;
  console.warn(`SKIPPED: the pi 1.6 tests of ${file} need Node >= 22.19 (this is Node ${process.versions.node}).`);
}
