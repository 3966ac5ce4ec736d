import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { ct, snapshot, transcripts } from './helpers.js'
import type { AiSdkMessage, AnthropicMessage, AnyMessage, Message } from '../index.js'

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

/**
 * Which input messages a strategy returned as they were (`keep`), shortened (`replace`) or left
 * out (`drop`), by input index. Kept messages are the caller's own objects; a shortened one is
 * a copy, found by position.
 */
function decisions(input: readonly object[], output: readonly object[]): string[] {
  const out = new Set(output)
  const kept = input.map((m) => out.has(m))
  const result: string[] = []
  let j = 0
  for (let i = 0; i < input.length; i++) {
    if (kept[i]) {
      while (j < output.length && output[j] !== input[i]) j++
      result.push('keep')
      j++
    } else if (j < output.length && !input.includes(output[j]) && (i + 1 >= input.length || output[j] !== input[i + 1])) {
      // A copy in this position: the message was shortened in place.
      result.push('replace')
      j++
    } else {
      result.push('drop')
    }
  }
  return result
}

/**
 * OpenAI messages as the other formats carry them: no `name` on tool results, and arguments
 * as compact JSON (the other formats hold an object, which serialises compactly).
 */
function asOtherFormatsCarryThem(messages: Message[]): Message[] {
  return messages.map((m) => {
    if (m.role === 'tool') {
      const { name: _name, ...rest } = m
      return rest as Message
    }
    if (!m.tool_calls) return m
    const compact = (args: unknown) => {
      if (typeof args !== 'string') return args
      try {
        return JSON.stringify(JSON.parse(args))
      } catch {
        return args
      }
    }
    return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: compact(c.function.arguments) as string } })) }
  })
}

test('every strategy decides the same on a transcript in all three formats', (t) => {
  type Strategy = (m: AnyMessage[], budget: number) => readonly object[]
  const strategies: Array<[string, Strategy]> = [
    ['trimByPriority', (m, b) => ct.trimByPriority(m, { targetTokens: b, preserveRecentTurns: 2 }).messages],
    ['trimWithPlaceholders', (m, b) => ct.trimWithPlaceholders(m, { targetTokens: b, preserveRecentTurns: 2 }).messages],
    ['trimConversation', (m, b) => ct.trimConversation(m, b, { strategy: 'priority-based', preserveRecentTurns: 2 })],
    ['trimByAge', (m, b) => ct.trimByAge(m, b)],
    ['applyMaxContextTokens', (m, b) => ct.applyMaxContextTokens(m, b, { truncationPriority: ['tool', 'assistant'] })],
    ['truncateOldToolOutputs', (m) => ct.truncateOldToolOutputs(m, { maxAge: 3, maxTokensPerOutput: 500 })],
  ]
  // The strategies that count the opening user message while dropping (see formats.md).
  for (const [name, original] of transcripts()) {
    const openai = asOtherFormatsCarryThem(original)
    const anthropic = toAnthropic(openai)
    const aiSdk = toAiSdk(openai)
    // The converters map message to message when no assistant turn makes parallel calls.
    if (anthropic.length !== openai.length) continue
    const total = ct.estimateTokens(openai)
    t.is(ct.estimateTokens(anthropic), total, `${name}: the same tokens in anthropic format`)
    t.is(ct.estimateTokens(aiSdk), total, `${name}: the same tokens in ai-sdk format`)
    for (const [strategy, run] of strategies) {
      for (const share of [0.25, 0.5, 0.75]) {
        const budget = Math.floor(total * share)
        const expected = decisions(openai, run(openai, budget))
        // Anthropic also requires a user message first: where a strategy dropped the opening
        // user message, a user message before the first returned one is kept again. The
        // oldest-first strategies count it before deciding, so they may drop more to make room
        // for it (issue 19); nothing else differs.
        const got = decisions(anthropic, run(anthropic, budget))
        const firstReturned = got.findIndex((d, i) => d !== 'drop' && anthropic[i].role !== 'system')
        const differing = got.flatMap((d, i) => (d === expected[i] ? [] : [i]))
        // Where that user message does not fit too, the earliest returned units are dropped to
        // make room for it: the budget is met whenever it can be.
        const userBroughtBack = (i: number) => i === firstReturned && got[i] === 'keep' && expected[i] === 'drop'
        const droppedForIt = (i: number) => got[i] === 'drop' && expected[i] !== 'drop'
        t.true(differing.every((i) => userBroughtBack(i) || droppedForIt(i)), `${name} ${strategy} ${share}: anthropic differs at ${differing}`)
        if (differing.some(droppedForIt) && ct.estimateTokens(run(openai, budget) as Message[]) <= budget) {
          // Over budget only when nothing is left but the system prompt, the opening user
          // message and the last unit (the call and its results).
          const out = run(anthropic, budget) as AnthropicMessage[]
          if (ct.estimateTokens(out) > budget) {
            const rest = out.filter((m) => m.role !== 'system')
            t.true(rest.length <= 3 && rest[0].role === 'user' && rest.at(-1) === anthropic.at(-1), `${name} ${strategy} ${share}: anthropic over budget with ${rest.length} messages`)
          }
        }
        if (firstReturned >= 0) t.is(anthropic[firstReturned].role, 'user', `${name} ${strategy} ${share}: anthropic starts with a user message`)
        t.deepEqual(decisions(aiSdk, run(aiSdk, budget)), expected, `${name} ${strategy} ${share}: ai-sdk`)
        t.deepEqual(ct.validateConversation(run(anthropic, budget) as AnyMessage[]), [], `${name} ${strategy} ${share}: valid anthropic`)
        t.deepEqual(ct.validateConversation(run(aiSdk, budget) as AnyMessage[]), [], `${name} ${strategy} ${share}: valid ai-sdk`)
      }
    }
  }
})

