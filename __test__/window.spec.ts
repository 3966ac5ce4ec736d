import test from 'ava'

import type { AnyMessage, Message } from '../index.js'
import { toAiSdk, toAnthropic } from './convert.js'
import { type CodedError, ct, snapshot, transcript, transcripts } from './helpers.js'

/** Grows a window message by message over `messages`, and at every `every`-th turn (and the
 * last) checks it against the stateless functions on the same prefix. */
function checkGrowth(t: import('ava').ExecutionContext, name: string, messages: AnyMessage[], every: number) {
  const window = new ct.ContextWindow()
  for (let k = 0; k < messages.length; k++) {
    t.is(window.append([messages[k]]), k + 1)
    if (k % every !== 0 && k + 1 !== messages.length) continue
    const prefix = messages.slice(0, k + 1)
    const at = `${name} after message ${k}`
    t.is(window.totalTokens, ct.estimateTokens(prefix), at)
    t.is(window.currentStep, ct.countSteps(prefix), at)
    const targetTokens = Math.floor(window.totalTokens / 2)
    t.deepEqual(window.trim({ targetTokens }), ct.trimByPriority(prefix as Message[], { targetTokens }), at)
    t.deepEqual(window.trimWithPlaceholders({ targetTokens }), ct.trimWithPlaceholders(prefix as Message[], { targetTokens }), at)
    t.deepEqual(window.truncate(), ct.truncateOldToolOutputs(prefix), at)
  }
  return window
}

test('a window grown message by message decides as the stateless functions do, on every transcript', (t) => {
  for (const [name, messages] of transcripts()) {
    const before = snapshot(messages)
    const window = checkGrowth(t, name, messages, 9)
    t.deepEqual(messages, before, `${name}: the input is not mutated`)
    const held = window.messages()
    t.is(held.length, messages.length)
    t.true(held.every((m, i) => m === messages[i]), `${name}: the window holds the caller's own objects`)
    const { messages: kept } = window.trim({ targetTokens: Math.floor(window.totalTokens / 3) })
    // Kept messages are the caller's objects; a result cut to head and tail (rather than
    // dropping its unit) is a copy saying so.
    t.true(kept.every((m) => messages.includes(m as Message) || typeof (m as Message)._cutTokens === 'number'), `${name}: kept messages are the caller's objects`)
  }
})

test('appending an array equals appending one by one; the result is deterministic', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const one = new ct.ContextWindow()
  for (const m of messages) one.append([m])
  const batch = new ct.ContextWindow()
  t.is(batch.append(messages.slice(0, 10)), 10)
  t.is(batch.append(messages.slice(10)), messages.length)
  const options = { targetTokens: 8_000, summarizeDropped: true, insertSummary: true }
  t.deepEqual(batch.trim(options), one.trim(options))
  t.deepEqual(JSON.stringify(batch.trim(options)), JSON.stringify(batch.trim(options)))
  t.is(batch.length, messages.length)
})

test('the format is detected across appends, or refused when two show', (t) => {
  const openai = transcript('openhands-ponyc-4595.json')
  for (const [format, converted] of [
    ['anthropic', toAnthropic(openai)],
    ['ai-sdk', toAiSdk(openai)],
  ] as const) {
    const window = checkGrowth(t, format, converted, 25)
    t.is(window.format, format)
  }
  // A plain first message reads as OpenAI until a message shows another format.
  const anthropic = toAnthropic(openai)
  const window = new ct.ContextWindow()
  window.append([anthropic[0]])
  t.is(window.format, 'openai')
  window.append(anthropic.slice(1))
  t.is(window.format, 'anthropic')
  t.deepEqual(window.truncate(), ct.truncateOldToolOutputs(anthropic))
  // Mixed: a coded error, and nothing appended.
  const length = window.length
  const err = t.throws<CodedError>(() => window.append([openai.find((m) => m.tool_calls)!]))
  t.is(err?.code, 'INVALID_OPTION')
  t.regex(err?.message ?? '', /^format: messages\[0\] looks like openai \(tool_calls\) but the window holds anthropic messages; append messages of one format/)
  t.is(window.length, length)
  // Emptied, the window detects afresh.
  window.clear()
  window.append(openai)
  t.is(window.format, 'openai')
  t.deepEqual(window.truncate(), ct.truncateOldToolOutputs(openai))
  window.reset(anthropic)
  t.is(window.format, 'anthropic')
  t.throws(() => window.append([openai.find((m) => m.tool_calls)!]), { code: 'INVALID_OPTION' })
  // A given format is used as given.
  const fixed = new ct.ContextWindow({ format: 'openai' })
  t.is(fixed.format, 'openai')
  t.throws(() => new ct.ContextWindow({ format: 'xml' as never }), { code: 'INVALID_OPTION' })
})

