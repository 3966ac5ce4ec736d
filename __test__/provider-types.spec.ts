// Outputs go to the provider as they are: typed as the providers' own SDK types under
// `tsc --strict`, and serialised with only the provider's fields (the library's metadata,
// `_truncated`, `_summary`, …, stays readable but is not enumerable).
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

import type { MessageParam } from '@anthropic-ai/sdk/resources/messages'
import test from 'ava'
import type { ModelMessage } from 'ai'
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions'

import { toAiSdk, toAnthropic } from './convert.js'
import { typeErrors as strictErrors } from './typecheck.js'
import { ct, transcript, transcripts } from './helpers.js'
import type { AnyMessageInput, MessageFormat } from '../index.js'

const self = fileURLToPath(import.meta.url)

/**
 * Messages through several strategies, each result typed as the messages passed: with `M` a
 * provider's SDK type below, tsc checks every strategy returns that type (a strategy typed to
 * return context-trim's own `Message[]` would not type-check as `M[]`).
 */
function outputs<M extends AnyMessageInput>(messages: M[], target: number, format: MessageFormat): M[][] {
  return [
    ct.trimByAge(messages, target, { format }),
    ct.trimWithPlaceholders(messages, { targetTokens: target, format }).messages,
    ct.trimByPriority(messages, { targetTokens: target, summarizeDropped: true, format }).messages,
    ct.truncateOldToolOutputs(messages, { maxAge: 1, smallOutputTokens: 0 }),
    ct.deduplicateToolResults(messages, { deduplicationThreshold: 0 }).messages,
    ct.applyMaxContextTokens(messages, target, { format }),
    ct.trimConversation(messages, target, { strategy: 'age-based', summarizeDropped: true, format }),
    ...windowOutputs(messages, target, format),
  ]
}

/** A window of `M`s (its type parameter, issue 43): its trims return `M[]` without naming it. */
function windowOutputs<M extends AnyMessageInput>(messages: M[], target: number, format: MessageFormat): M[][] {
  const window = new ct.ContextWindow<M>({ format })
  window.append(messages)
  return [window.trim({ targetTokens: target }).messages, window.trimWithPlaceholders({ targetTokens: target }).messages]
}

export const openaiOutputs = (messages: ChatCompletionMessageParam[], target: number): ChatCompletionMessageParam[][] =>
  outputs(messages, target, 'openai')
export const anthropicOutputs = (messages: MessageParam[], target: number): MessageParam[][] => outputs(messages, target, 'anthropic')
export const aiSdkOutputs = (messages: ModelMessage[], target: number): ModelMessage[][] => outputs(messages, target, 'ai-sdk')

/** Diagnostics of `tsc --strict` on this file, with `extra` appended to it. */
function typeErrors(extra = ''): string[] {
  return strictErrors({ files: new Map([[self, readFileSync(self, 'utf8') + extra]]) }).map((e) => e.message)
}

test('outputs type-check as ChatCompletionMessageParam[], MessageParam[] and ModelMessage[] under tsc --strict', (t) => {
  t.deepEqual(typeErrors(), [])
  // The check can fail: an OpenAI result is not an Anthropic request.
  const wrong = typeErrors('\nexport const wrong: MessageParam[] = ct.trimByAge([] as ChatCompletionMessageParam[], 1)\n')
  t.is(wrong.length, 1)
  t.regex(wrong[0], /is not assignable to type 'MessageParam\[\]'/)
  // A window's trims are typed by its own type parameter, not by the messages appended.
  const window = typeErrors('\nexport const w: MessageParam[] = new ct.ContextWindow<ChatCompletionMessageParam>().trim({ targetTokens: 1 }).messages\n')
  t.is(window.length, 1)
  t.regex(window[0], /is not assignable to type 'MessageParam\[\]'/)
  // A pruner's archive holds whatever was pruned: its reconstruction is typed as named.
  t.deepEqual(typeErrors('\nexport const r: MessageParam[] = new ct.ContextPruner().reconstruct<MessageParam>()\n'), [])
})

/** The fields each provider accepts on a message (its request schema). */
const providerFields: Record<string, Set<string>> = {
  openai: new Set(['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal', 'audio', 'function_call']),
  anthropic: new Set(['role', 'content']),
  'ai-sdk': new Set(['role', 'content', 'providerOptions']),
}

/** Every key of a serialised message that its provider does not know, as `i.key`. */
function unknownKeys(messages: unknown[], format: string): string[] {
  const parsed = JSON.parse(JSON.stringify(messages)) as Array<Record<string, unknown>>
  return parsed.flatMap((m, i) => Object.keys(m).filter((k) => !providerFields[format].has(k)).map((k) => `${i}.${k}`))
}

/** The metadata fields readable on the outputs (to see the test is not vacuous). */
function metadata(messages: unknown[]): Set<string> {
  const found = new Set<string>()
  for (const m of messages as Array<Record<string, unknown>>) {
    for (const k of Object.getOwnPropertyNames(m)) if (k.startsWith('_')) found.add(k)
  }
  return found
}

test('JSON.stringify of every output holds only provider fields; the metadata stays readable', (t) => {
  const seen = new Set<string>()
  for (const [name, messages] of transcripts()) {
    const target = Math.floor(ct.estimateTokens(messages) / 3)
    const runs: Array<[string, unknown[][]]> = [
      ['openai', openaiOutputs(messages as ChatCompletionMessageParam[], target)],
      ['anthropic', anthropicOutputs(toAnthropic(messages).filter((m) => m.role !== 'system') as MessageParam[], target)],
      ['ai-sdk', aiSdkOutputs(toAiSdk(messages) as ModelMessage[], target)],
    ]
    for (const [format, outputs] of runs) {
      outputs.forEach((out, k) => {
        t.deepEqual(unknownKeys(out, format), [], `${name} ${format} strategy ${k}`)
        for (const key of metadata(out)) seen.add(key)
      })
    }
  }
  // Placeholders, summaries and superseded results were written, and are readable.
  for (const key of ['_truncated', '_originalTokens', '_summary', '_superseded', '_truncatedAt', '_originalLength']) {
    t.true(seen.has(key), key)
  }
})

test('a replaced message keeps the hidden metadata its original carried, hidden', (t) => {
  // Hidden metadata of an earlier pass (here put by hand) survives a copy made by a later one.
  const messages = transcript('openhands-ponyc-4593.json').map((m) => {
    if (m.role !== 'tool') return m
    const copy = { ...m }
    Object.defineProperty(copy, '_earlier', { value: 7, writable: true, configurable: true, enumerable: false })
    return copy
  })
  const out = ct.truncateOldToolOutputs(messages, { maxAge: 1, smallOutputTokens: 0 })
  const truncated = out.filter((m, i) => m !== messages[i] && m._truncatedAt !== undefined)
  t.true(truncated.length > 0)
  for (const m of truncated) {
    t.is(m._earlier, 7)
    t.deepEqual(Object.keys(m).filter((k) => k.startsWith('_')), [])
  }
  t.deepEqual(unknownKeys(out, 'openai'), [])
})