test('the priority functions take and return every format without casts', (t) => {
  // Compile-time: results are typed as the messages passed (tsc checks this file).
  const [, original] = transcripts()[0]
  const anthropic: AnthropicMessage[] = toAnthropic(original)
  const aiSdk: AiSdkMessage[] = toAiSdk(original)
  const budget = Math.floor(ct.estimateTokens(anthropic) / 2)
  const a = ct.trimByPriority(anthropic, { targetTokens: budget })
  const kept: AnthropicMessage[] = a.messages
  const dropped: AnthropicMessage[] = a.droppedMessages.map((d) => d.message)
  // Rolling context's rules out of the way: only the age-based strategy, which keeps objects.
  const b: AiSdkMessage[] = ct.trimConversation(aiSdk, budget, { strategy: 'age-based', maxAge: 1000, maxTokensPerOutput: 1_000_000 })
  const c: AiSdkMessage[] = ct.trimByAge(aiSdk, budget)
  const classified: AnthropicMessage = ct.classifyMessage(anthropic[0]).message
  // @ts-expect-error an AI SDK result is not an array of Anthropic messages
  const wrong: AnthropicMessage[] = ct.trimByAge(aiSdk, budget)
  // Run-time: the caller's own objects, in order, in their own format.
  t.true(kept.length > 0 && dropped.length > 0)
  // The caller's own objects, or a result cut to head and tail rather than dropped (a copy).
  t.true(kept.every((m) => anthropic.includes(m) || typeof (m as { _cutTokens?: number })._cutTokens === 'number'))
  t.true(dropped.every((m) => anthropic.includes(m)))
  t.true([...b, ...c, ...wrong].every((m) => aiSdk.includes(m)))
  t.is(classified, anthropic[0])
  t.is(ct.estimateMessageTokens(anthropic[0], { format: 'anthropic' }), ct.estimateMessageTokens(original[0]))
  // A window in another format names its message type once, at the call.
  const window = new ct.ContextWindow({ format: 'anthropic' })
  window.append(anthropic)
  const w = window.trim<AnthropicMessage>({ targetTokens: budget })
  const windowKept: AnthropicMessage[] = w.messages
  const windowDropped: AnthropicMessage[] = w.droppedMessages.map((d) => d.message)
  const placeholders: AnthropicMessage[] = window.trimWithPlaceholders<AnthropicMessage>({ targetTokens: budget }).messages
  t.deepEqual(windowKept, kept, 'the window decides as the function does')
  t.is(windowDropped.length, dropped.length)
  t.true(placeholders.length > 0)
  const modified = [...ct.FileTracker.fromMessages(original).getModifiedFiles()]
  t.true(modified.length > 0)
  t.deepEqual([...ct.FileTracker.fromMessages(anthropic).getModifiedFiles()], modified)
})

