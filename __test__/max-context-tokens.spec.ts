import test from 'ava'

import { toAnthropic } from './convert.js'
import { ct, snapshot, transcript, transcripts } from './helpers.js'
import type { MaxContextTokensOptions, Message } from '../index.js'

type Role = Message['role']

/**
 * An independent implementation of the rules, in plain TypeScript: units (a call with its
 * results), protected units (last message, first system, minKeep), candidates sorted by
 * (rank of the unit's first role, position), dropped until the estimate fits.
 */
function reference(messages: Message[], cap: number, options: MaxContextTokensOptions = {}): Message[] {
  const n = messages.length
  const tokens = messages.map((m) => ct.estimateMessageTokens(m))
  let total = n ? tokens.reduce((a, b) => a + b, 0) + 3 : 0
  if (total <= cap) return messages.slice()
  const units: number[][] = []
  const unitOf: number[] = []
  const callUnit = new Map<string, number>()
  messages.forEach((m, i) => {
    if (m.tool_calls?.length) {
      unitOf[i] = units.length
      units.push([i])
      for (const c of m.tool_calls) callUnit.set(c.id, unitOf[i])
      return
    }
    const u = m.tool_call_id === undefined ? undefined : callUnit.get(m.tool_call_id)
    if (u === undefined) {
      unitOf[i] = units.length
      units.push([i])
    } else {
      units[u].push(i)
      unitOf[i] = u
    }
  })
  const kept = new Set([unitOf[n - 1]])
  if (options.keepFirstSystem) {
    const i = messages.findIndex((m) => m.role === 'system' || m.role === 'developer')
    if (i >= 0) kept.add(unitOf[i])
  }
  for (const [role, count] of Object.entries(options.minKeep ?? {})) {
    let left = count ?? 0
    for (let i = n - 1; i >= 0 && left > 0; i--) {
      if (messages[i].role === role) {
        kept.add(unitOf[i])
        left--
      }
    }
  }
  const order: Role[] = options.truncationPriority ?? options.dropOrder ?? []
  const rank = (u: number) => {
    const r = order.indexOf(messages[units[u][0]].role)
    return r < 0 ? order.length : r
  }
  const candidates = units.map((_, u) => u).filter((u) => !kept.has(u))
  candidates.sort((a, b) => rank(a) - rank(b) || units[a][0] - units[b][0])
  const dropped = new Set<number>()
  for (const u of candidates) {
    if (total <= cap) break
    for (const i of units[u]) {
      dropped.add(i)
      total -= tokens[i]
    }
  }
  return messages.filter((_, i) => !dropped.has(i))
}

/** system, then user and assistant turns of the same size, ending with a user message. */
const chat: Message[] = [
  { role: 'system', content: 'rules of the house' },
  { role: 'user', content: 'first question here' },
  { role: 'assistant', content: 'first answer given' },
  { role: 'user', content: 'second question here' },
  { role: 'assistant', content: 'second answer given' },
  { role: 'user', content: 'third question here' },
]

/** The cap that fits exactly the messages at `indices`. */
function capFor(messages: Message[], indices: number[]): number {
  return ct.estimateTokens(indices.map((i) => messages[i]))
}

/** Which input indices an output kept (outputs hold the caller's own objects). */
function keptIndices(messages: Message[], out: Message[]): number[] {
  return out.map((m) => messages.indexOf(m))
}

test('within the cap the same messages come back', (t) => {
  const out = ct.applyMaxContextTokens(chat, ct.estimateTokens(chat), { truncationPriority: ['user'] })
  t.is(out.length, chat.length)
  t.true(out.every((m, i) => m === chat[i]))
  t.deepEqual(ct.applyMaxContextTokens([], 0), [])
})

test('without a priority the oldest messages are dropped first (TU.2)', (t) => {
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [3, 4, 5]))), [3, 4, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [1, 2, 3, 4, 5]))), [1, 2, 3, 4, 5])
  // One token short of fitting four messages: a fifth goes.
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [2, 3, 4, 5]) - 1)), [3, 4, 5])
})

test('truncationPriority drops the roles listed first, first (TU.3 configuration reference)', (t) => {
  const options: MaxContextTokensOptions = { truncationPriority: ['assistant', 'user', 'system'] }
  // Both assistant messages go before the older user and system messages.
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [0, 1, 3, 5]), options)), [0, 1, 3, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [0, 3, 5]), options)), [0, 3, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [5]), options)), [5])
})

test('roles not listed are dropped last, oldest first; dropOrder means the same', (t) => {
  const cap = capFor(chat, [0, 2, 4, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, cap, { truncationPriority: ['user'] })), [0, 2, 4, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, cap, { dropOrder: ['user'] })), [0, 2, 4, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, cap, { dropOrder: ['user'], truncationPriority: ['user'] })), [0, 2, 4, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [2, 4, 5]), { dropOrder: ['user'] })), [2, 4, 5])
})

