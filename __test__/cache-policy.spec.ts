import test from 'ava'
import type { ExecutionContext } from 'ava'

import { CacheAwareTrimmer, estimateTokens, truncateOldToolOutputs, validateConversation } from '../index.js'
import type { AnyMessage, CacheAwareTrimmerOptions, Message } from '../index.js'
import { toAiSdk, toAnthropic } from './convert.js'
import type { CodedError } from './helpers.js'
import { snapshot } from './helpers.js'
import { buildMessages as replayedSession } from '../benchmark/data.js'

/** The request of every turn: the messages before each assistant message (none empty). */
function requests<M extends AnyMessage>(session: M[]): M[][] {
  return session.flatMap((m, i) => (i > 0 && m.role === 'assistant' ? [session.slice(0, i)] : []))
}

/** 300 messages of the benchmark's replayed agent session (about 96,000 tokens). */
const session = replayedSession(300)
const fullTokens = estimateTokens(session)
/** A window a third of the session: trims are needed. */
const window = Math.floor(fullTokens / 3)

interface Call {
  sent: AnyMessage[]
  decision: string
  totalTokens: number
}

/** Calls `trimmer` before every assistant message of `messages`, as an agent loop does. */
function replay(trimmer: CacheAwareTrimmer, messages: AnyMessage[]): Call[] {
  return requests(messages).map((request) => {
    const r = trimmer.trim(request)
    return { sent: r.messages, decision: r.decision, totalTokens: r.totalTokens }
  })
}

/** Checks the window, the estimate and, between trims, that the previous call's messages come back first. */
function checkCalls(t: ExecutionContext, calls: Call[], label: string, format?: 'anthropic') {
  let unstable = 0
  calls.forEach((call, k) => {
    t.true(call.totalTokens <= window, `${label}: call ${k} sends ${call.totalTokens} tokens, over ${window}`)
    t.is(call.totalTokens, estimateTokens(call.sent), `${label}: call ${k}`)
    // Every call sends a valid conversation: no tool call without its result, nor the reverse
    // (and in Anthropic format, a user message first).
    t.deepEqual(validateConversation(call.sent, { format }), [], `${label}: call ${k}`)
    if (k === 0 || call.decision === 'trimmed' || call.decision === 'forced') return
    const before = calls[k - 1].sent
    if (JSON.stringify(call.sent.slice(0, before.length)) !== JSON.stringify(before)) unstable++
  })
  t.is(unstable, 0, `${label}: prefixes changed between trims`)
}

const STRATEGIES: CacheAwareTrimmerOptions['strategy'][] = ['priority', 'placeholders', 'truncate', 'roles', 'age']

for (const strategy of STRATEGIES) {
  test(`with ${strategy}, the prefix is byte-stable between trims and the window is never exceeded`, (t) => {
    const trimmer = new CacheAwareTrimmer({ contextWindow: window, strategy })
    const calls = replay(trimmer, session)
    checkCalls(t, calls, strategy ?? '')
    const trims = calls.filter((c) => c.decision === 'trimmed' || c.decision === 'forced').length
    t.true(trims >= 2, `${strategy}: ${trims} trims`)
    t.true(trims * 8 < calls.length, `${strategy}: ${trims} trims in ${calls.length} calls`)
  })
}

test('in Anthropic format, every call starts with a user message and the prefix is byte-stable between trims', (t) => {
  const anthropic = toAnthropic(session)
  const trimmer = new CacheAwareTrimmer({ contextWindow: window, strategy: 'age' })
  const calls = replay(trimmer, anthropic)
  checkCalls(t, calls, 'anthropic age', 'anthropic')
  t.true(calls.filter((c) => c.decision === 'trimmed').length >= 2)
})

test('between trims, kept messages are the caller own objects and the last call decides the same', (t) => {
  const trimmer = new CacheAwareTrimmer({ contextWindow: window })
  const history = requests(session)[120]
  const first = trimmer.trim(history)
  const again = trimmer.trim(history)
  t.is(again.decision, 'kept')
  t.is(again.messages.length, first.messages.length)
  again.messages.forEach((m, i) => {
    if (m === first.messages[i]) return
    // Only placeholders are copies, and equal ones.
    t.deepEqual(m, first.messages[i])
    t.false(history.includes(m))
  })
  t.true(again.messages.some((m) => history.includes(m)))
})