test('every function that drops messages takes a format: a plain Anthropic conversation keeps a user message first', (t) => {
  // No tool blocks: nothing shows the format, and auto reads it as OpenAI, whose rules let a
  // request start with an assistant message. Anthropic refuses such a request.
  const long = 'word '.repeat(400)
  const messages: AnthropicMessage[] = [
    { role: 'user', content: `first question ${long}` },
    { role: 'assistant', content: `answer one ${long}` },
    { role: 'user', content: `second question ${long}` },
    { role: 'assistant', content: 'answer two' },
    { role: 'user', content: 'now do this' },
  ]
  const scratch = mkdtempSync(join(tmpdir(), 'context-trim-format-'))
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
  const archivePath = join(scratch, 'a.md')
  const prune = (format?: 'anthropic') => new ct.ContextPruner({ archivePath, maxTokens: 1000, keepRecentMessages: 2 }).prune(messages, null, { format }).messages
  t.is(prune()[0].role, 'assistant', 'read as OpenAI')
  const results: Record<string, AnthropicMessage[]> = {
    prune: prune('anthropic'),
    trimByPriority: ct.trimByPriority(messages, { targetTokens: 700, preserveRecentTurns: 1, format: 'anthropic' }).messages,
    trimWithPlaceholders: ct.trimWithPlaceholders(messages, { targetTokens: 700, preserveRecentTurns: 1, format: 'anthropic' }).messages,
    trimConversation: ct.trimConversation(messages, 700, { preserveRecentTurns: 1, format: 'anthropic' }),
    trimByAge: ct.trimByAge(messages, 700, { format: 'anthropic' }),
  }
  for (const [name, result] of Object.entries(results)) {
    t.true(result.length < messages.length, `${name} dropped something`)
    t.is(result[0].role, 'user', name)
    t.deepEqual(ct.validateConversation(result, { format: 'anthropic' }), [], name)
  }
  // The readers take it too, and every one refuses an unknown format with the same error.
  t.is(ct.classifyMessage(messages[1], { messages, index: 1, format: 'anthropic' }).message, messages[1])
  t.is(ct.FileTracker.fromMessages(messages, { format: 'anthropic', now: () => 0 }).getModifiedFiles().size, 0)
  const bad = { code: 'INVALID_OPTION', message: 'format: must be one of openai, anthropic, ai-sdk, auto, got "klingon"' }
  const klingon = 'klingon' as never
  t.throws(() => ct.trimByPriority(messages, { targetTokens: 700, format: klingon }), bad)
  t.throws(() => ct.trimConversation(messages, 700, { format: klingon }), bad)
  t.throws(() => ct.classifyMessage(messages[0], { format: klingon }), bad)
  t.throws(() => ct.FileTracker.fromMessages(messages, { format: klingon }), bad)
  t.throws(() => new ct.ContextPruner({ archivePath }).prune(messages, null, { format: klingon }), bad)
  // A window's format is its own: trim may only name it.
  const window = new ct.ContextWindow({ format: 'anthropic' })
  window.append(messages)
  t.deepEqual(window.trim({ targetTokens: 700, preserveRecentTurns: 1, format: 'anthropic' }).messages, results.trimByPriority)
  t.throws(() => window.trim({ targetTokens: 700, format: 'openai' }), {
    code: 'INVALID_OPTION',
    message: `format: must be the window's format (anthropic), got "openai": give the format when creating the window`,
  })
})

