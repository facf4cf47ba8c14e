/**
 * The "did you mean" of toolpool's refusals of unknown names (options,
 * settings): the known name closest to a misspelt one.
 *
 * @module
 */

/**
 * The name of `known` closest to `name` by edit distance (insertions,
 * deletions, substitutions and swaps of two neighbours each count one; case
 * is ignored) when it is within a third of `name`'s length (at least 1, at
 * most 3 edits); else the first known name that holds `name` whole (3
 * characters or more: `threads` → `maxThreads`); else `undefined`. Ties go to
 * the first of `known`.
 *
 * @example
 * closestName("confnie", ["tools", "confine", "workspace"]); // "confine"
 * closestName("pol", ["pool", "pi", "tools"]); // "pool"
 * closestName("threads", ["maxThreads", "minThreads"]); // "maxThreads"
 * closestName("zzz", ["pool"]); // undefined
 */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  const lowerName = name.toLowerCase();
  const bound = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | undefined;
  let bestDistance = bound + 1;
  let holder: string | undefined;
  for (const candidate of known) {
    const lowerCandidate = candidate.toLowerCase();
    const distance = editDistance(lowerName, lowerCandidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
    if (holder === undefined && name.length >= 3 && lowerCandidate.includes(lowerName)) holder = candidate;
  }
  return best ?? holder;
}

/** Levenshtein distance with adjacent swaps (the optimal string alignment distance). */
function editDistance(a: string, b: string): number {
  // Rows i-2, i-1 and i of the table, over the characters of b.
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, beforePrevious[j - 2]! + 1);
      current.push(distance);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}
