import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { ct, snapshot, transcripts } from './helpers.js'
import type { AnyMessage } from '../index.js'

test('auto detection reads each format and counts the same steps in all three', (t) => {
  for (const [name, messages] of transcripts()) {
    const steps = ct.countSteps(messages)
    t.is(ct.countSteps(toAnthropic(messages)), steps, name)
    t.is(ct.countSteps(toAiSdk(messages)), steps, name)
  }
})

test('tool results belong to the step of their call in every format', (t) => {
  for (const [name, messages] of transcripts().slice(0, 3)) {
    const anthropic = toAnthropic(messages)
    const tagged = ct.tagMessagesWithStep(anthropic)
    for (const { message, step } of tagged) {
      const blocks = Array.isArray(message.content) ? message.content : []
      if (blocks.some((b) => (b as { type?: string }).type === 'tool_result')) t.true(step > 0, name)
    }
  }
})

test('auto detection refuses conversations that mix formats, and an explicit format is honoured', (t) => {
  const mixed: AnyMessage[] = [
    { role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'x' }] },
  ]
  t.throws(() => ct.estimateTokens(mixed), {
    instanceOf: TypeError,
    code: 'INVALID_OPTION',
    message:
      'format: cannot detect the format: messages[0] looks like openai (tool_calls) but messages[1] looks like anthropic (a tool_use/tool_result/thinking block); pass format explicitly',
  })
  t.notThrows(() => ct.estimateTokens(mixed, { format: 'openai' }))
  t.throws(() => ct.estimateTokens([], { format: 'gemini' as never }), {
    code: 'INVALID_OPTION',
    message: 'format: must be one of openai, anthropic, ai-sdk, auto, got "gemini"',
  })
})

test('format errors name the index and field', (t) => {
  t.throws(() => ct.estimateTokens([{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }], { format: 'anthropic' }), {
    code: 'INVALID_MESSAGE',
    message: 'messages[0].content[0].tool_use_id: is required',
  })
  t.throws(() => ct.estimateTokens([{ role: 'tool', content: [{ type: 'tool-result', toolName: 'x', output: { type: 'text', value: '' } }] }], { format: 'ai-sdk' }), {
    code: 'INVALID_MESSAGE',
    message: 'messages[0].content[0].toolCallId: is required',
  })
})

test('converted transcripts are not mutated by reading them', (t) => {
  const [, messages] = transcripts()[0]
  const anthropic = toAnthropic(messages)
  const before = snapshot(anthropic)
  ct.estimateTokens(anthropic)
  t.deepEqual(anthropic, before)
})
