/**
 * Verbatim spans shared between texts, in linear time: the behaviour of the addon's
 * `src/span_index.rs` (every window of `minChars` code points of the indexed texts, each with
 * the highest tag of the texts containing it; a probe asks whether some window of a text is
 * indexed with a tag above a bound). The rolling hash differs from the Rust one (polynomial
 * modulo 2³² with `Math.imul` instead of modulo 2⁶¹ − 1), but hits are confirmed by comparing
 * the windows, so the answers are the same.
 */
const BASE = 0x01000193 // odd, so that the polynomial hash modulo 2³² is a rolling hash

interface Window {
  text: string
  start: number
  end: number
  tag: number
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

export class SpanIndex {
  readonly minChars: number
  private power: number
  private table = new Map<number, Window[]>()
  private filter = new Uint32Array(FILTER_BITS >>> 5)

  constructor(minChars: number) {
    this.minChars = Math.max(1, minChars)
    let power = 1
    for (let k = 1; k < this.minChars; k++) power = Math.imul(power, BASE)
    this.power = power
  }

  isEmpty(): boolean {
    return this.table.size === 0
  }

  /** Adds every window of `text`, tagged `tag`. */
  add(text: string, tag: number): void {
    if (text.length < this.minChars) return
    windows(text, this.minChars, this.power, (hash, start, end) => {
      const bit = hash & (FILTER_BITS - 1)
      this.filter[bit >>> 5] |= 1 << (bit & 31)
      const bucket = this.table.get(hash)
      if (!bucket) {
        this.table.set(hash, [{ text, start, end, tag }])
        return true
      }
      const w = text.slice(start, end)
      const same = bucket.find((b) => b.end - b.start === end - start && b.text.slice(b.start, b.end) === w)
      if (same) same.tag = Math.max(same.tag, tag)
      else bucket.push({ text, start, end, tag })
      return true
    })
  }

  /** Whether `text` shares a verbatim span of at least `minChars` code points with an indexed text tagged above `bound`. */
  sharesSpanAbove(text: string, bound: number): boolean {
    if (this.table.size === 0 || text.length < this.minChars) return false
    const filter = this.filter
    let shared = false
    windows(text, this.minChars, this.power, (hash, start, end) => {
      const bit = hash & (FILTER_BITS - 1)
      if ((filter[bit >>> 5] & (1 << (bit & 31))) === 0) return true
      const bucket = this.table.get(hash)
      if (!bucket) return true
      const w = text.slice(start, end)
      if (bucket.some((b) => b.tag > bound && b.end - b.start === end - start && b.text.slice(b.start, b.end) === w)) {
        shared = true
        return false
      }
      return true
    })
    return shared
  }
}
