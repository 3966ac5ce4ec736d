// Issue 18: every budget strategy, on every shared transcript, at budgets from 10% to 90% of
// its size, in all three formats, keeps the last message (with its unit), and meets the budget
// wherever the system messages and the last unit fit (and, for Anthropic, the user message a
// conversation must open with).
import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { ct, transcripts } from './helpers.js'
import type { AnyMessage, MessageFormat } from '../index.js'

type Loose = AnyMessage & Record<string, unknown>
type Strategy = (messages: AnyMessage[], budget: number, format: MessageFormat) => AnyMessage[]

const strategies: Array<[string, Strategy]> = [
  ['trimByPriority', (m, b, format) => ct.trimByPriority(m, { targetTokens: b, format }).messages],
  ['trimWithPlaceholders', (m, b, format) => ct.trimWithPlaceholders(m, { targetTokens: b, format }).messages],
  ['trimConversation', (m, b, format) => ct.trimConversation(m, b, { format })],
  ["trimConversation 'age-based'", (m, b, format) => ct.trimConversation(m, b, { strategy: 'age-based', format })],
  ['trimByAge', (m, b, format) => ct.trimByAge(m, b, { format })],
  ['applyMaxContextTokens', (m, b, format) => ct.applyMaxContextTokens(m, b, { format })],
  ["CacheAwareTrimmer 'priority'", (m, b, format) => new ct.CacheAwareTrimmer({ contextWindow: b, format }).trim(m).messages],
  ["CacheAwareTrimmer 'placeholders'", (m, b, format) => new ct.CacheAwareTrimmer({ contextWindow: b, strategy: 'placeholders', format }).trim(m).messages],
  ['ContextWindow#trim', (m, b, format) => {
    const window = new ct.ContextWindow({ format })
    window.append(m)
    return window.trim({ targetTokens: b }).messages
  }],
]

/** The ids of the tool calls a message answers, in any format ('' for none). */
function answers(m: Loose): string {
  if (m.role === 'tool' && typeof m.tool_call_id === 'string') return m.tool_call_id
  if (!Array.isArray(m.content)) return ''
  return (m.content as Array<Record<string, unknown>>)
    .map((p) => (p.type === 'tool_result' ? p.tool_use_id : p.type === 'tool-result' ? p.toolCallId : undefined))
    .filter((id) => typeof id === 'string')
    .join(',')
}

/** Whether a message calls tools, in any format. */
function calls(m: Loose): boolean {
  if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) return true
  return Array.isArray(m.content) && (m.content as Array<Record<string, unknown>>).some((p) => p.type === 'tool_use' || p.type === 'tool-call')
}

const isSystem = (m: Loose) => m.role === 'system' || m.role === 'developer'

/**
 * The tokens of what every budget strategy keeps: the system messages, the last message's unit
 * (from its call on), and for Anthropic the latest plain user message before that unit.
 */
function floor(messages: Loose[], format: MessageFormat): number {
  let from = messages.length - 1
  if (answers(messages[from]) !== '') {
    while (from > 0 && !calls(messages[from])) from--
  }
  const kept = messages.filter((m, i) => isSystem(m) || i >= from)
  if (format === 'anthropic' && kept.find((m) => !isSystem(m))?.role !== 'user') {
    const openers = messages.slice(0, from).filter((m) => m.role === 'user' && answers(m) === '')
    if (openers.length > 0) kept.push(openers[openers.length - 1])
  }
  return ct.estimateTokens(kept, { format })
}

for (const [name, run] of strategies) {
  test(`${name} keeps the last message and meets the budget wherever the anchors fit, in every format`, (t) => {
    let met = 0
    for (const [file, original] of transcripts()) {
      const inputs: Array<[MessageFormat, AnyMessage[]]> = [['openai', original], ['anthropic', toAnthropic(original)], ['ai-sdk', toAiSdk(original)]]
      for (const [format, messages] of inputs) {
        const total = ct.estimateTokens(messages, { format })
        const least = floor(messages as Loose[], format)
        for (let share = 0.1; share < 0.95; share += 0.1) {
          const budget = Math.floor(total * share)
          const label = `${file} ${format} ${Math.round(share * 100)}%`
          const out = run(messages, budget, format) as Loose[]
          const last = messages.at(-1) as Loose
          const got = out.at(-1)
          t.truthy(got, `${label}: something is returned`)
          // The last message itself, or a copy of it with its content shortened.
          t.true(got === last || (got!.role === last.role && answers(got!) === answers(last)), `${label}: the last message`)
          const tokens = ct.estimateTokens(out, { format })
          if (least <= budget) {
            t.true(tokens <= budget, `${label}: ${tokens} tokens over a budget of ${budget} the anchors (${least}) fit`)
            met++
          }
        }
      }
    }
    t.true(met > 100)
  })
}
