// Apps written against the seeds' source projects keep their call sites: nanocoder's
// `trimConversation`, `enforceContextLimit` and `/rolling-context` command (its
// `experimental/rolling-context` branch), and CursorClaw's `applyMaxContextTokens` and
// `estimateTokens` (from `context-trim/cursorclaw`, which counts as CursorClaw counts). Each
// test states the public behaviour it checks (see docs/migrating.md).
import test from 'ava'

import * as cursorclaw from '../adapters/cursorclaw.mjs'
import { ct, snapshot } from './helpers.js'
import type { Message } from '../index.js'

/** nanocoder writes tool calls with object arguments and no `type`. */
function call(id: string, name: string, args: Record<string, unknown> = {}): Message {
  return { role: 'assistant', content: `calling ${name}`, tool_calls: [{ id, function: { name, arguments: args } }] } as unknown as Message
}

function result(id: string, content: string): Message {
  return { role: 'tool', tool_call_id: id, content }
}

/** About `lines` × 8 tokens, unique to `seed`. */
function big(seed: string, lines = 60): string {
  return Array.from({ length: lines }, (_, i) => `${seed}-${String(i).padStart(4, '0')} payload line\n`).join('')
}

/** A task, then `steps` steps of `read_file` on /src/f<k>.ts, each with a big output. */
function session(steps: number, output: (k: number) => string = (k) => big(`out${k}`)): Message[] {
  const messages: Message[] = [{ role: 'system', content: 'You are a coding agent.' }, { role: 'user', content: 'Fix the build.' }]
  for (let k = 1; k <= steps; k++) messages.push(call(String(k), 'read_file', { path: `/src/f${k}.ts` }), result(String(k), output(k)))
  messages.push({ role: 'user', content: 'Go on.' })
  return messages
}

/** {@link session} with shell commands instead of reads: outputs that are no view of a file. */
function shellSession(steps: number, output?: (k: number) => string): Message[] {
  return session(steps, output).map((m) => (m.tool_calls ? call(m.tool_calls[0].id, 'bash', { command: `make step${m.tool_calls[0].id}` }) : m))
}

const NANOCODER = /^\[content truncated - \d+ steps ago, \d+ tokens\]$/

function contents(messages: Message[]): string[] {
  return messages.map((m) => (typeof m.content === 'string' ? m.content : ''))
}

// 1. Placeholders

test('trimConversation writes nanocoder\'s lower-case placeholder by default', (t) => {
  const messages = session(3)
  const out = ct.trimConversation(messages, 400)
  const placeholders = contents(out).filter((c) => c.startsWith('[content truncated'))
  t.true(placeholders.length > 0)
  for (const p of placeholders) t.regex(p, NANOCODER)
  t.true(ct.estimateTokens(out) <= 400)
})

test('trimWithPlaceholders keeps seed 000\'s wording by default and takes a placeholder template', (t) => {
  const messages = session(3)
  const seed = ct.trimWithPlaceholders(messages, { targetTokens: 400 })
  t.true(contents(seed.messages).some((c) => c.startsWith('[Content truncated') || c.startsWith('[File: ')))
  t.false(contents(seed.messages).some((c) => c.startsWith('[content truncated')))
  const own = ct.trimWithPlaceholders(messages, { targetTokens: 400, placeholder: '[content truncated - {age} steps ago, {tokens} tokens]' })
  const placeholders = contents(own.messages).filter((c) => c.startsWith('[content truncated'))
  t.true(placeholders.length > 0)
  for (const p of placeholders) t.regex(p, NANOCODER)
  // The same decisions, only the text differs.
  const positions = (r: typeof seed) => r.droppedMessages.map((d) => messages.indexOf(d.message))
  t.true(positions(seed).length > 0 && positions(seed).every((i) => i >= 0))
  t.deepEqual(positions(own), positions(seed))
})

test('{path} names the file a placeholder stands for, in both strategies', (t) => {
  const messages = session(8)
  const priority = ct.trimWithPlaceholders(messages, { targetTokens: 300, placeholder: '[{path}: {age} steps ago]' })
  t.true(contents(priority.messages).includes('[/src/f1.ts: 7 steps ago]'))
  const rolling = ct.truncateOldToolOutputs(messages, { placeholder: '[{path}: {age} steps ago]' })
  t.is(rolling[3].content, '[/src/f1.ts: 7 steps ago]')
  t.is(rolling[5].content, '[/src/f2.ts: 6 steps ago]')
})

test('CacheAwareTrimmer\'s placeholders strategy takes the template too', (t) => {
  const messages = session(8)
  const contextWindow = Math.floor(ct.estimateTokens(messages) / 2)
  const trimmer = new ct.CacheAwareTrimmer({ contextWindow, strategy: 'placeholders', placeholder: '[gone: {path}]' })
  const out = trimmer.trim(messages).messages
  t.true(contents(out).includes('[gone: /src/f1.ts]'))
  t.throws(() => new ct.CacheAwareTrimmer({ contextWindow, placeholder: '[x]' }), {
    code: 'INVALID_OPTION',
    message: 'placeholder: applies to strategy placeholders (truncate takes truncation.placeholder) only, the strategy is "priority"',
  })
  t.throws(() => new ct.CacheAwareTrimmer({ contextWindow, strategy: 'truncate', truncation: { framing: false } }), {
    code: 'INVALID_OPTION',
    message: 'truncation.framing: cannot be set here: set it on the options themselves',
  })
})

