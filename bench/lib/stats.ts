/** Summary of repeated measurements: the median, with the spread around it. */
export interface Summary {
  n: number;
  median: number;
  min: number;
  max: number;
  p25: number;
  p75: number;
}

/** The `p`-th percentile (0..100) of `values`, linearly interpolated. Throws on an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new Error("percentile of an empty list");
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lowValue = sorted[low]!;
  const highValue = sorted[high]!;
  return lowValue + (highValue - lowValue) * (rank - low);
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export function summarize(values: readonly number[]): Summary {
  return {
    n: values.length,
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    p25: percentile(values, 25),
    p75: percentile(values, 75),
  };
}

/** `median [min–max]` with the given number of decimals. */
export function formatSummary(summary: Summary, decimals: number): string {
  const f = (value: number): string => value.toFixed(decimals);
  return `${f(summary.median)} [${f(summary.min)}–${f(summary.max)}]`;
}
