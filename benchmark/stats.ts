/** Small statistics and formatting helpers for the benchmark's tables. */

/** The `p`-th percentile (0–100) of `values`, linearly interpolated between closest ranks. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p / 100) * (sorted.length - 1)
  const lo = Math.floor(rank)
  const hi = Math.ceil(rank)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo)
}

export const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
export const mean = (values: number[]) => (values.length === 0 ? NaN : sum(values) / values.length)

/** A duration in milliseconds, in a unit that keeps 3 significant digits: `12.3 µs`, `4.56 ms`, `7.89 s`, `12.5 min`, `3.20 h`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a'
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`
  if (ms < 1000) return `${ms.toPrecision(3)} ms`
  if (ms < 100_000) return `${(ms / 1000).toPrecision(3)} s`
  if (ms < 6_000_000) return `${(ms / 60_000).toPrecision(3)} min`
  return `${(ms / 3_600_000).toPrecision(3)} h`
}

/** A ratio such as `123×` or `0.45×`. */
export function ratio(r: number): string {
  if (!Number.isFinite(r)) return 'n/a'
  return r >= 10 ? `${Math.round(r).toLocaleString('en-US')}×` : `${r.toPrecision(2)}×`
}

/** A markdown table. */
export function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

/** Evenly spread sample points: `count` prefix lengths out of `1..n`, at the middle of equal slices. */
export function sampleTurns(n: number, count: number): number[] {
  if (count >= n) return Array.from({ length: n }, (_, k) => k + 1)
  const out: number[] = []
  for (let j = 0; j < count; j++) out.push(Math.min(n, Math.ceil(((j + 0.5) * n) / count)))
  return [...new Set(out)]
}

/**
 * Prefix lengths of `1..n` (at most `max` of them) in an order whose every prefix is spread over
 * the session: the midpoint, then the midpoints of the halves, of the quarters…
 */
export function spreadOrder(n: number, max: number): number[] {
  const limit = Math.min(n, max)
  const out: number[] = []
  const seen = new Set<number>()
  for (let slices = 1; out.length < limit; slices *= 2) {
    for (const k of sampleTurns(n, Math.min(slices, n))) {
      if (out.length < limit && !seen.has(k)) {
        seen.add(k)
        out.push(k)
      }
    }
    if (slices >= n) break
  }
  return out
}