test('a placeholder given to a function that makes none is an error, not ignored', (t) => {
  t.throws(() => ct.trimByPriority(session(2), { targetTokens: 100, placeholder: '[x]' }), {
    code: 'INVALID_OPTION',
    message: 'placeholder: only trimWithPlaceholders makes placeholders (this call cuts and drops): call trimWithPlaceholders, or leave the option out',
  })
  t.throws(() => ct.trimByPriority(session(2), { targetTokens: 100, keepPlaceholders: true }), {
    code: 'INVALID_OPTION',
    message: 'keepPlaceholders: only trimWithPlaceholders makes placeholders (this call cuts and drops): call trimWithPlaceholders, or leave the option out',
  })
})

test('trimConversation keeps its placeholders as nanocoder does, unless keepPlaceholders is false', (t) => {
  // Shell outputs (no file views): the oldest becomes the placeholder, which frees more than
  // the 100 tokens asked; the room left holds far more than twice the placeholder.
  const messages = shellSession(3)
  const target = ct.estimateTokens(messages) - 100
  const noRolling = { maxAge: 100 }
  const nanocoder = ct.trimConversation(messages, target, noRolling)
  t.regex(contents(nanocoder)[3], NANOCODER)
  const filled = ct.trimConversation(messages, target, { ...noRolling, keepPlaceholders: false })
  t.regex(contents(filled)[3], /^out1-0000 payload line\n[^]*\[\.\.\. \d+ tokens cut \.\.\.\][^]*out1-0059 payload line\n$/)
  t.true(ct.estimateTokens(filled) <= target)
  // trimWithPlaceholders fills by default, and keeps them with keepPlaceholders.
  const options = { targetTokens: target, placeholder: '[content truncated - {age} steps ago, {tokens} tokens]', preserveRecentTurns: 5 }
  t.deepEqual(ct.trimWithPlaceholders(messages, options).messages, filled)
  t.deepEqual(ct.trimWithPlaceholders(messages, { ...options, keepPlaceholders: true }).messages, nanocoder)
  // The window and the JSON entry point read the option as trimWithPlaceholders does.
  const window = new ct.ContextWindow()
  window.append(messages)
  t.deepEqual(window.trimWithPlaceholders(options).messages, filled)
  t.deepEqual(window.trimWithPlaceholders({ ...options, keepPlaceholders: true }).messages, nanocoder)
  const body = JSON.stringify({ model: 'm', messages })
  t.deepEqual(JSON.parse(ct.trimWithPlaceholdersJson(body, options).body).messages, JSON.parse(JSON.stringify(filled)))
  t.deepEqual(
    JSON.parse(ct.trimWithPlaceholdersJson(body, { ...options, keepPlaceholders: true }).body).messages,
    JSON.parse(JSON.stringify(nanocoder)),
  )
  t.throws(() => window.trim({ targetTokens: target, keepPlaceholders: true }), { code: 'INVALID_OPTION', message: /^keepPlaceholders: only trimWithPlaceholders/ })
  t.throws(() => ct.trimByPriorityJson(body, { targetTokens: target, keepPlaceholders: true }), { code: 'INVALID_OPTION', message: /^keepPlaceholders: only trimWithPlaceholders/ })
  t.throws(() => ct.trimConversation(messages, target, { strategy: 'age-based', keepPlaceholders: true }), {
    code: 'INVALID_OPTION',
    message: 'keepPlaceholders: applies to strategy priority-based only, the strategy is "age-based" (oldest first)',
  })
})

// 2. Options are checked, and nanocoder's are honoured

test('a misspelt option name fails loudly, naming the option meant', (t) => {
  t.throws(() => ct.trimConversation(session(1), 100, { preserveRecentTurn: 2 } as never), {
    instanceOf: TypeError,
    code: 'INVALID_OPTION',
    message: 'preserveRecentTurn: is not an option (did you mean preserveRecentTurns?)',
  })
  t.throws(() => ct.countTokens('hello', { modle: 'gpt-4' } as never), {
    code: 'INVALID_OPTION',
    message: 'modle: is not an option (did you mean model?)',
  })
  t.throws(() => ct.applyMaxContextTokens(session(1), 100, { minKeep: { usr: 1 } } as never), {
    code: 'INVALID_OPTION',
    message: 'minKeep.usr: is not an option (did you mean user?)',
  })
  t.throws(() => ct.truncateOldToolOutputs(session(1), { frobnicate: true } as never), {
    code: 'INVALID_OPTION',
    message: /^frobnicate: is not an option; the options here are .*maxAge/,
  })
})

test('nanocoder\'s options change what trimConversation does', (t) => {
  // Eight steps: with maxAge 5 the two oldest outputs become placeholders.
  const messages = shellSession(8)
  const total = ct.estimateTokens(messages)
  const budget = total - 10
  const byDefault = ct.trimConversation(messages, budget)
  t.deepEqual(
    byDefault.flatMap((m, i) => (NANOCODER.test(String(m.content)) ? [i] : [])),
    [3, 5],
  )
  const younger = ct.trimConversation(messages, budget, { maxAge: 2 })
  t.is(younger.filter((m) => NANOCODER.test(String(m.content))).length, 5)
  const own = ct.trimConversation(messages, budget, { placeholder: '<gone {N}>' })
  t.is(own[3].content, '<gone 7>')
  // maxTokensPerOutput cuts the recent ones around a marker.
  const cut = ct.trimConversation(messages, budget, { maxTokensPerOutput: 100 })
  t.true(cut.slice(7).every((m) => m.role !== 'tool' || ct.countTokens(String(m.content)) <= 100))
})