test('a trim goes down to the low-water mark and reports what it freed', (t) => {
  const trimmer = new CacheAwareTrimmer({ contextWindow: window, strategy: 'age' })
  const { highWaterTokens, lowWaterTokens, clearAtLeast } = trimmer.options
  for (const request of requests(session)) {
    const r = trimmer.trim(request)
    if (r.decision === 'kept') {
      t.true(r.totalTokens <= highWaterTokens)
      t.is(r.freedTokens, 0)
      continue
    }
    t.is(r.decision, 'trimmed')
    t.true(r.estimateTokens > highWaterTokens)
    t.true(r.totalTokens <= lowWaterTokens)
    t.is(r.freedTokens, r.estimateTokens - r.totalTokens)
    t.true(r.freedTokens >= clearAtLeast)
    t.is(r.inputTokens, estimateTokens(request))
    t.false(r.overWindow)
    return
  }
  t.fail('no trim')
})

test('a message truncated once keeps exactly the same placeholder text on every later call', (t) => {
  for (const strategy of ['placeholders', 'truncate'] as const) {
    const trimmer = new CacheAwareTrimmer({ contextWindow: window, strategy })
    const texts = new Map<string, string>()
    let placeholders = 0
    let again = 0
    for (const request of requests(session)) {
      for (const m of trimmer.trim(request).messages) {
        if (!('_truncated' in m) && !('_truncatedAt' in m)) continue
        // A transcript may reuse a call id (sweagent-marshmallow does): the original size tells
        // its results apart.
        const id = `${String(m.tool_call_id)} ${String(m._originalTokens ?? m._originalLength)}`
        const text = JSON.stringify(m)
        const first = texts.get(id)
        if (first === undefined) {
          texts.set(id, text)
          placeholders++
        } else {
          t.is(text, first, `${strategy}: ${id}`)
          again++
        }
      }
    }
    t.log(`${strategy}: ${placeholders} placeholders, sent again ${again} times`)
    // Several placeholders, each sent again on many later calls.
    t.true(placeholders > 3 && again > 10 * placeholders, `${strategy}: ${placeholders} placeholders, sent again ${again} times`)
  }
})

test('a late result of a call an earlier trim dropped is sent, with its call', (t) => {
  // The agent started a build, the user spoke, work went on; the build's result comes at the end,
  // after trims dropped the call. The request must still end with it, paired.
  const early = [
    { role: 'user' as const, content: 'Fix the failing test. '.repeat(40) },
    { role: 'assistant' as const, content: null, tool_calls: [{ id: 'build', type: 'function' as const, function: { name: 'execute_bash', arguments: '{"command":"make"}' } }] },
    { role: 'user' as const, content: 'While that builds, look at the parser.' },
  ]
  const work = session.slice(2, 200).filter((m) => m.role !== 'system')
  const history: AnyMessage[] = [session[0], ...early, ...work]
  const trimmer = new CacheAwareTrimmer({ contextWindow: Math.floor(estimateTokens(history) / 3) })
  const calls = replay(trimmer, [...history, { role: 'assistant', content: 'waiting' }])
  t.true(calls.some((c) => c.decision === 'trimmed'))
  const last = calls[calls.length - 1].sent
  t.false(last.includes(early[1]), 'the build call was dropped by a trim')
  const late = { role: 'tool' as const, tool_call_id: 'build', content: 'make: *** [test] Error 2' }
  const r = trimmer.trim([...history, late])
  t.is(r.messages[r.messages.length - 1], late)
  t.true(r.messages.includes(early[1]), 'its call comes back')
  // Paired: the only issue is the input's own (the result does not follow its call directly).
  const kinds = (messages: AnyMessage[]) => validateConversation(messages).map((i) => i.kind)
  t.deepEqual(kinds(r.messages), ['misplaced-result'])
  t.deepEqual(kinds([...history, late]), ['misplaced-result'])
})

test('a rewritten history resets the trimmer', (t) => {
  const trimmer = new CacheAwareTrimmer({ contextWindow: window })
  const all = requests(session)
  const history = all[120]
  t.false(trimmer.trim(all[119]).reset)
  t.false(trimmer.trim(history).reset)
  t.is(trimmer.remembered, history.length)
  // An old message edited: the decisions are forgotten.
  const edited = history.map((m, i) => (i === 5 ? { ...m, content: 'rewritten' } : m))
  t.true(trimmer.trim(edited).reset)
  // A copy with the same content is the same message.
  t.false(trimmer.trim(edited.map((m) => ({ ...m }))).reset)
  // A shorter history resets too.
  const shorter = trimmer.trim(edited.slice(0, 10))
  t.true(shorter.reset)
  t.is(shorter.decision, 'kept')
  trimmer.reset()
  t.is(trimmer.remembered, 0)
  t.false(trimmer.trim(history).reset)
})