test('a shortened tool result keeps its prompt-cache breakpoint and its error flag, in objects and JSON bodies', (t) => {
  // The newest message, a long result, is cut to head and tail to fit.
  const big = 'line of build output\n'.repeat(600)
  const breakpoint = { type: 'ephemeral' }
  const anthropic = [
    { role: 'user', content: 'Build it' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'bash', input: { command: 'make' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: big }, { type: 'text', text: 'done', cache_control: breakpoint }] }] },
  ]
  const aiSdk = [
    { role: 'user', content: 'Build it' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'bash', input: { command: 'make' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'bash', output: { type: 'error-text', value: big } }] },
  ]
  const options = { targetTokens: 300 }
  const a = ct.trimByPriority(anthropic as AnthropicMessage[], options).messages as AnyMessage[]
  const block = (a[2].content as { content: unknown }[])[0].content as { type: string; text: string; cache_control: unknown }[]
  t.true(Array.isArray(block) && block.length === 1, JSON.stringify(block).slice(0, 200))
  t.is(block[0].type, 'text')
  t.true(block[0].text.length < big.length)
  t.deepEqual(block[0].cache_control, breakpoint)
  const s = ct.trimByPriority(aiSdk as AiSdkMessage[], options).messages as AnyMessage[]
  const output = (s[2].content as { output: { type: string; value: string } }[])[0].output
  t.is(output.type, 'error-text')
  t.true(output.value.length < big.length)
  // The JSON body path writes the same bytes as JSON.stringify of the objects.
  for (const [messages, trimmed] of [[anthropic, a], [aiSdk, s]] as const) {
    t.deepEqual(JSON.parse(ct.trimByPriorityJson(JSON.stringify(messages), options).body), JSON.parse(JSON.stringify(trimmed)))
  }
})

/** Each tool result's text, in order, whatever the format. */
const results = (messages: readonly object[]): string[] =>
  (messages as AnyMessage[]).flatMap((m) => {
    if (m.role === 'tool' && typeof m.content === 'string') return [m.content]
    if (!Array.isArray(m.content)) return []
    return (m.content as Array<Record<string, any>>).flatMap((b) => {
      if (b.type === 'tool_result') return [typeof b.content === 'string' ? b.content : b.content.map((x: { text: string }) => x.text).join('')]
      if (b.type === 'tool-result') return [b.output.value as string]
      return []
    })
  })
/** A tool call of the OpenAI form. */
const toolCall = (id: string, name: string, args: object) => ({ id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } })
type Step = Array<[ReturnType<typeof toolCall>, string]>

/**
 * A session of parallel steps in the three forms: OpenAI (a tool message per result),
 * Anthropic (toAnthropic: a step's results in one user message) and the AI SDK with a step's
 * results in one tool message.
 */
function parallelSession(task: string, steps: Step[]): { openai: Message[]; anthropic: AnthropicMessage[]; aiSdk: AiSdkMessage[] } {
  const openai: Message[] = [{ role: 'user', content: task }]
  for (const step of steps) {
    openai.push({ role: 'assistant', content: null, tool_calls: step.map(([c]) => c) })
    for (const [c, content] of step) openai.push({ role: 'tool', tool_call_id: c.id, content })
  }
  openai.push({ role: 'assistant', content: 'Done.' })
  const aiSdk: AiSdkMessage[] = []
  for (const m of toAiSdk(openai)) {
    const last = aiSdk.at(-1)
    if (m.role === 'tool' && last?.role === 'tool' && Array.isArray(last.content) && Array.isArray(m.content)) {
      last.content = [...last.content, ...m.content]
    } else {
      aiSdk.push(m)
    }
  }
  return { openai, anthropic: toAnthropic(openai), aiSdk }
}