test('preserveErrors and preserveSmallOutputs decide whether errors and small outputs are kept', (t) => {
  // Ten steps: outputs 1 to 4 are older than maxAge; 1 is an error report, 2 is small.
  const messages = shellSession(10, (k) => (k === 1 ? `Error: build failed\n${big('err', 40)}` : k === 2 ? 'ok' : big(`out${k}`)))
  const budget = ct.estimateTokens(messages) - 10
  const kept = ct.trimConversation(messages, budget)
  t.is(kept[3], messages[3], 'the old error is kept whole')
  t.is(kept[5], messages[5], 'the old small output is kept whole')
  const shortened = ct.trimConversation(messages, budget, { preserveErrors: false, preserveSmallOutputs: false })
  t.regex(String(shortened[3].content), NANOCODER)
  t.regex(String(shortened[5].content), NANOCODER)
  const threshold = ct.trimConversation(messages, budget, { preserveErrors: false, smallOutputThreshold: 0 })
  t.regex(String(threshold[5].content), NANOCODER)
})

test('preserveRecentTurns defaults to nanocoder\'s 5', (t) => {
  // Shell outputs and file reads in turn: which go first depends on what counts as recent.
  const messages = session(8)
  for (let k = 1; k <= 8; k += 2) {
    messages[2 * k] = call(String(k), 'bash', { command: `make target${k}` })
  }
  const replaced = (options: object) =>
    ct.trimConversation(messages, ct.estimateTokens(messages) - 1200, { maxAge: 100, ...options }).flatMap((m, i) => (m === messages[i] ? [] : [i]))
  t.deepEqual(replaced({}), replaced({ preserveRecentTurns: 5 }))
  t.notDeepEqual(replaced({}), replaced({ preserveRecentTurns: 0 }))
  t.notDeepEqual(replaced({}), replaced({ preserveRecentTurns: 2 }))
})

test('providerName picks how tokens are counted', (t) => {
  const messages = session(2)
  const anthropic = ct.enforceContextLimit(messages, 1_000_000, { providerName: 'anthropic', model: 'claude-3-5-sonnet-20241022' })
  t.is(anthropic.originalTokens, ct.estimateTokens(messages, { encoding: 'approximate' }))
  const openai = ct.enforceContextLimit(messages, 1_000_000, { providerName: 'openai', model: 'gpt-4' })
  t.is(openai.originalTokens, ct.estimateTokens(messages, { model: 'gpt-4' }))
  const given = ct.enforceContextLimit(messages, 1_000_000, { providerName: 'anthropic', encoding: 'cl100k_base' })
  t.is(given.originalTokens, ct.estimateTokens(messages, { encoding: 'cl100k_base' }))
})

test('trimConversation leaves a request that fits alone and never mutates its input', (t) => {
  const messages = session(8)
  const before = snapshot(messages)
  const out = ct.trimConversation(messages, 1_000_000)
  t.is(out.length, messages.length)
  out.forEach((m, i) => t.is(m, messages[i]))
  ct.trimConversation(messages, 50)
  t.deepEqual(messages, before)
})

// 3. enforceContextLimit

test('enforceContextLimit within the limit returns the messages untouched, as nanocoder\'s', (t) => {
  const messages: Message[] = [{ role: 'user', content: 'Hello' }]
  const r = ct.enforceContextLimit(messages, 10_000)
  t.deepEqual(Object.keys(r).sort(), ['droppedCount', 'finalTokens', 'messages', 'originalTokens', 'truncated'])
  t.false(r.truncated)
  t.is(r.droppedCount, 0)
  t.is(r.messages[0], messages[0])
  t.is(r.originalTokens, ct.estimateTokens(messages))
  t.is(r.finalTokens, r.originalTokens)
  t.is(r.droppedMessages, undefined)
})

test('enforceContextLimit over the limit trims and reports what it removed', (t) => {
  const messages = session(8)
  const max = 600
  const r = ct.enforceContextLimit(messages, max)
  t.true(r.truncated)
  t.is(r.originalTokens, ct.estimateTokens(messages))
  t.is(r.finalTokens, ct.estimateTokens(r.messages))
  t.true(r.finalTokens <= max)
  t.is(r.droppedCount, messages.length - r.messages.length)
  t.deepEqual(r.messages, ct.trimConversation(messages, max))
  // droppedMessages: the originals not returned as they were, by identity, in order.
  const kept = new Set(r.messages)
  t.deepEqual(r.droppedMessages, messages.filter((m) => !kept.has(m)))
  t.is(r.messages[r.messages.length - 1], messages[messages.length - 1])
})

test('enforceContextLimit checks its arguments like every entry point', async (t) => {
  t.throws(() => ct.enforceContextLimit(session(1), -1), {
    code: 'INVALID_ARGUMENT',
    message: 'maxInputTokens: must be an integer of at least 0, got -1',
  })
  t.throws(() => ct.enforceContextLimit(session(1), 10, { strategy: 'newest' as never }), {
    code: 'INVALID_OPTION',
    message: 'strategy: must be one of age-based, priority-based, got "newest"',
  })
  const r = await ct.enforceContextLimitAsync(session(8), 600, { strategy: 'age-based' })
  t.true(r.truncated)
  t.deepEqual(r.messages, ct.enforceContextLimit(session(8), 600, { strategy: 'age-based' }).messages.map((m) => m))
})

// 4. /rolling-context