test('bad input is a coded error naming the index, and appends nothing', (t) => {
  const window = new ct.ContextWindow()
  window.append([{ role: 'user', content: 'task' }])
  t.throws(() => window.append([{ role: 'user', content: 'ok' }, { role: 'nobody', content: 'x' } as never]), {
    code: 'INVALID_MESSAGE',
    message: /^messages\[1\]\.role/,
  })
  t.throws(() => window.append({ role: 'user', content: 'one' } as never), { code: 'INVALID_MESSAGES', message: 'messages: must be an array, got object (a single message: wrap it in an array, [message])' })
  t.is(window.length, 1)
  t.throws(() => window.trim({} as never), { code: 'INVALID_OPTION', message: 'targetTokens: is required' })
  t.throws(() => window.trim({ targetTokens: -1 }), { code: 'INVALID_OPTION' })
  t.throws(() => window.trim(null as never), { code: 'INVALID_OPTION' })
  t.throws(() => window.truncate({ maxAge: Number.NaN }), { code: 'INVALID_OPTION' })
})

test('counts are in the window encoding; options may only name it', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const window = new ct.ContextWindow({ encoding: 'cl100k_base' })
  window.append(messages)
  t.is(window.encoding, 'cl100k_base')
  t.is(window.totalTokens, ct.estimateTokens(messages, { encoding: 'cl100k_base' }))
  const targetTokens = 9_000
  const expected = ct.trimByPriority(messages, { targetTokens, encoding: 'cl100k_base' })
  t.deepEqual(window.trim({ targetTokens }), expected)
  t.deepEqual(window.trim({ targetTokens, model: 'gpt-4' }), expected)
  t.throws(() => window.trim({ targetTokens, encoding: 'o200k_base' }), {
    code: 'INVALID_OPTION',
    message: "encoding: the window counts in cl100k_base, set when it was created, got o200k_base; leave model and encoding out, or create the window with encoding 'o200k_base'",
  })
  t.throws(() => window.truncate({ model: 'gpt-4o' }), { code: 'INVALID_OPTION' })
  t.deepEqual(window.truncate({ encoding: 'cl100k_base' }), ct.truncateOldToolOutputs(messages, { encoding: 'cl100k_base' }))
  t.deepEqual(new ct.ContextWindow({ model: 'gpt-4' }).encoding, 'cl100k_base')
})

test('a trim removes nothing from the window; a reset with its result loses what it dropped for every later turn (docs/context-window.md)', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const window = new ct.ContextWindow()
  window.append(messages)
  const small = window.trim({ targetTokens: Math.floor(window.totalTokens / 4) })
  t.true(small.droppedMessages.length > 0)
  // The next trim starts again from everything appended: a larger budget keeps it all.
  t.is(window.length, messages.length)
  t.is(window.trim({ targetTokens: window.totalTokens + 10 }).messages.length, messages.length)
  // Reset with the trim's messages: they are the history now, and no budget brings back the rest.
  window.reset(small.messages)
  t.is(window.length, small.messages.length)
  t.deepEqual(window.trim({ targetTokens: 10 * ct.estimateTokens(messages) }).messages, small.messages)
  // Compaction kept for good: a summary in place of the older turns is the history from then on.
  const summary: Message = { role: 'user', content: 'Summary of the earlier turns: the tests of src/a.ts were fixed.' }
  const compacted = [messages[0], summary, ...messages.slice(-4)]
  window.reset(compacted)
  t.deepEqual(window.messages(), compacted)
  t.is(window.totalTokens, ct.estimateTokens(compacted))
})

test('reset replaces the messages; an empty window trims to nothing', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const window = new ct.ContextWindow()
  t.is(window.totalTokens, 0)
  t.deepEqual(window.trim({ targetTokens: 100 }).messages, [])
  t.deepEqual(window.truncate(), [])
  window.append(messages)
  window.reset(messages.slice(0, 5))
  t.is(window.length, 5)
  t.is(window.totalTokens, ct.estimateTokens(messages.slice(0, 5)))
  window.clear()
  t.is(window.length, 0)
  t.deepEqual(window.messages(), [])
  t.is(window.currentStep, 0)
  t.throws(() => window.reset([{ role: 5 }] as never), { code: 'INVALID_MESSAGE' })
  t.is(window.length, 0)
})
