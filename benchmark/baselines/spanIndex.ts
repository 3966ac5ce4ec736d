/**
 * Verbatim spans shared between texts, in linear time: the behaviour of the addon's
 * `src/analysis/span_index.rs` (every distinct window of `minChars` code points of the indexed texts,
 * with the tags of the texts containing it; a probe lists the indexed windows a text contains).
 * The rolling hash differs from the Rust one (polynomial
 * modulo 2³² with `Math.imul` instead of modulo 2⁶¹ − 1), but hits are confirmed by comparing
 * the windows, so the answers are the same.
 */
const BASE = 0x01000193 // odd, so that the polynomial hash modulo 2³² is a rolling hash

interface Window {
  text: string
  start: number
  end: number
}

/** Calls `f(hash, start, end)` for every window of `size` code points of `text` (UTF-16 offsets) until it returns false. */
function windows(text: string, size: number, power: number, f: (hash: number, start: number, end: number) => boolean): void {
  // Ring buffers of the window's code points and their offsets.
  const starts = new Int32Array(size)
  const values = new Int32Array(size)
  let filled = 0
  let head = 0
  let hash = 0
  for (let at = 0; at < text.length; ) {
    const cp = text.codePointAt(at)!
    const value = cp + 1
    if (filled === size) {
      hash = (hash - Math.imul(values[head], power)) | 0
      starts[head] = at
      values[head] = value
      head = head + 1 === size ? 0 : head + 1
    } else {
      starts[filled] = at
      values[filled] = value
      filled++
    }
    hash = (Math.imul(hash, BASE) + value) | 0
    at += cp > 0xffff ? 2 : 1
    if (filled === size && !f(hash, starts[head], at)) return
  }
}

/** Bits of the hashes present, checked before the map: most windows of a probe are absent. */
const FILTER_BITS = 1 << 22

/**
 * Verbatim windows of a set of texts. Each distinct window gets an id (dense, from 0, in the
 * order first seen) and keeps the tags of the texts containing it, ascending, without repeats.
 */
export class SpanIndex {
  readonly minChars: number
  private power: number
  /** hash -> ids of the distinct windows with that hash */
  private ids = new Map<number, number[]>()
  private windows: Window[] = []
  private tagLists: number[][] = []
  private filter = new Uint32Array(FILTER_BITS >>> 5)

  constructor(minChars: number) {
    this.minChars = Math.max(1, minChars)
    let power = 1
    for (let k = 1; k < this.minChars; k++) power = Math.imul(power, BASE)
    this.power = power
  }

  isEmpty(): boolean {
    return this.windows.length === 0
  }

  private find(hash: number, text: string, start: number, end: number): number | undefined {
    const bucket = this.ids.get(hash)
    if (!bucket) return undefined
    const w = text.slice(start, end)
    return bucket.find((id) => {
      const b = this.windows[id]
      return b.end - b.start === end - start && b.text.slice(b.start, b.end) === w
    })
  }

  /** Adds every window of `text`, tagged `tag`. */
  add(text: string, tag: number): void {
    if (text.length < this.minChars) return
    windows(text, this.minChars, this.power, (hash, start, end) => {
      const id = this.find(hash, text, start, end)
      if (id !== undefined) {
        insertSorted(this.tagLists[id], tag)
        return true
      }
      const bit = hash & (FILTER_BITS - 1)
      this.filter[bit >>> 5] |= 1 << (bit & 31)
      const bucket = this.ids.get(hash)
      if (bucket) bucket.push(this.windows.length)
      else this.ids.set(hash, [this.windows.length])
      this.windows.push({ text, start, end })
      this.tagLists.push([tag])
      return true
    })
  }

  /** The ids of the indexed windows that occur in `text`, ascending, without repeats. */
  sharedWindows(text: string): number[] {
    if (this.windows.length === 0 || text.length < this.minChars) return []
    const filter = this.filter
    const shared = new Set<number>()
    windows(text, this.minChars, this.power, (hash, start, end) => {
      const bit = hash & (FILTER_BITS - 1)
      if ((filter[bit >>> 5] & (1 << (bit & 31))) === 0) return true
      const id = this.find(hash, text, start, end)
      if (id !== undefined) shared.add(id)
      return true
    })
    return [...shared].sort((a, b) => a - b)
  }

  /** The tags of the texts containing window `id`, ascending, without repeats. */
  tags(id: number): number[] {
    return this.tagLists[id] ?? []
  }
}

/** Inserts `value` into the ascending array `sorted` unless it is there. */
export function insertSorted(sorted: number[], value: number): void {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid] < value) lo = mid + 1
    else hi = mid
  }
  if (sorted[lo] !== value) sorted.splice(lo, 0, value)
}

/** The first element of the ascending array `sorted` above `value`, if any. */
export function firstAbove(sorted: number[], value: number): number | undefined {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid] <= value) lo = mid + 1
    else hi = mid
  }
  return sorted[lo]
}