test('RollingContext#command is a command a chat handler registers, with nanocoder\'s words', async (t) => {
  const rolling = new ct.RollingContext()
  const command = rolling.command
  t.is(command.name, 'rolling-context')
  t.true(command.description.toLowerCase().includes('context'))
  const pending = command.handler([])
  t.true(pending instanceof Promise)
  t.is(await pending, 'Rolling context enabled.')
  t.true(rolling.enabled)
  // A chat handler passes its messages and metadata after the arguments.
  t.is(await command.handler(['off'], [], { provider: 'test' }), 'Rolling context disabled.')
  t.is(await command.handler(['enable']), 'Rolling context enabled.')
  t.is(await command.handler(['status']), 'Rolling context enabled.')
  t.true(rolling.enabled)
  t.is(await command.handler(['DISABLE']), 'Rolling context disabled.')
  t.is(await command.handler(['toggle']), 'Rolling context enabled.')
  await t.throwsAsync(command.handler(['maybe']), {
    code: 'INVALID_ARGUMENT',
    message: 'arg: must be on, off, enable, disable, toggle, status or nothing, got "maybe"',
  })
  t.true(rolling.enabled)
})

test('RollingContext#command.handler takes its words as a string too', async (t) => {
  const rolling = new ct.RollingContext()
  const command = rolling.command
  t.is(await command.handler('on'), 'Rolling context enabled.')
  t.true(rolling.enabled)
  t.is(await command.handler('  OFF  '), 'Rolling context disabled.')
  t.is(await command.handler('status now'), 'Rolling context disabled.')
  t.is(await command.handler(''), 'Rolling context enabled.')
  await t.throwsAsync(command.handler('maybe so'), {
    code: 'INVALID_ARGUMENT',
    message: 'arg: must be on, off, enable, disable, toggle, status or nothing, got "maybe"',
  })
  t.true(rolling.enabled)
})

test('handleCommand takes nanocoder\'s enable and disable', (t) => {
  const rolling = new ct.RollingContext()
  rolling.handleCommand('enable')
  t.true(rolling.enabled)
  rolling.handleCommand('disable')
  t.false(rolling.enabled)
  rolling.handleCommand('toggle')
  t.true(rolling.enabled)
})

// 5. CursorClaw's positional truncationPriority

test('applyMaxContextTokens takes CursorClaw\'s truncationPriority array as its third argument', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'x'.repeat(200) },
    { role: 'user', content: 'u'.repeat(200) },
    { role: 'assistant', content: 'a'.repeat(200) },
    { role: 'user', content: 'v'.repeat(200) },
  ]
  const cap = ct.estimateTokens(messages) - 1
  const positional = ct.applyMaxContextTokens(messages, cap, ['assistant', 'user', 'system'])
  t.deepEqual(positional, ct.applyMaxContextTokens(messages, cap, { truncationPriority: ['assistant', 'user', 'system'] }))
  t.deepEqual(positional.map((m) => m.role), ['system', 'user', 'user'], 'assistant dropped first')
  t.deepEqual(ct.applyMaxContextTokens(messages, cap, []), ct.applyMaxContextTokens(messages, cap))
  t.throws(() => ct.applyMaxContextTokens(messages, cap, ['assistant', 3] as never), {
    code: 'INVALID_ARGUMENT',
    message: 'truncationPriority[1]: must be a string, got number',
  })
})

// 6. Counting as they count

/** CursorClaw's estimate: ceil(chars / 4) of each message's content, nothing else. */
function cursorClaw(messages: Message[]): number {
  return messages.reduce((sum, m) => sum + Math.ceil(String(m.content).length / 4), 0)
}

test('framing: false counts content only, so a CursorClaw cap keeps what CursorClaw keeps', (t) => {
  const counting = { encoding: 'approximate', framing: false } as const
  const messages: Message[] = [
    { role: 'system', content: 'x'.repeat(200) },
    { role: 'system', content: 'y'.repeat(200) },
    { role: 'user', content: 'z'.repeat(199) },
  ]
  t.is(ct.estimateTokens(messages, counting), cursorClaw(messages))
  for (const m of messages) t.is(ct.estimateMessageTokens(m, counting), Math.ceil(String(m.content).length / 4))
  // A cap of 100 tokens: 50 + 50 + 50 is over it, and dropping the oldest is enough.
  const capped = ct.applyMaxContextTokens(messages, 100, counting)
  t.deepEqual(capped, messages.slice(1))
  t.true(cursorClaw(capped) <= 100)
  // With the cookbook's framing each message costs its role and 3 tokens more, and the request
  // 3 of reply priming: the same cap keeps one message less.
  t.deepEqual(ct.applyMaxContextTokens(messages, 100, { encoding: 'approximate' }), messages.slice(2))
})

test('framing: false counts tool-call names and arguments, but no name, role or priming', (t) => {
  const message: Message = {
    role: 'assistant',
    name: 'agent',
    content: 'abcd',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }],
  }
  const counting = { encoding: 'approximate', framing: false } as const
  t.is(ct.estimateMessageTokens(message, counting), 1 + Math.ceil(9 / 4) + Math.ceil(15 / 4))
  t.is(ct.estimateTokens([message], counting), ct.estimateMessageTokens(message, counting))
  // Framing: 3 a message, the role (3), the name (2 + 1), 1 for the call, 3 of reply priming.
  t.is(ct.estimateTokens([message], { encoding: 'approximate' }) - ct.estimateTokens([message], counting), 3 + 3 + 3 + 1 + 3)
  t.is(ct.estimateTokens([message], { framing: true }), ct.estimateTokens([message]))
  t.is(ct.countTokens('hello world', { framing: false }), ct.countTokens('hello world'))
})