test('the input is never mutated', (t) => {
  const history = requests(session)[140]
  const before = snapshot(history)
  const trimmer = new CacheAwareTrimmer({ contextWindow: 20_000, strategy: 'placeholders' })
  trimmer.trim(history)
  trimmer.trim(history)
  t.deepEqual(history, before)
})

test('the options getter fills in the documented defaults', (t) => {
  t.deepEqual(new CacheAwareTrimmer({ contextWindow: 128_000 }).options, {
    contextWindow: 128_000,
    highWater: 0.85,
    lowWater: 0.6,
    clearAtLeast: 6_400,
    highWaterTokens: 108_800,
    lowWaterTokens: 76_800,
    strategy: 'priority',
    keepTask: true,
    preserveRecentTurns: 2,
    agentInstructionMarkers: [],
    encoding: 'o200k_base',
    framing: true,
    format: 'auto',
  })
  const custom = new CacheAwareTrimmer({ contextWindow: 1000, highWater: 0.9, lowWater: 0.9, clearAtLeast: 0, strategy: 'roles', roles: { dropOrder: ['tool'] } })
  t.like(custom.options, { highWaterTokens: 900, lowWaterTokens: 900, clearAtLeast: 0, strategy: 'roles' })
})

test('a trim that would free less than clearAtLeast is deferred, unless the window would be exceeded', (t) => {
  const decisions = (clearAtLeast: number) => {
    // Low water next to high water: a trim frees little more than the growth since the mark.
    const trimmer = new CacheAwareTrimmer({ contextWindow: window, highWater: 0.8, lowWater: 0.79, clearAtLeast, strategy: 'age' })
    const calls = replay(trimmer, session)
    checkCalls(t, calls, `clearAtLeast ${clearAtLeast}`)
    return [...new Set(calls.map((c) => c.decision))].sort()
  }
  // A tenth of the window: deferred until the growth makes it worth it.
  t.deepEqual(decisions(Math.floor(window / 10)), ['deferred', 'kept', 'trimmed'])
  // Never worth it: deferred until the window would be exceeded, then forced.
  t.deepEqual(decisions(window), ['deferred', 'forced', 'kept'])
  // Always worth it: never deferred.
  t.deepEqual(decisions(0), ['kept', 'trimmed'])
})

test('invalid options are INVALID_OPTION type errors naming the option', (t) => {
  const cases: Array<[unknown, string]> = [
    [null, 'contextWindow: is required'],
    ['128k', 'options: must be an object, got string'],
    [{}, 'contextWindow: is required'],
    [{ contextWindow: 0 }, 'contextWindow: must be an integer of at least 1, got 0'],
    [{ contextWindow: 1.5 }, 'contextWindow: must be an integer of at least 1, got 1.5'],
    [{ contextWindow: 100, highWater: 1.2 }, 'highWater: must be a fraction of the window in (0, 1], got 1.2'],
    [{ contextWindow: 100, highWater: Number.NaN }, 'highWater: must be a fraction of the window in (0, 1], got NaN'],
    [{ contextWindow: 100, lowWater: 0.9 }, 'lowWater: must be a fraction of the window in [0, highWater = 0.85], got 0.9'],
    [{ contextWindow: 100, clearAtLeast: -1 }, 'clearAtLeast: must be an integer of at least 0, got -1'],
    [{ contextWindow: 100, strategy: 'lru' }, 'strategy: must be one of priority, placeholders, truncate, roles, age, got "lru"'],
    [{ contextWindow: 100, truncation: {} }, 'truncation: applies to strategy truncate only, the strategy is "priority"'],
    [{ contextWindow: 100, strategy: 'age', preserveRecentTurns: 3 }, 'preserveRecentTurns: applies to strategy priority or placeholders only, the strategy is "age"'],
    [{ contextWindow: 100, strategy: 'truncate', truncation: { encoding: 'cl100k_base' } }, 'truncation.encoding: cannot be set here: set it on the options themselves'],
    [{ contextWindow: 100, strategy: 'truncate', truncation: { maxAge: -1 } }, 'maxAge: must be an integer of at least 0, got -1'],
    [{ contextWindow: 100, strategy: 'roles', roles: { format: 'openai' } }, 'roles.format: cannot be set here: set it on the options themselves'],
    [{ contextWindow: 100, strategy: 'roles', roles: { dropOrder: ['robot'] } }, 'dropOrder[0]: must be one of system, developer, user, assistant, tool, got "robot"'],
    [{ contextWindow: 100, encoding: 'gpt2' }, 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "gpt2"'],
  ]
  for (const [options, message] of cases) {
    const err = t.throws(() => new CacheAwareTrimmer(options as CacheAwareTrimmerOptions), { instanceOf: TypeError }) as CodedError
    t.is(err.message, message)
    t.is(err.code, 'INVALID_OPTION')
  }
  const trimmer = new CacheAwareTrimmer({ contextWindow: 100 })
  const err = t.throws(() => trimmer.trim([{ role: 'robot' } as unknown as Message])) as CodedError
  t.is(err.code, 'INVALID_MESSAGE')
})

// Stable placeholders in the stateless truncateOldToolOutputs.

/** A task and `steps` steps, each reading its own file and getting ~240 tokens back. */
function steps(n: number): Message[] {
  const messages: Message[] = [{ role: 'user', content: 'do the task' }]
  for (let k = 1; k <= n; k++) {
    const body = Array.from({ length: 30 }, (_, i) => `out${k}-${String(i).padStart(4, '0')} payload line\n`).join('')
    messages.push(
      { role: 'assistant', content: '', tool_calls: [{ id: String(k), type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `/src/f${k}.rs` }) } }] },
      { role: 'tool', tool_call_id: String(k), content: body },
    )
  }
  return messages
}

