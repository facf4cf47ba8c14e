/** "Did you mean": a name within a third of `name`'s length in edits (case ignored), else one containing it (3+ characters). */
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

/** The optimal string alignment distance: Levenshtein with adjacent swaps. */
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