test('parallel results in one message are tracked and classified as the same results one message each', (t) => {
  // OpenAI: a tool message per result. Anthropic (toAnthropic) and the AI SDK (its tool
  // message holds a step's results) answer each step's calls in one message. The last step
  // reads src/a.ts again, superseding its first read, which shares a message with a failed one.
  const lines = (tag: string, n: number) => Array.from({ length: n }, (_, k) => `${tag} line ${k}`).join('\n')
  const call = toolCall
  const steps: Step[] = [
    [[call('t1', 'read_file', { path: 'src/a.ts' }), lines('A', 40)], [call('t2', 'read_file', { path: 'src/b.ts' }), 'Error: ENOENT: no such file src/b.ts']],
    [[call('t3', 'read_file', { path: 'src/x.ts' }), lines('X', 30)], [call('t4', 'edit_file', { path: 'src/c.ts', old: 'x', new: 'y' }), 'Edited src/c.ts']],
    [[call('t5', 'read_file', { path: 'src/d.ts' }), lines('D', 20)], [call('t6', 'bash', { command: 'npm test' }), '1 passing\n[exit code 0]']],
    [[call('t7', 'read_file', { path: 'src/a.ts' }), lines('A', 40)], [call('t8', 'read_file', { path: 'src/e.ts' }), lines('E', 10)]],
  ]
  const { openai, anthropic, aiSdk } = parallelSession('Fix the bug in src/a.ts', steps)
  t.is(anthropic.length, 10)
  t.is(aiSdk.length, 10)
  // OpenAI message -> the message holding it in the other two formats.
  const holder = openai.map((_, i) => i - openai.slice(0, i + 1).filter((m, k) => m.role === 'tool' && openai[k - 1]?.role === 'tool').length)
  const files = (messages: AnyMessage[]) => ct.FileTracker.fromMessages(messages, { now: () => 0 }).getRecentFiles(10, 10)
  const expected = files(openai)
  t.deepEqual(expected.map((f) => [f.path, f.operation, f.lineCount]), [
    ['src/a.ts', 'read', 40], ['src/e.ts', 'read', 10], ['src/d.ts', 'read', 20],
    ['src/x.ts', 'read', 30], ['src/c.ts', 'edit', 1], ['src/b.ts', 'read', 1],
  ])
  const want: number[] = []
  ct.classifyMessages(openai).forEach((c, i) => (want[holder[i]] = Math.max(want[holder[i]] ?? 0, c.priority)))
  for (const [format, messages] of [['anthropic', anthropic], ['ai-sdk', aiSdk]] as const) {
    t.deepEqual(files(messages), expected, format)
    const classes = ct.classifyMessages(messages as AnyMessage[])
    t.deepEqual(classes.map((c) => c.priority), want, format)
    t.is(classes[4].metadata.filePath, 'src/c.ts', `${format}: the edit beside a read names its file`)
    t.is(classes[2].priority, ct.ContentPriority.STALE_TOOL_OUTPUTS, `${format}: the superseded read and the failed one are stale`)
    t.true(classes[4].metadata.wasModified, format)
  }
  // Deduplicated result by result too: the first read of src/a.ts, beside the failed read,
  // becomes its placeholder; the failed read stays.
  const dedup = (messages: AnyMessage[]) => results(ct.deduplicateToolResults(messages, { deduplicationThreshold: 0 }).messages)
  const deduplicated = dedup(openai)
  t.deepEqual(deduplicated.slice(0, 2), ['[superseded by a newer read of src/a.ts at step 4]', 'Error: ENOENT: no such file src/b.ts'])
  const entries = (messages: AnyMessage[]) =>
    ct.deduplicateToolResults(messages, { deduplicationThreshold: 0 }).superseded.map((s) => [s.toolCallId, s.supersededByToolCallId, s.path, s.kind])
  t.deepEqual(entries(openai), [['t1', 't7', 'src/a.ts', 'read']])
  for (const [format, messages] of [['anthropic', anthropic], ['ai-sdk', aiSdk]] as const) {
    t.deepEqual(dedup(messages as AnyMessage[]), deduplicated, `${format}: deduplicateToolResults`)
    t.deepEqual(entries(messages as AnyMessage[]), entries(openai), `${format}: the calls named`)
  }
})