test('with stablePlaceholders, repeated stateless truncation gives identical text', (t) => {
  const history = steps(14)
  // Results of step 1 are first truncated at step 7 (age 6 > maxAge 5).
  const at = (n: number, stablePlaceholders?: boolean) => truncateOldToolOutputs(history.slice(0, 1 + 2 * n), { stablePlaceholders })
  const first = at(7, true)[2]
  t.is(first.content, '[content truncated - 6 steps ago]')
  t.is(first._truncatedAt, 6)
  for (const n of [8, 10, 14]) {
    const stable = at(n, true)
    t.is(JSON.stringify(stable[2]), JSON.stringify(first), `at step ${n}`)
    // The seed's default writes the current age.
    t.is(at(n)[2].content, `[content truncated - ${n - 1} steps ago]`)
    t.is(at(n, false)[2]._truncatedAt, n - 1)
  }
  // Every placeholder of a later call is what it was when first made.
  const later = at(14, true)
  const firstSeen = new Map<unknown, string>()
  for (let n = 7; n <= 14; n++) {
    for (const m of at(n, true)) if ('_truncatedAt' in m && !firstSeen.has(m.tool_call_id)) firstSeen.set(m.tool_call_id, JSON.stringify(m))
  }
  for (const m of later) if ('_truncatedAt' in m) t.is(JSON.stringify(m), firstSeen.get(m.tool_call_id) ?? 'not seen before')
  t.is(truncateOldToolOutputs(history, { stablePlaceholders: true, maxAge: 2, placeholder: '[{age}|{N}]' })[2].content, '[3|3]')
})

/**
 * Issue 42's session: a system prompt and a task, then 30 steps of file reads of 300 to 1,500
 * tokens, a third of them two calls in parallel; deterministic for `seed`.
 */