test('the last message is always kept, even when it alone exceeds the cap', (t) => {
  for (const options of [{}, { truncationPriority: ['user'] as Role[] }, { dropOrder: ['user', 'assistant', 'system'] as Role[] }]) {
    const out = ct.applyMaxContextTokens(chat, 0, options)
    t.is(out.length, 1)
    t.is(out[0], chat[5])
  }
  const big: Message[] = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'x'.repeat(5000) }]
  t.deepEqual(ct.applyMaxContextTokens(big, 10), [big[1]])
})

test('keepFirstSystem keeps the first system message', (t) => {
  const withTwo = [...chat.slice(0, 1), { role: 'system', content: 'more rules here' } as Message, ...chat.slice(1)]
  t.deepEqual(keptIndices(withTwo, ct.applyMaxContextTokens(withTwo, capFor(withTwo, [0, 6]), { keepFirstSystem: true })), [0, 6])
  t.deepEqual(keptIndices(withTwo, ct.applyMaxContextTokens(withTwo, 0, { keepFirstSystem: true })), [0, 6])
  t.deepEqual(keptIndices(withTwo, ct.applyMaxContextTokens(withTwo, 0, { keepFirstSystem: false })), [6])
})

test('minKeep keeps at least the last N messages of a role', (t) => {
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, capFor(chat, [3, 4, 5]), { minKeep: { user: 2 } })), [3, 4, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, 0, { minKeep: { user: 2 } })), [3, 5])
  t.deepEqual(keptIndices(chat, ct.applyMaxContextTokens(chat, 0, { minKeep: { user: 2, assistant: 1, system: 0 } })), [3, 4, 5])
})

test('a tool call and its results are dropped and kept together', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'rules' },
    { role: 'user', content: 'task' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { name: 'ls', arguments: '{}' } }, { id: 'b', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'a', content: 'A'.repeat(400) },
    { role: 'tool', tool_call_id: 'b', content: 'B' },
    { role: 'user', content: 'and now' },
  ]
  t.deepEqual(keptIndices(messages, ct.applyMaxContextTokens(messages, capFor(messages, [0, 1, 5]), { truncationPriority: ['assistant'] })), [0, 1, 5])
  // The last message's unit is kept whole: a result at the end keeps its call and siblings.
  t.deepEqual(keptIndices(messages, ct.applyMaxContextTokens(messages.slice(0, 5), 0)), [2, 3, 4])
})

test('on every transcript, at many caps and options, outputs match the reference, validate, and fit when they can', (t) => {
  const optionSets: MaxContextTokensOptions[] = [
    {},
    { truncationPriority: ['assistant', 'user', 'system'] },
    { dropOrder: ['tool', 'user'], keepFirstSystem: true, minKeep: { user: 1, assistant: 2 } },
    { truncationPriority: ['system'], minKeep: { tool: 3 }, encoding: 'cl100k_base' },
  ]
  let runs = 0
  for (const [name, messages] of transcripts()) {
    const total = ct.estimateTokens(messages)
    for (const options of optionSets) {
      for (const cap of [0, 1000, 4000, Math.floor(total / 3), Math.floor(total / 2), total - 1, total]) {
        const out = ct.applyMaxContextTokens(messages, cap, options)
        const label = `${name} ${JSON.stringify(options)} at ${cap}`
        const expected = options.encoding ? null : reference(messages, cap, options)
        if (expected) t.deepEqual(keptIndices(messages, out), keptIndices(messages, expected), label)
        t.deepEqual(ct.validateConversation(out), [], label)
        t.is(out[out.length - 1], messages[messages.length - 1], label)
        const positions = keptIndices(messages, out)
        t.true(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1])), label)
        if (cap >= total / 2) t.true(ct.estimateTokens(out, { encoding: options.encoding }) <= cap, label)
        runs++
      }
    }
  }
  t.is(runs, 7 * 4 * 7)
})

test('the input is never mutated and the same call gives the same result', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const before = snapshot(messages)
  const options: MaxContextTokensOptions = { truncationPriority: ['assistant', 'user'], keepFirstSystem: true, minKeep: { user: 1 } }
  const a = ct.applyMaxContextTokens(messages, 6000, options)
  const b = ct.applyMaxContextTokens(messages, 6000, options)
  t.deepEqual(messages, before)
  t.is(a.length, b.length)
  t.true(a.every((m, i) => m === b[i]))
  t.true(a.length < messages.length)
})