test('framing is taken wherever model and encoding are', (t) => {
  const messages = session(8)
  const counting = { encoding: 'approximate', framing: false } as const
  const total = ct.estimateTokens(messages, counting)
  t.true(ct.trimByPriority(messages, { targetTokens: total, ...counting }).droppedMessages.length === 0)
  t.true(ct.trimByPriority(messages, { targetTokens: total, encoding: 'approximate' }).droppedMessages.length > 0)
  const limit = ct.enforceContextLimit(messages, total, counting)
  t.false(limit.truncated)
  t.is(limit.originalTokens, total)
  const window = new ct.ContextWindow(counting)
  window.append(messages)
  t.is(window.totalTokens, total)
  t.throws(() => window.trim({ targetTokens: 10, framing: true }), { code: 'INVALID_OPTION', message: /^framing: the window counts without framing/ })
  t.is(ct.truncateOldToolOutputs(messages, { ...counting, maxAge: 100 }).length, messages.length)
})

// 7. context-trim/cursorclaw: CursorClaw's module, its counting by default

/** CursorClaw's oldest-first cap (TU.2): drop from the start until what is left fits. */
function cursorClawOldestFirst(messages: Message[], cap: number): Message[] {
  let start = 0
  while (start < messages.length - 1 && cursorClaw(messages.slice(start)) > cap) start++
  return messages.slice(start)
}

test('context-trim/cursorclaw counts as CursorClaw, so a cap of 100 keeps the messages CursorClaw keeps', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'x'.repeat(200) },
    { role: 'system', content: 'y'.repeat(200) },
    { role: 'user', content: 'z'.repeat(200) },
  ]
  const before = snapshot(messages)
  const capped = cursorclaw.applyMaxContextTokens(messages, 100)
  t.is(capped.length, 2)
  t.is(capped[0], messages[1])
  t.is(capped[1], messages[2])
  t.deepEqual(messages, before)
  // The root entry counts exact o200k tokens with the cookbook's framing: these texts are 25,
  // 50 and 100 tokens there (BPE merges runs of each letter differently), 190 with framing,
  // so the same cap keeps the last message only.
  t.deepEqual([ct.estimateTokens(messages), ct.applyMaxContextTokens(messages, 100).length], [190, 1])
  // Under the cap, the same messages come back.
  t.deepEqual(cursorclaw.applyMaxContextTokens(messages, 150), messages)
})

test('context-trim/cursorclaw drops oldest first exactly where CursorClaw does, at every cap', (t) => {
  const lengths = [37, 400, 3, 120, 81, 250, 9, 64]
  const roles = ['system', 'user', 'assistant'] as const
  const messages: Message[] = lengths.map((n, i) => ({ role: roles[i % 3], content: String.fromCharCode(97 + i).repeat(n) }))
  const total = cursorClaw(messages)
  for (let cap = 0; cap <= total + 1; cap++) {
    const ours = cursorclaw.applyMaxContextTokens(messages, cap)
    t.deepEqual(ours.map((m) => messages.indexOf(m)), cursorClawOldestFirst(messages, cap).map((m) => messages.indexOf(m)), `cap ${cap}`)
  }
})

test('context-trim/cursorclaw takes the truncationPriority array or options, its counting only a default', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 's'.repeat(400) },
    { role: 'user', content: 'u'.repeat(400) },
    { role: 'assistant', content: 'a'.repeat(400) },
    { role: 'user', content: 'last' },
  ]
  // CursorClaw's TU.3 example: 100 tokens each and 1 for the last, capped at 150.
  const priority = ['assistant', 'user', 'system'] as const
  const positional = cursorclaw.applyMaxContextTokens(messages, 150, [...priority])
  t.deepEqual(positional.map((m) => m.role), ['system', 'user'])
  t.is(positional[1], messages[3])
  t.deepEqual(cursorclaw.applyMaxContextTokens(messages, 150, { truncationPriority: [...priority] }), positional)
  t.deepEqual(cursorclaw.applyMaxContextTokens(messages, 150, []), cursorclaw.applyMaxContextTokens(messages, 150))
  // What the caller sets wins: framing, an encoding, or a model (which picks the encoding).
  const cap = 300
  const same = (options: object) => cursorclaw.applyMaxContextTokens(messages, cap, options)
  t.deepEqual(same({ framing: true }), ct.applyMaxContextTokens(messages, cap, { encoding: 'approximate', framing: true }))
  t.deepEqual(same({ model: 'gpt-4' }), ct.applyMaxContextTokens(messages, cap, { model: 'gpt-4', framing: false }))
  t.deepEqual(same({ encoding: 'cl100k_base' }), ct.applyMaxContextTokens(messages, cap, { encoding: 'cl100k_base', framing: false }))
  t.deepEqual(same({ encoding: undefined, framing: undefined }), same({}))
  t.deepEqual(same({ keepFirstSystem: true }), ct.applyMaxContextTokens(messages, cap, { keepFirstSystem: true, encoding: 'approximate', framing: false }))
  // Bad options are refused by the library, by name.
  t.throws(() => cursorclaw.applyMaxContextTokens(messages, cap, 'assistant' as never), {
    code: 'INVALID_OPTION',
    message: 'options: must be an object, got string',
  })
  t.throws(() => cursorclaw.applyMaxContextTokens(messages, cap, { framng: true } as never), {
    code: 'INVALID_OPTION',
    message: 'framng: is not an option (did you mean framing?)',
  })
  t.throws(() => cursorclaw.applyMaxContextTokens(messages, cap, ['assistant', 'robot'] as never), {
    code: 'INVALID_OPTION',
    message: /^truncationPriority/,
  })
})