function parallelSession(seed: number): Message[] {
  let state = seed
  const next = (n: number) => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0
    return state % n
  }
  const line = (k: number) => `export const value${k} = compute(${next(10_000)}, 'parser step ${k}')`
  const messages: Message[] = [
    { role: 'system', content: 'You are a coding agent. Read files before you edit them.' },
    { role: 'user', content: 'TASK: fix the parser bug in src/parse.ts and add a test.' },
  ]
  let id = 0
  for (let step = 0; step < 30; step++) {
    const ids = Array.from({ length: next(3) === 0 ? 2 : 1 }, () => `call_${++id}`)
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: ids.map((callId) => ({ id: callId, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/${callId}.ts` }) } })),
    })
    for (const callId of ids) {
      const lines = 20 + next(80)
      messages.push({ role: 'tool', tool_call_id: callId, content: Array.from({ length: lines }, (_, k) => line(k)).join('\n') })
    }
  }
  return messages
}

/** The requests of an agent loop over `session`: the history each time a step's results are in. */
function stepRequests<M extends AnyMessage>(session: M[], isResult: (m: M) => boolean): M[][] {
  return session.flatMap((m, i) => (isResult(m) && !(session[i + 1] && isResult(session[i + 1])) ? [session.slice(0, i + 1)] : []))
}

const FORMATS = [
  { name: 'openai', convert: (m: Message[]): AnyMessage[] => m, isResult: (m: AnyMessage) => m.role === 'tool' },
  {
    name: 'anthropic',
    convert: (m: Message[]): AnyMessage[] => toAnthropic(m),
    isResult: (m: AnyMessage) => m.role === 'user' && Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result'),
  },
  { name: 'ai-sdk', convert: (m: Message[]): AnyMessage[] => toAiSdk(m), isResult: (m: AnyMessage) => m.role === 'tool' },
] as const

const TASK = 'TASK: fix the parser bug'
const shows = (m: AnyMessage, text: string) => JSON.stringify(m.content).includes(text)

test('with parallel calls, every strategy sends the system prompt and the task whole on every call, and a cut once made stays as it was', (t) => {
  for (const format of FORMATS) {
    for (const strategy of STRATEGIES) {
      for (const contextWindow of [3_000, 6_000]) {
        for (const seed of [1, 2, 3]) {
          const label = `${format.name}, ${strategy}, window ${contextWindow}, seed ${seed}`
          const trimmer = new CacheAwareTrimmer({ contextWindow, strategy })
          const cuts = new Map<string, string>()
          let replans = 0
          for (const request of stepRequests(format.convert(parallelSession(seed)), format.isResult)) {
            const r = trimmer.trim(request)
            if (r.decision === 'trimmed' || r.decision === 'forced') replans++
            if (r.totalTokens > contextWindow) t.fail(`${label}: ${r.totalTokens} tokens at ${request.length} messages`)
            // Both whole (the caller's own objects): the last step's results can always be cut beside them.
            if (!r.messages.includes(request[0])) t.fail(`${label}: no whole system prompt at ${request.length} messages`)
            if (!r.messages.includes(request[1]) || !shows(request[1], TASK)) t.fail(`${label}: no whole task at ${request.length} messages`)
            // A shortened message (a copy) keeps the text it was first sent with.
            r.messages.forEach((m, k) => {
              if (request.includes(m)) return
              const key = `${m.role}:${JSON.stringify(m.content).slice(0, 80)}`
              const text = JSON.stringify(m.content)
              const before = cuts.get(key)
              if (before !== undefined && before !== text) t.fail(`${label}: message ${k} cut again at ${request.length} messages`)
              cuts.set(key, text)
            })
          }
          t.true(replans > 2, `${label}: ${replans} re-plans`)
        }
      }
    }
  }
})

test('keepTask: false lets the oldest-first strategies drop the task; roles never drops the system prompt', (t) => {
  const requests = stepRequests(parallelSession(1), (m) => m.role === 'tool')
  const taskSent = (keepTask: boolean) => {
    const trimmer = new CacheAwareTrimmer({ contextWindow: 3_000, strategy: 'age', keepTask })
    return requests.filter((r) => trimmer.trim(r).messages.some((m) => m.role === 'user')).length
  }
  t.is(taskSent(true), requests.length)
  t.true(taskSent(false) < requests.length / 2)
  t.is(new CacheAwareTrimmer({ contextWindow: 3_000, strategy: 'age', keepTask: false }).options.keepTask, false)
  const error = t.throws(() => new CacheAwareTrimmer({ contextWindow: 3_000, strategy: 'roles', roles: { keepFirstSystem: false } })) as CodedError
  t.is(error.code, 'INVALID_OPTION')
  t.regex(error.message, /roles\.keepFirstSystem: cannot be false here: a CacheAwareTrimmer never drops a system message/)
  t.true(new CacheAwareTrimmer({ contextWindow: 3_000, strategy: 'roles' }).options.roles?.keepFirstSystem === true)
})

test('a trim says which messages it drops and which it shortens, by their index in the messages given', (t) => {
  const trimmer = new CacheAwareTrimmer({ contextWindow: window, strategy: 'placeholders' })
  let checked = 0
  for (const request of requests(session)) {
    const r = trimmer.trim(request)
    const sent = new Set(r.messages)
    const dropped = request.flatMap((m, i) => (sent.has(m) ? [] : [i])).filter((i) => !r.shortened.includes(i))
    t.deepEqual([...r.dropped], dropped)
    // A shortened message is sent as a copy in its place: as many copies as shortened ones.
    t.is(r.messages.filter((m) => !request.includes(m)).length, r.shortened.length)
    t.is(r.messages.length, request.length - r.dropped.length)
    if (r.dropped.length > 0 && r.shortened.length > 0) checked++
  }
  t.true(checked > 2, `${checked} calls both dropped and shortened`)
})
