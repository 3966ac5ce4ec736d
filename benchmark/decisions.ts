/**
 * What a trimmer decided for each input message, read from its output, and the differences
 * between two implementations' decisions, message by message.
 */
import type { Message } from '../index.js'

/** The decision for one input message. */
export type Decision = 'keep' | 'drop' | 'placeholder' | 'cut'

function replacementKind(m: Message): Decision {
  return '_truncatedAt' in m || '_truncated' in m ? 'placeholder' : 'cut'
}

/**
 * The decision for every input message: kept messages are the caller's own objects; a replaced
 * message is a copy in the same place (same role and `tool_call_id`): a placeholder when it
 * records `_truncatedAt`/`_truncated`, a cut otherwise; anything else is dropped.
 */
export function decisions(input: Message[], output: Message[]): Decision[] {
  const inputs = new Set<Message>(input)
  const out: Decision[] = []
  let j = 0
  for (const m of input) {
    const o = output[j]
    if (o === m) {
      out.push('keep')
      j++
    } else if (o !== undefined && !inputs.has(o) && o.role === m.role && o.tool_call_id === m.tool_call_id) {
      out.push(replacementKind(o))
      j++
    } else {
      out.push('drop')
    }
  }
  if (j !== output.length) throw new Error(`${output.length - j} output messages match no input message (reordered or invented)`)
  return out
}

/** A difference between two implementations' decisions. */
export interface Difference {
  index: number
  role: string
  expected: Decision
  actual: Decision
}

/** Where `actual` differs from `expected`. */
export function differences(input: Message[], expected: Decision[], actual: Decision[]): Difference[] {
  const diffs: Difference[] = []
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    if (expected[i] !== actual[i]) diffs.push({ index: i, role: input[i]?.role ?? '?', expected: expected[i], actual: actual[i] })
  }
  return diffs
}

/** `3 differ: #12 tool (expected drop, got keep), …` (at most `max` listed). */
export function describe(diffs: Difference[], max = 20): string {
  if (diffs.length === 0) return 'identical'
  const listed = diffs
    .slice(0, max)
    .map((d) => `#${d.index} ${d.role} (expected ${d.expected}, got ${d.actual})`)
    .join(', ')
  return `${diffs.length} message(s) differ: ${listed}${diffs.length > max ? `, … ${diffs.length - max} more` : ''}`
}

/** Counts of each decision. */
export function tally(ds: Decision[]): Record<Decision, number> {
  const t: Record<Decision, number> = { keep: 0, drop: 0, placeholder: 0, cut: 0 }
  for (const d of ds) t[d]++
  return t
}
