/**
 * Issue 44: decisions that stand keep their text. When a bundled transcript grows by one
 * message, every message that both calls kept, or shortened the same way (a placeholder, or a
 * cut of the same size, of the same parts), is byte-identical in both results, so a provider's
 * prefix cache can reuse it. In the three formats (OpenAI, Anthropic, AI SDK), for
 * `trimByPriority`, `trimWithPlaceholders`, and `trimWithPlaceholders` with `replanEvery`, whose
 * requests, while no re-plan point is crossed, only grow at their end.
 */
import test from 'ava'

import type { AnyMessage, TrimResultOf } from '../index.js'
import { toAiSdk, toAnthropic } from './convert.js'
import { ct, sharedPrefix, transcripts } from './helpers.js'

type Any = Record<string, unknown>

const FORMATS: Array<[string, (m: ReturnType<typeof transcripts>[number][1]) => AnyMessage[]]> = [
  ['openai', (m) => m as AnyMessage[]],
  ['anthropic', (m) => toAnthropic(m) as AnyMessage[]],
  ['ai-sdk', (m) => toAiSdk(m) as AnyMessage[]],
]

/** What the call decided for each input message, and what it sent for it (`undefined`: dropped). */
function decisions(input: AnyMessage[], result: TrimResultOf<AnyMessage>): Array<{ decision: string; sent?: string }> {
  const shortened = new Set(result.shortenedMessages.map((c) => c.message))
  const out = result.messages as unknown[]
  let k = 0
  return input.map((m) => {
    if (out[k] === m) {
      k++
      return { decision: 'kept', sent: JSON.stringify(m) }
    }
    if (!shortened.has(m)) return { decision: 'dropped' }
    const copy = out[k++] as Any
    const original = m as unknown as Any
    // The decision: a placeholder or a cut of so many tokens, and which parts it replaced.
    const parts = Array.isArray(copy.content)
      ? (copy.content as unknown[]).map((p, i) => (JSON.stringify(p) === JSON.stringify((original.content as unknown[])[i]) ? '=' : '*')).join('')
      : ''
    const kind = copy._cutTokens !== undefined ? `cut ${copy._cutTokens}` : 'placeholder'
    return { decision: `${kind} ${parts}`, sent: JSON.stringify(copy) }
  })
}

const STRATEGIES: Array<[string, (m: AnyMessage[], target: number) => TrimResultOf<AnyMessage>]> = [
  ['trimByPriority', (m, target) => ct.trimByPriority(m, { targetTokens: target })],
  ['trimWithPlaceholders', (m, target) => ct.trimWithPlaceholders(m, { targetTokens: target })],
  [
    'trimWithPlaceholders replanEvery',
    (m, target) => ct.trimWithPlaceholders(m, { targetTokens: target, replanEvery: Math.floor(target / 4) }),
  ],
]

for (const [format, convert] of FORMATS) {
  for (const [name, trim] of STRATEGIES) {
    test(`${format}: ${name}: growing a transcript by a message leaves the text of every standing decision as it was`, (t) => {
      let compared = 0
      let appendOnly = 0
      let calls = 0
      for (const [file, messages] of transcripts()) {
        const all = convert(messages)
        const target = Math.floor(ct.estimateTokens(all) * 0.4)
        let previous: { decisions: ReturnType<typeof decisions>; sent: unknown[] } | undefined
        for (let n = 2; n <= all.length; n++) {
          const history = all.slice(0, n)
          const result = trim(history, target)
          const now = decisions(history, result)
          if (previous) {
            for (let i = 0; i < previous.decisions.length; i++) {
              const [before, after] = [previous.decisions[i], now[i]]
              if (before.decision !== after.decision || before.sent === undefined) continue
              compared++
              if (before.sent !== after.sent) {
                t.fail(`${file} message ${i} (${before.decision}) changed its text from ${n - 1} to ${n} messages:\n${before.sent.slice(0, 300)}\n${after.sent?.slice(0, 300)}`)
                return
              }
            }
            calls++
            if (sharedPrefix(previous.sent, result.messages) === previous.sent.length) appendOnly++
          }
          previous = { decisions: now, sent: result.messages }
        }
      }
      t.true(compared > 1000, `compared ${compared} standing decisions`)
      if (name.endsWith('replanEvery')) {
        // Between re-plan points a request is the one before with the new messages at its end.
        t.true(appendOnly / calls > 0.75, `${appendOnly} of ${calls} requests only appended`)
      }
    })
  }
}