test('context-trim/cursorclaw\'s estimateTokens is CursorClaw\'s: one token per four characters, rounded up', (t) => {
  t.deepEqual(['', 'a', 'abcd', 'abcde', 'x'.repeat(400)].map(cursorclaw.estimateTokens), [0, 1, 1, 2, 100])
  t.throws(() => cursorclaw.estimateTokens(42 as never), { code: 'INVALID_ARGUMENT' })
})

test('context-trim/cursorclaw takes CursorClaw\'s own message type', (t) => {
  // CursorClaw types its messages `{ role: string; content: string }`: the entry's types take
  // them as they are, and a role no format has is refused at run time.
  const typed: Array<{ role: string; content: string }> = [{ role: 'user', content: 'hi' }]
  const out: Array<{ role: string; content: string }> = cursorclaw.applyMaxContextTokens(typed, 10)
  t.is(out[0], typed[0])
  t.throws(() => cursorclaw.applyMaxContextTokens([{ role: 'robot', content: 'hi' }], 10), { code: 'INVALID_MESSAGE' })
})

// 8. Resolved options given back

test('new CacheAwareTrimmer(trimmer.options) makes a trimmer that decides as the first, for every strategy', (t) => {
  const messages = session(8)
  const contextWindow = Math.floor(ct.estimateTokens(messages) / 2)
  const variants: ConstructorParameters<typeof ct.CacheAwareTrimmer>[0][] = [
    { contextWindow },
    { contextWindow, strategy: 'placeholders', placeholder: '[gone: {path}]', preserveRecentTurns: 1, agentInstructionMarkers: ['AGENTS.md'], model: 'gpt-4', framing: false },
    { contextWindow, strategy: 'truncate', truncation: { maxAge: 2, smallOutputTokens: 0 }, encoding: 'approximate', highWater: 0.7, lowWater: 0.4 },
    { contextWindow, strategy: 'roles', roles: { truncationPriority: ['tool', 'assistant'], keepFirstSystem: true, minKeep: { user: 1 } }, format: 'openai' },
    { contextWindow, strategy: 'age', clearAtLeast: 0 },
  ]
  for (const options of variants) {
    const first = new ct.CacheAwareTrimmer(options)
    const again = new ct.CacheAwareTrimmer(first.options)
    t.deepEqual(again.options, first.options)
    const [a, b] = [first.trim(messages), again.trim(messages)]
    t.deepEqual(b, a, String(options.strategy))
    t.true(a.decision !== 'kept', 'the conversation is over the high-water mark')
  }
  // The counting is part of the options: a round trip keeps it.
  const framed = new ct.CacheAwareTrimmer({ contextWindow, encoding: 'approximate', framing: false })
  t.like(framed.options, { encoding: 'approximate', framing: false, format: 'auto' })
  t.like(new ct.CacheAwareTrimmer(framed.options).options, { encoding: 'approximate', framing: false })
})

test('the computed fields are taken back only when they agree, and a misspelt option still fails', (t) => {
  const options = new ct.CacheAwareTrimmer({ contextWindow: 1000 }).options
  t.throws(() => new ct.CacheAwareTrimmer({ ...options, highWaterTokens: 900 }), {
    code: 'INVALID_OPTION',
    message: 'highWaterTokens: must be highWater × contextWindow rounded down (850 here) or left out, got 900; set highWater to move the mark',
  })
  t.throws(() => new ct.CacheAwareTrimmer({ ...options, contextWindow: 2000 }), {
    code: 'INVALID_OPTION',
    message: 'highWaterTokens: must be highWater × contextWindow rounded down (1700 here) or left out, got 850; set highWater to move the mark',
  })
  t.throws(() => new ct.CacheAwareTrimmer({ ...options, lowWaterToken: 600 } as never), {
    code: 'INVALID_OPTION',
    message: 'lowWaterToken: is not an option (did you mean lowWaterTokens?)',
  })
  // A resolved strategy option is refused under another strategy, as when given by hand.
  t.throws(() => new ct.CacheAwareTrimmer({ ...options, strategy: 'age' }), {
    code: 'INVALID_OPTION',
    message: 'preserveRecentTurns: applies to strategy priority or placeholders only, the strategy is "age"',
  })
})