test('parallel results in one message are shortened result by result, as the same results one message each', (t) => {
  // Steps of three parallel calls: two long outputs and a short one; the first step's test run
  // failed. No later message names a file or quotes an output, so age and size alone decide.
  const call = toolCall
  const lines = (tag: string, n: number) => Array.from({ length: n }, (_, k) => `${tag} line ${k} of output`).join('\n')
  const steps: Step[] = Array.from({ length: 8 }, (_, s) => [
    [call(`r${s}`, 'read_file', { path: `src/f${s}.ts` }), lines(`F${s}`, 150 + 40 * s)],
    [call(`b${s}`, 'bash', { command: `npm test -- ${s}` }), s === 0 ? `Error: test failed\n${lines('T0', 200)}` : lines(`T${s}`, 300)],
    [call(`p${s}`, 'bash', { command: 'pwd' }), '/w'],
  ])
  const { openai, anthropic, aiSdk } = parallelSession('Fix the bug', steps)
  t.is(anthropic.length, 18)
  const original = results(openai)
  t.is(original.length, 24)
  const config = { maxAge: 3, maxTokensPerOutput: 300, placeholder: '[{path} truncated, {tokens} tokens]' }
  const expected = results(ct.truncateOldToolOutputs(openai, config))
  // Old ones are placeholders naming their own file, the failed run and the short ones whole,
  // the recent long ones cut to their own head and tail.
  t.regex(expected[0], /^\[src\/f0\.ts truncated, \d+ tokens\]$/)
  t.is(expected[1], original[1])
  t.is(expected[2], '/w')
  t.regex(expected[4], /^\[ truncated, \d+ tokens\]$/)
  t.true(expected[21].startsWith('F7 line 0 of output\n') && expected[21].includes(' tokens cut ') && expected[21].endsWith('F7 line 429 of output'))
  for (const [format, messages] of [['anthropic', anthropic], ['ai-sdk', aiSdk]] as const) {
    const before = JSON.stringify(messages)
    const out = ct.truncateOldToolOutputs(messages as AnyMessage[], config)
    t.deepEqual(results(out), expected, `${format}: truncateOldToolOutputs`)
    t.is(JSON.stringify(messages), before, `${format}: the input is not changed`)
    t.deepEqual(ct.validateConversation(out as AnyMessage[]), [], format)
    for (const [name, trim, json] of [
      ['trimByPriority', ct.trimByPriority, ct.trimByPriorityJson],
      ['trimWithPlaceholders', ct.trimWithPlaceholders, ct.trimWithPlaceholdersJson],
    ] as const) {
      for (const share of [0.3, 0.6]) {
        const targetTokens = Math.floor(ct.estimateTokens(messages as AnyMessage[]) * share)
        const r = trim(messages as AnyMessage[], { targetTokens })
        const where = `${format} ${name} ${share}`
        t.true(r.totalTokens <= targetTokens && ct.estimateTokens(r.messages) === r.totalTokens, `${where}: ${r.totalTokens} > ${targetTokens}`)
        t.deepEqual(ct.validateConversation(r.messages), [], where)
        // Shortened result by result: the newest step keeps its three results, each its own
        // text, cut or whole, or its own placeholder.
        const last = results(r.messages).slice(-3)
        t.is(last.length, 3, where)
        last.forEach((text, k) => {
          const own = original[21 + k]
          t.true(text === own || text.startsWith(own.slice(0, 20)) || text.startsWith('[Content truncated') || text.startsWith('[File:'), `${where}: result ${k}: ${text.slice(0, 60)}`)
        })
        // As many results kept, and as many of them shortened, as with one message each: no
        // message of several results goes whole for want of shortening one of them.
        const kept = results(r.messages)
        const one = results(trim(openai, { targetTokens }).messages)
        const shortened = (texts: string[]) => texts.filter((text) => !original.includes(text)).length
        t.is(kept.length, one.length, `${where}: results kept`)
        t.true(shortened(kept) > 0 && shortened(kept) === shortened(one), `${where}: results shortened`)
        t.deepEqual(JSON.parse(json(JSON.stringify(messages), { targetTokens }).body), JSON.parse(JSON.stringify(r.messages)), `${where}: the JSON body is written alike`)
      }
    }
  }
})