test('bad numbers and options are TypeErrors naming the argument or option', (t) => {
  for (const [value, got] of [[-1, '-1'], [Number.NaN, 'NaN'], [Number.POSITIVE_INFINITY, 'Infinity'], [1.5, '1.5'], ['100', 'string']] as const) {
    t.throws(() => ct.applyMaxContextTokens(chat, value as number), {
      instanceOf: TypeError,
      code: 'INVALID_ARGUMENT',
      message: `maxContextTokens: must be an integer of at least 0, got ${got}`,
    })
  }
  const cases: Array<[MaxContextTokensOptions, string]> = [
    [{ minKeep: { user: -1 } }, 'minKeep.user: must be an integer of at least 0, got -1'],
    [{ minKeep: { tool: Number.NaN } }, 'minKeep.tool: must be an integer of at least 0, got NaN'],
    [{ minKeep: { assistant: Number.POSITIVE_INFINITY } }, 'minKeep.assistant: must be an integer of at least 0, got Infinity'],
    [{ truncationPriority: ['user', 'robot' as Role] }, 'truncationPriority[1]: must be one of system, developer, user, assistant, tool, got "robot"'],
    [{ dropOrder: ['user', 'user'] }, 'dropOrder: lists "user" twice'],
    [{ truncationPriority: ['assistant', 'user'], dropOrder: ['user', 'assistant'] }, 'dropOrder: differs from truncationPriority: they mean the same (listed first, dropped first), give one'],
    [{ encoding: 'nope' as never }, 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "nope"'],
  ]
  for (const [options, message] of cases) {
    t.throws(() => ct.applyMaxContextTokens(chat, 10, options), { instanceOf: TypeError, code: 'INVALID_OPTION', message })
  }
  t.throws(() => ct.applyMaxContextTokens(chat, 10, { truncationPriority: 'user' as never }), {
    code: 'INVALID_OPTION',
    message: 'truncationPriority: must be an array, got string',
  })
  t.throws(() => ct.applyMaxContextTokens(chat, 10, 7 as never), { code: 'INVALID_OPTION', message: 'options: must be an object, got number' })
})

test('the async variant resolves to the same messages as the sync call', async (t) => {
  for (const [name, messages] of transcripts()) {
    const cap = Math.floor(ct.estimateTokens(messages) / 2)
    const sync = ct.applyMaxContextTokens(messages, cap, { truncationPriority: ['tool', 'assistant'] })
    const async = await ct.applyMaxContextTokensAsync(messages, cap, { truncationPriority: ['tool', 'assistant'] })
    t.is(async.length, sync.length, name)
    t.true(async.every((m, i) => m === sync[i]), name)
  }
  await t.throwsAsync(async () => ct.applyMaxContextTokensAsync([], -1), { code: 'INVALID_ARGUMENT' })
})

/**
 * The smallest request an Anthropic budget can be met with, bounded from above: the
 * instructions, the first user message to open with, and the last unit (the last message, with
 * its call when it is a tool result).
 */
function anthropicFloor(messages: ReturnType<typeof toAnthropic>): number {
  const instructions = messages.filter((m) => m.role === 'system')
  const opening = messages.find((m) => m.role === 'user' && typeof m.content === 'string')
  const last = messages[messages.length - 1]
  const isResult = last.role === 'user' && Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_result')
  const unit = isResult ? [messages[messages.length - 2], last] : [last]
  return ct.estimateTokens([...instructions, ...(opening ? [opening] : []), ...unit], { format: 'anthropic' })
}

test('Anthropic: trimByAge and applyMaxContextTokens meet every budget the opening user message fits in', (t) => {
  // openhands-ponyc-4593 at 90% of its size returned 14,404 tokens for 13,476 before.
  const ponyc = toAnthropic(transcript('openhands-ponyc-4593.json'))
  const size = ct.estimateTokens(ponyc, { format: 'anthropic' })
  const ninety = Math.floor(size * 0.9)
  t.true(ct.estimateTokens(ct.trimByAge(ponyc, ninety, { format: 'anthropic' }), { format: 'anthropic' }) <= ninety)
  for (const [name, messages] of transcripts()) {
    const anthropic = toAnthropic(messages)
    const total = ct.estimateTokens(anthropic, { format: 'anthropic' })
    const floor = anthropicFloor(anthropic)
    for (let k = 1; k <= 20; k++) {
      const budget = floor + Math.floor(((total - floor) * k) / 20)
      const runs = [
        ['trimByAge', ct.trimByAge(anthropic, budget, { format: 'anthropic' })],
        ['applyMaxContextTokens', ct.applyMaxContextTokens(anthropic, budget, { format: 'anthropic', keepFirstSystem: true })],
      ] as const
      for (const [strategy, out] of runs) {
        const tokens = ct.estimateTokens(out, { format: 'anthropic' })
        t.true(tokens <= budget, `${name} ${strategy} at ${budget}: ${tokens} tokens`)
        t.deepEqual(ct.validateConversation(out, { format: 'anthropic' }), [], `${name} ${strategy} at ${budget}`)
      }
    }
  }
})