test('every class with options takes its resolved options back, counting and deciding the same', (t) => {
  const messages = session(8)
  // ContextWindow: the counting and the format given.
  const window = new ct.ContextWindow({ model: 'gpt-4', framing: false, format: 'openai' })
  t.deepEqual(window.options, { encoding: 'cl100k_base', framing: false, format: 'openai' })
  const windowAgain = new ct.ContextWindow(window.options)
  t.deepEqual(windowAgain.options, window.options)
  window.append(messages)
  windowAgain.append(messages)
  t.is(windowAgain.totalTokens, window.totalTokens)
  t.is(window.totalTokens, ct.estimateTokens(messages, { model: 'gpt-4', framing: false }))
  t.deepEqual(new ct.ContextWindow().options, { encoding: 'o200k_base', framing: true, format: 'auto' })
  // RollingContext: the toggle, the configuration and the counting; `config` round-trips too.
  const rolling = new ct.RollingContext({ enabled: true, config: { maxAge: 2, placeholder: '[{path}]', encoding: 'approximate', framing: false } })
  const rollingAgain = new ct.RollingContext(rolling.options)
  t.deepEqual(rollingAgain.options, rolling.options)
  t.like(rolling.options, { enabled: true, config: { maxAge: 2, placeholder: '[{path}]', encoding: 'approximate', framing: false } })
  t.deepEqual(rollingAgain.prepare(messages), rolling.prepare(messages))
  const set = new ct.RollingContext()
  set.config = rolling.config
  t.deepEqual(set.config, rolling.config)
  // ContextPruner: the settings, the counting and the clock.
  const now = () => 1_700_000_000_000
  const pruner = new ct.ContextPruner({ threshold: 70, keepRecentMessages: 4, maxTokens: 2000, encoding: 'cl100k_base', now })
  t.is(pruner.options.now, now)
  t.like(pruner.options, { threshold: 70, keepRecentMessages: 4, maxTokens: 2000, encoding: 'cl100k_base', framing: true })
  const prunerAgain = new ct.ContextPruner(pruner.options)
  t.deepEqual(prunerAgain.options, pruner.options)
  t.deepEqual(prunerAgain.measure(messages), pruner.measure(messages))
  t.false('now' in new ct.ContextPruner().options)
  // FileTracker: its clock.
  const tracker = new ct.FileTracker({ now })
  t.is(new ct.FileTracker(tracker.options).options.now, now)
  t.deepEqual(new ct.FileTracker().options, {})
  // A misspelt key next to resolved options still fails.
  t.throws(() => new ct.ContextPruner({ ...pruner.options, treshold: 60 } as never), {
    code: 'INVALID_OPTION',
    message: 'treshold: is not an option (did you mean threshold?)',
  })
  t.throws(() => new ct.RollingContext({ ...rolling.options, config: { ...rolling.config, maxAges: 3 } } as never), {
    code: 'INVALID_OPTION',
    message: 'config.maxAges: is not an option (did you mean maxAge?)',
  })
})

// 9. An option taken in one place is taken wherever it means something, and refused where not

test('trimConversation takes agentInstructionMarkers as trimWithPlaceholders does', (t) => {
  const messages = session(8)
  messages.splice(1, 0, { role: 'user', content: `HOUSE RULES: ${big('rule', 20)}` })
  const markers = { agentInstructionMarkers: ['HOUSE RULES:'] }
  // Without the markers it is the task, which goes after everything below it; as an agent
  // instruction it outranks the task: some budget keeps it only with the markers.
  const budget = [900, 800, 700, 600, 500, 400, 350, 300, 250, 200, 150].find(
    (b) => !ct.trimConversation(messages, b).includes(messages[1]) && ct.trimConversation(messages, b, markers).includes(messages[1]),
  )
  t.not(budget, undefined, 'a budget where the old user message goes and the agent instruction stays')
  t.true(ct.enforceContextLimit(messages, budget!, markers).messages.includes(messages[1]))
})

test('trimConversation takes a fileTracker as trimWithPlaceholders does: a modified file\'s read stays', (t) => {
  const messages = session(8)
  const tracker = new ct.FileTracker({ now: () => 0 })
  tracker.trackAccess('/src/f6.ts', 6, 'edit')
  const read = messages[13]
  t.is(read.role, 'tool')
  t.false(ct.trimConversation(messages, 1500, { maxAge: 100 }).includes(read))
  t.true(ct.trimConversation(messages, 1500, { maxAge: 100, fileTracker: tracker }).includes(read))
  t.throws(() => ct.trimConversation(messages, 1500, { fileTracker: {} as never }), {
    code: 'INVALID_OPTION',
    message: 'fileTracker: must be a FileTracker, got object',
  })
})

test('trimConversation\'s rolling pass leaves the current view of each file whole, unless preserveFileViews is false', (t) => {
  // An old listing, then seven reads of seven files: every read is its file's current view.
  const reads = session(7)
  const messages = [...reads.slice(0, 2), call('0', 'bash', { command: 'ls -R' }), result('0', big('ls')), ...reads.slice(2)]
  const firstRead = messages[5]
  t.is(firstRead.tool_call_id, '1')
  const target = ct.estimateTokens(messages) - 100
  // Rolling context alone turns every output older than maxAge (5) steps into a placeholder.
  const nanocoder = ct.trimConversation(messages, target, { preserveFileViews: false })
  t.false(nanocoder.includes(firstRead))
  t.regex(contents(nanocoder)[5], NANOCODER)
  // By default the listing's placeholder frees enough and the views stay whole.
  const sent = ct.trimConversation(messages, target)
  t.true(sent.includes(firstRead))
  t.regex(contents(sent)[3], NANOCODER)
  t.true(ct.estimateTokens(sent) <= target)
})

test('trimConversation refuses the priority options with the age-based strategy, which reads no priority', (t) => {
  const tracker = new ct.FileTracker()
  for (const option of [{ preserveRecentTurns: 3 }, { agentInstructionMarkers: ['RULES'] }, { fileTracker: tracker }]) {
    const [name] = Object.keys(option)
    t.throws(() => ct.trimConversation(session(2), 100, { strategy: 'age-based', ...option }), {
      code: 'INVALID_OPTION',
      message: `${name}: applies to strategy priority-based only, the strategy is "age-based" (oldest first)`,
    })
  }
  t.notThrows(() => ct.trimConversation(session(2), 100, { strategy: 'age-based', preserveRecentTurns: undefined }))
})

test('truncateOldToolOutputs, RollingContext and ContextWindow#truncate take format as every reader does', (t) => {
  const output = big('x')
  const messages = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a.ts' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: output }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'read_file', input: { path: 'b.ts' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: 'ok' }] },
    { role: 'user', content: 'next' },
  ] as never as Message[]
  const read = (format: 'anthropic' | 'openai') => ct.truncateOldToolOutputs(messages, { format, maxAge: 0 })
  t.deepEqual((read('anthropic')[2].content as unknown as Array<{ content: string }>)[0].content, '[content truncated - 1 steps ago]')
  // Read as OpenAI, the tool_result block is a user message's part: nothing to truncate.
  t.is(read('openai')[2], messages[2])
  const rolling = new ct.RollingContext({ enabled: true, config: { format: 'anthropic', maxAge: 0 } })
  t.is(rolling.config.format, 'anthropic')
  t.deepEqual(rolling.prepare(messages), read('anthropic'))
  t.deepEqual(new ct.RollingContext(rolling.options).prepare(messages), read('anthropic'))
  const window = new ct.ContextWindow()
  window.append([{ role: 'user', content: 'hi' }])
  t.throws(() => window.truncate({ format: 'anthropic' }), {
    code: 'INVALID_OPTION',
    message: 'format: must be the window\'s format (openai), got "anthropic": give the format when creating the window',
  })
  t.throws(() => new ct.CacheAwareTrimmer({ contextWindow: 100, strategy: 'truncate', truncation: { format: 'openai' } }), {
    code: 'INVALID_OPTION',
    message: 'truncation.format: cannot be set here: set it on the options themselves',
  })
})

// 8. CursorClaw's summarizePrefix (TU.4)

test('summarizePrefix quotes every earlier message in one system message and keeps the last', (t) => {
  const messages: Message[] = [
    { role: 'user', content: 'What is X?' },
    { role: 'assistant', content: 'X is a thing.' },
    { role: 'user', content: 'last' },
  ]
  const before = snapshot(messages)
  const { summaryMessage, remainingMessages } = cursorclaw.summarizePrefix(messages, 200)
  t.deepEqual(summaryMessage, { role: 'system', content: 'Summary of earlier turns:\nUser: What is X?\n\nAgent: X is a thing.' })
  t.is(remainingMessages.length, 1)
  t.is(remainingMessages[0], messages[2])
  t.deepEqual(messages, before)
  // The root entry has the same function.
  t.deepEqual(ct.summarizePrefix(messages, 200), { summaryMessage, remainingMessages })
})

test('summarizePrefix of one message or none summarises nothing', (t) => {
  const none = cursorclaw.summarizePrefix([], 200)
  t.deepEqual(none, { summaryMessage: { role: 'system', content: 'Summary of earlier turns:\n(none)' }, remainingMessages: [] })
  const one: Message[] = [{ role: 'user', content: 'hi' }]
  const r = cursorclaw.summarizePrefix(one, 200)
  t.is(r.summaryMessage.content, 'Summary of earlier turns:\n(none)')
  t.is(r.remainingMessages[0], one[0])
  t.is(r.remainingMessages.length, 1)
})

test('summarizePrefix bounds the summary body at four characters a token', (t) => {
  const long = 'a'.repeat(2000)
  const messages: Message[] = [
    { role: 'user', content: long },
    { role: 'assistant', content: long },
    { role: 'user', content: 'last' },
  ]
  const header = 'Summary of earlier turns:\n'
  for (const max of [0, 1, 50, 999, 1003, 5000]) {
    const { content } = cursorclaw.summarizePrefix(messages, max).summaryMessage
    t.true(content.startsWith(header))
    const body = content.slice(header.length)
    // CursorClaw's body: the entries joined by a blank line, its first 4 × max characters.
    t.is(body, `User: ${long}\n\nAgent: ${long}`.slice(0, 4 * max), `max ${max}`)
    t.true(cursorclaw.estimateTokens(body) <= max)
  }
  // Characters are UTF-16 code units, and a character is never cut in half.
  const emoji: Message[] = [{ role: 'user', content: '😀😀' }, { role: 'user', content: 'last' }]
  t.is(cursorclaw.summarizePrefix(emoji, 2).summaryMessage.content, `${header}User: 😀`)
  t.is(cursorclaw.summarizePrefix(emoji, 3).summaryMessage.content, `${header}User: 😀😀`)
})

test('summarizePrefix labels system and tool messages and writes tool calls after their text', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'Be brief.' },
    call('c1', 'read_file', { path: '/src/a.ts' }),
    result('c1', 'export const a = 1'),
    { role: 'user', content: 'last' },
  ]
  t.is(
    ct.summarizePrefix(messages, 200).summaryMessage.content,
    'Summary of earlier turns:\nSystem: Be brief.\n\nAgent: calling read_file\nCalled read_file({"path":"/src/a.ts"})\n\nTool: export const a = 1',
  )
  // The summary and the last message fit a cap as CursorClaw's runtime uses them.
  const { summaryMessage, remainingMessages } = cursorclaw.summarizePrefix(messages, 10)
  const capped = cursorclaw.applyMaxContextTokens([summaryMessage, ...remainingMessages], 100)
  t.deepEqual(capped.map((m) => m.role), ['system', 'user'])
})

test('summarizePrefix refuses a bad bound or a bad message, by name', (t) => {
  const messages: Message[] = [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }]
  for (const bad of [-1, 1.5, Number.NaN]) {
    t.throws(() => cursorclaw.summarizePrefix(messages, bad), { code: 'INVALID_ARGUMENT', message: /^maxSummaryTokens: must be an integer of at least 0, got / })
  }
  t.throws(() => ct.summarizePrefix(messages, '200' as never), { code: 'INVALID_ARGUMENT', message: 'maxSummaryTokens: must be an integer of at least 0, got string' })
  t.throws(() => ct.summarizePrefix([{ role: 'user', content: 'a' }, { role: 'robot', content: 'b' }] as never, 10), { code: 'INVALID_MESSAGE', message: /messages\[1\]\.role/ })
})
