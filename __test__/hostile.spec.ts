// Hostile input: whatever a caller passes to any public function, the addon answers with a
// clear coded error or a documented lenient result (docs/robustness.md), never crashes, and
// never changes what it was given.
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { classes, messageEntryPoints, otherEntryPoints, outcome, scratch, type EntryPoint, type Outcome } from './entry-points.js'
import { ct, snapshot, transcript, transcriptsDir, type CodedError } from './helpers.js'
import type { Message } from '../index.js'

/** Only the priority strategies (and a window's trim, after append) take, and need,
 * `targetTokens` in their options: any other entry point refuses it as an option it does not
 * have. */
function takesTarget(name: string): boolean {
  return /^(trim(ByPriority|WithPlaceholders)|ContextWindow#append)/.test(name)
}

test.after.always(() => rmSync(scratch, { recursive: true, force: true }))

// Serial: the large inputs block the thread for seconds each, and ava's timeout counts from the
// last finished test.
const CODES = new Set(['INVALID_MESSAGES', 'INVALID_MESSAGE', 'INVALID_OPTION', 'INVALID_ARGUMENT'])

function deep(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {}
  let cur = root
  for (let i = 0; i < levels; i++) {
    const next: Record<string, unknown> = {}
    cur.a = next
    cur = next
  }
  return root
}

function deepArray(levels: number): unknown[] {
  const root: unknown[] = []
  let cur = root
  for (let i = 0; i < levels; i++) {
    const next: unknown[] = []
    cur.push(next)
    cur = next
  }
  return root
}

const circular: Record<string, unknown> = { x: 1 }
circular.self = circular
const selfContaining: unknown[] = [{ type: 'text', text: 'x' }]
selfContaining.push(selfContaining)

function throwingGetter(key: string, base: Record<string, unknown> = { role: 'user', content: 'x' }): Record<string, unknown> {
  const o = { ...base }
  delete o[key]
  Object.defineProperty(o, key, { enumerable: true, get: () => { throw new Error('getter exploded') } })
  return o
}

const revoked = Proxy.revocable({ role: 'user', content: 'x' }, {})
revoked.revoke()
const trapping = new Proxy({ role: 'user', content: 'x' }, { get: () => { throw new Error('trap exploded') } })
const arrayWithThrowingIndex: unknown[] = [{ role: 'user', content: 'x' }]
Object.defineProperty(arrayWithThrowingIndex, 0, { get: () => { throw new Error('index exploded') } })
const trappingArray = new Proxy([{ role: 'user', content: 'x' }], { get: (t, k) => { if (k === '0') throw new Error('array trap exploded'); return Reflect.get(t, k) } })

const call = (id: string, args: unknown = '{"path":"a.ts"}') => ({ id, type: 'function', function: { name: 'read_file', arguments: args as string } })

/**
 * Malformed input that must be rejected: [what, input, the exact error message]. Every entry
 * point reads messages with the same reader in auto-detected format, so the messages agree.
 */
const rejected: Array<[string, unknown, string]> = [
  ['a number', 42, 'messages: must be an array, got number'],
  ['a string', 'hello', 'messages: must be an array, got string'],
  ['null', null, 'messages: must be an array, got null'],
  ['undefined', undefined, 'messages: must be an array, got undefined'],
  ['a single message', { role: 'user', content: 'x' }, 'messages: must be an array, got object (a single message: wrap it in an array, [message])'],
  ['an object', { content: 'x' }, 'messages: must be an array, got object'],
  ['a proxy whose has trap throws', new Proxy({}, { has: () => { throw new Error('has exploded') } }), 'messages: must be an array, got object'],
  ['a typed array', new Uint8Array(2), 'messages: must be an array, got object'],
  ['null as a message', [null], 'messages[0]: must be an object, got null'],
  ['undefined as a message', [undefined], 'messages[0]: must be an object, got undefined'],
  ['a hole in a sparse array', [{ role: 'user', content: 'x' }, , { role: 'user', content: 'y' }], 'messages[1]: must be an object, got undefined'],
  ['a number as a message', [7], 'messages[0]: must be an object, got number'],
  ['a string as a message', ['hi'], 'messages[0]: must be an object, got string'],
  ['an array as a message', [[{ role: 'user' }]], 'messages[0]: must be an object, got array'],
  ['a missing role', [{ content: 'x' }], 'messages[0].role: is required'],
  ['an unknown role', [{ role: 'wizard', content: 'x' }], 'messages[0].role: must be one of system, developer, user, assistant, tool, got "wizard"'],
  ['a numeric role', [{ role: 5, content: 'x' }], 'messages[0].role: must be a string, got number'],
  ['numeric content', [{ role: 'user', content: 5 }], 'messages[0].content: must be a string, an array of content parts or null, got number'],
  ['object content', [{ role: 'user', content: { text: 'x' } }], 'messages[0].content: must be a string, an array of content parts or null, got object'],
  ['nested array content', [{ role: 'user', content: [[{ type: 'text', text: 'x' }]] }], 'messages[0].content[0]: must be a content part object, got array'],
  ['content arrays 10,000 levels deep', [{ role: 'user', content: deepArray(10_000) }], `messages[0].content${'[0]'.repeat(64)}: is nested more than 64 levels deep`],
  ['a content array containing itself', [{ role: 'user', content: selfContaining }], `messages[0].content${'[1]'.repeat(62)}[0].type: is nested more than 64 levels deep`],
  ['tool_calls not an array', [{ role: 'assistant', tool_calls: { id: '1' } }], 'messages[0].tool_calls: must be an array, got object'],
  ['a tool call without id', [{ role: 'assistant', tool_calls: [{ function: { name: 'x', arguments: '{}' } }] }], 'messages[0].tool_calls[0].id: is required'],
  ['a tool call with an empty id', [{ role: 'assistant', tool_calls: [{ id: '', function: { name: 'x' } }] }], 'messages[0].tool_calls[0].id: must not be empty'],
  ['a tool call without function', [{ role: 'assistant', tool_calls: [{ id: '1' }] }], 'messages[0].tool_calls[0].function: is required'],
  ['a tool call without name', [{ role: 'assistant', tool_calls: [{ id: '1', function: { arguments: '{}' } }] }], 'messages[0].tool_calls[0].function.name: is required'],
  ['numeric arguments', [{ role: 'assistant', tool_calls: [call('1', 1)] }], 'messages[0].tool_calls[0].function.arguments: must be a JSON string or an object, got number'],
  ['circular arguments', [{ role: 'assistant', tool_calls: [call('1', circular)] }], /^messages\[0\]\.tool_calls\[0\]\.function\.arguments: could not be serialized to JSON: (TypeError: )?Converting circular structure to JSON/.source],
  // Deep enough to overflow JSON.stringify's stack in a worker thread too (ava runs the suite
  // in workers, whose stack is larger than the main thread's: 10,000 levels serialise there).
  ['arguments 100,000 levels deep', [{ role: 'assistant', tool_calls: [call('1', deep(100_000))] }], /^messages\[0\]\.tool_calls\[0\]\.function\.arguments: could not be serialized to JSON: (RangeError: )?Maximum call stack size exceeded$/.source],
  ['a function as content', [{ role: 'user', content: () => 'x' }], 'messages[0].content: must not be a function'],
  ['a symbol as role', [{ role: Symbol('user') }], 'messages[0].role: must not be a symbol'],
  ['a bigint as content', [{ role: 'user', content: 10n }], 'messages[0].content: must not be a bigint'],
  ['a getter that throws', [throwingGetter('content')], 'messages[0].content: could not be read: getter exploded'],
  ['a role getter that throws', [throwingGetter('role')], 'messages[0].role: could not be read: getter exploded'],
  ['a getter that throws inside a tool call', [{ role: 'assistant', tool_calls: [throwingGetter('id', call('1'))] }], 'messages[0].tool_calls[0]: could not be read: getter exploded'],
  ['a proxy whose get trap throws', [trapping], 'messages[0].role: could not be read: trap exploded'],
  ['a revoked proxy', [revoked.proxy], /^messages\[0\]\.role: could not be read: Cannot perform 'get' on a proxy that has been revoked$/.source],
  ['an array whose index getter throws', arrayWithThrowingIndex, 'messages[0]: could not be read: index exploded'],
  // napi does not see a Proxy of an array as an array.
  ['a proxy of an array', trappingArray, 'messages: must be an array, got object'],
  ['two formats at once', [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] }, { role: 'tool', tool_call_id: 'a', content: 'r' }], 'format: cannot detect the format: messages[1] looks like openai (tool_call_id) but messages[0] looks like anthropic (a tool_use/tool_result/thinking block); pass format explicitly'],
]

function expectMessage(t: import('ava').ExecutionContext, err: CodedError | undefined, expected: string, label: string) {
  if (expected.startsWith('^')) t.regex(err?.message ?? '', new RegExp(expected), label)
  else t.is(err?.message, expected, label)
}

/** A deep copy when the value can be cloned, `undefined` otherwise (proxies, functions). */
function tryClone(value: unknown): { value: unknown } | undefined {
  try {
    return { value: snapshot(value) }
  } catch {
    return undefined
  }
}

function coded(t: import('ava').ExecutionContext, result: Outcome, label: string): CodedError | undefined {
  if (result.ok) {
    t.fail(`${label}: returned ${JSON.stringify(result.value)?.slice(0, 100)} instead of throwing`)
    return undefined
  }
  const err = result.error as CodedError
  t.true(err instanceof TypeError, `${label}: ${(err as Error)?.constructor?.name}: ${err?.message}`)
  t.true(CODES.has(err?.code ?? ''), `${label}: code ${err?.code}`)
  return err
}

/** Every returned message is a caller's object, in input order, or a plain-object copy. */
function checkReturned(t: import('ava').ExecutionContext, entry: EntryPoint, input: unknown[], value: unknown, label: string) {
  if (!entry.returned) return
  let last = -1
  for (const m of entry.returned(value)) {
    const at = input.indexOf(m)
    if (at >= 0) {
      t.true(at > last, `${label}: order`)
      last = at
    } else {
      t.is(Object.getPrototypeOf(m), Object.prototype, `${label}: a copy is a plain object`)
    }
  }
}

test.serial('index.d.ts is covered: every exported function is in the entry-point tables', (t) => {
  const dts = readFileSync(join(transcriptsDir, '..', '..', 'index.d.ts'), 'utf8')
  const exported = [...dts.matchAll(/^export declare function (\w+)/gm)].map((m) => m[1]).sort()
  const covered = [...messageEntryPoints.map((e) => e.name), ...otherEntryPoints.map(([n]) => n)].filter((n) => !/[#.]/.test(n)).sort()
  t.deepEqual(covered, exported)
  t.deepEqual([...dts.matchAll(/^export declare class (\w+)/gm)].map((m) => m[1]).sort(), classes)
})

for (const entry of messageEntryPoints) {
  test.serial(`${entry.name} rejects malformed messages with a coded TypeError naming the field, and changes nothing`, async (t) => {
    for (const [what, input, message] of rejected) {
      const before = tryClone(input)
      const err = coded(t, await outcome(() => entry.call(input)), `${entry.name}: ${what}`)
      expectMessage(t, err, message, `${entry.name}: ${what}`)
      if (before) t.deepEqual(input, before.value, `${entry.name}: ${what}: input changed`)
    }
  })

  test.serial(`${entry.name} reads hostile but well-formed messages leniently and returns them untouched`, async (t) => {
    const lenient: Array<[string, unknown[]]> = [
      ['no message', []],
      ['lone surrogates', [{ role: 'user', content: '\ud800 lone high surrogate and \udfff lone low' }]],
      ['emoji and CJK', [{ role: 'user', content: '東京 🚀 emoji 👩‍👩‍👧 and CJK 汉字' }, { role: 'assistant', content: [{ type: 'text', text: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓' }] }]],
      ['a proxy', [new Proxy({ role: 'user', content: 'proxied' }, {})]],
      ['a frozen message', [Object.freeze({ role: 'user', content: 'frozen', extra: Object.freeze({ a: 1 }) })]],
      ['a frozen array', Object.freeze([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }]) as unknown[]],
      ['invalid JSON arguments', [{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: [call('1', '{"path": ')] }, { role: 'tool', tool_call_id: '1', content: 'r' }]],
      ['JSON arguments 10,000 levels deep as a string', [{ role: 'assistant', content: null, tool_calls: [call('1', '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000))] }, { role: 'tool', tool_call_id: '1', content: 'r' }]],
      ['a result for an unknown id', [{ role: 'user', content: 'u' }, { role: 'tool', tool_call_id: 'unknown-id', content: 'a result for a call that is not there' }]],
      ['duplicate tool_call ids', [{ role: 'assistant', content: null, tool_calls: [call('dup'), call('dup', 'not json')] }, { role: 'tool', tool_call_id: 'dup', content: 'one' }]],
      ['an id reused by a later call', [{ role: 'assistant', content: null, tool_calls: [call('a')] }, { role: 'tool', tool_call_id: 'a', content: '1' }, { role: 'assistant', content: null, tool_calls: [call('a')] }, { role: 'tool', tool_call_id: 'a', content: '2' }]],
      ['unknown fields, deep and circular', [{ role: 'user', content: 'x', meta: deep(10_000), loop: circular, fn: () => 1, sym: Symbol('s'), big: 1n }]],
      ['a circular unknown field in a part', [{ role: 'user', content: [{ type: 'text', text: 'x', meta: circular }] }]],
      ['functions and symbols inside a part', [{ role: 'user', content: [{ type: 'text', text: 'x', name: () => 1, id: Symbol('s') }] }]],
      ['an own __proto__ key', [JSON.parse('{"role":"user","content":"x","__proto__":{"polluted":true}}')]],
      ['__proto__ and constructor in arguments', [JSON.parse('{"role":"assistant","content":null,"tool_calls":[{"id":"1","function":{"name":"x","arguments":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}}}]}'), { role: 'tool', tool_call_id: '1', content: 'ok' }]],
      ['a message whose getter grows the array', (() => { const a: unknown[] = [{ role: 'user', content: 'a' }]; a.push({ role: 'user', get content() { a.push({ role: 'user', content: 'late' }); return 'b' } }); return a })()],
      ['null contents where allowed', [{ role: 'user', content: 'u' }, { role: 'assistant', content: null, tool_calls: [call('a')] }, { role: 'tool', tool_call_id: 'a', content: null }]],
    ]
    // Inputs a repair leaves nothing of: it says so (docs/validation.md) instead of returning [].
    const emptied = new Set(entry.name === 'repairConversation' ? ['no message', 'duplicate tool_call ids'] : [])
    for (const [what, input] of lenient) {
      // A getter that changes the input changes it itself: only that it is read matters.
      const before = what.includes('getter') ? undefined : tryClone(input)
      const result = await outcome(() => entry.call(input))
      if (emptied.has(what)) {
        t.false(result.ok, `${entry.name}: ${what}`)
        t.is((result as { error: CodedError }).error?.code, 'EMPTY_CONVERSATION', `${entry.name}: ${what}`)
        if (before) t.deepEqual(input, before.value, `${entry.name}: ${what}: input changed`)
        continue
      }
      t.true(result.ok, `${entry.name}: ${what}: ${result.ok ? '' : (result.error as Error).message}`)
      if (before) t.deepEqual(input, before.value, `${entry.name}: ${what}: input changed`)
      if (result.ok) checkReturned(t, entry, input, result.value, `${entry.name}: ${what}`)
    }
    t.is(({} as Record<string, unknown>).polluted, undefined)
  })

  test.serial(`${entry.name} reads the same hostile shapes in every format`, async (t) => {
    const base: Message[] = [
      { role: 'system', content: 'rules 🚀' },
      { role: 'user', content: '\ud800 task 汉字' },
      { role: 'assistant', content: null, tool_calls: [call('a', '{"__proto__":{"polluted":true},"path":"'), call('a')] },
      { role: 'tool', tool_call_id: 'a', content: 'x' },
      { role: 'tool', tool_call_id: 'ghost', content: 'orphan' },
      { role: 'user', content: 'again' },
    ]
    for (const [format, input] of [['openai', base], ['anthropic', toAnthropic(base)], ['ai-sdk', toAiSdk(base)]] as const) {
      const before = snapshot(input)
      const result = await outcome(() => entry.call(input, entry.formats ? { format } : undefined))
      t.true(result.ok, `${entry.name}: ${format}: ${result.ok ? '' : (result.error as Error).message}`)
      t.deepEqual(input, before, `${entry.name}: ${format}: input changed`)
      if (result.ok) checkReturned(t, entry, input as unknown[], result.value, `${entry.name}: ${format}`)
    }
    t.is(({} as Record<string, unknown>).polluted, undefined)
  })

  if (entry.options) {
    const name = entry.options
    test.serial(`${entry.name} rejects options of the wrong type with a coded TypeError`, async (t) => {
      const target = takesTarget(entry.name) ? { targetTokens: 9 } : {}
      const bad: Array<[unknown, string]> = [
        [5, `${name}: must be an object, got number`],
        ['x', `${name}: must be an object, got string`],
        [true, `${name}: must be an object, got boolean`],
        // applyMaxContextTokens takes CursorClaw's truncationPriority array there (drop-in.spec.ts).
        ...(entry.name.startsWith('applyMaxContextTokens') ? [] : ([[[1], `${name}: must be an object, got array`]] as Array<[unknown, string]>)),
        [() => ({}), `${name}: must be an object, got function`],
        ...(entry.formats
          ? ([
              [{ format: 'klingon' }, 'format: must be one of openai, anthropic, ai-sdk, auto, got "klingon"'],
              [{ format: 5 }, 'format: must be a string, got number'],
              [{ get format() { throw new Error('option getter exploded') } }, `^${name}: .*option getter exploded`],
            ] as Array<[unknown, string]>)
          : []),
        ...(entry.counts
          ? ([
              [{ ...target, encoding: 'nope' }, 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "nope"'],
              [{ ...target, encoding: 5 }, 'encoding: must be a string, got number'],
              [{ ...target, model: {} }, 'model: must be a string, got object'],
              [{ ...target, encodng: 'cl100k_base' }, 'encodng: is not an option (did you mean encoding?)'],
            ] as Array<[unknown, string]>)
          : []),
      ]
      for (const [options, message] of bad) {
        const err = coded(t, await outcome(() => entry.call([{ role: 'user', content: 'x' }], options)), `${entry.name}: ${String(message)}`)
        t.is(err?.code, 'INVALID_OPTION')
        expectMessage(t, err, message, `${entry.name} options: ${message}`)
      }
    })
  }
}

test.serial('applyMaxContextTokens rejects budgets and options out of range, sync and async alike', async (t) => {
  const messages = [{ role: 'user', content: 'x' }]
  const budgets: Array<[unknown, string]> = [
    [-1, 'maxContextTokens: must be an integer of at least 0, got -1'],
    [Number.NaN, 'maxContextTokens: must be an integer of at least 0, got NaN'],
    [Number.POSITIVE_INFINITY, 'maxContextTokens: must be an integer of at least 0, got Infinity'],
    [Number.NEGATIVE_INFINITY, 'maxContextTokens: must be an integer of at least 0, got -Infinity'],
    [1.5, 'maxContextTokens: must be an integer of at least 0, got 1.5'],
    [2 ** 60, 'maxContextTokens: must be an integer of at least 0, got 1152921504606847000'],
    ['100', 'maxContextTokens: must be an integer of at least 0, got string'],
    [null, 'maxContextTokens: must be an integer of at least 0, got null'],
    [undefined, 'maxContextTokens: must be an integer of at least 0, got undefined'],
    [100n, 'maxContextTokens: must be an integer of at least 0, got bigint'],
  ]
  for (const f of [ct.applyMaxContextTokens, ct.applyMaxContextTokensAsync]) {
    for (const [budget, message] of budgets) {
      const err = coded(t, await outcome(() => f(messages as Message[], budget as number)), `${f.name} ${String(budget)}`)
      t.is(err?.code, 'INVALID_ARGUMENT')
      t.is(err?.message, message)
    }
    const options: Array<[unknown, string]> = [
      [{ minKeep: 5 }, 'minKeep: must be an object, got number'],
      [{ minKeep: 'user' }, 'minKeep: must be an object, got string'],
      [{ minKeep: [1] }, 'minKeep: must be an object, got array'],
      [{ minKeep: () => ({}) }, 'minKeep: must be an object, got function'],
      [{ minKeep: { user: -1 } }, 'minKeep.user: must be an integer of at least 0, got -1'],
      [{ minKeep: { user: Number.NaN } }, 'minKeep.user: must be an integer of at least 0, got NaN'],
      [{ minKeep: { tool: Number.POSITIVE_INFINITY } }, 'minKeep.tool: must be an integer of at least 0, got Infinity'],
      [{ minKeep: { assistant: 0.5 } }, 'minKeep.assistant: must be an integer of at least 0, got 0.5'],
      [{ minKeep: { user: '2' } }, 'minKeep.user: must be a number, got string'],
      [{ truncationPriority: ['wizard'] }, 'truncationPriority[0]: must be one of system, developer, user, assistant, tool, got "wizard"'],
      [{ truncationPriority: 'user' }, 'truncationPriority: must be an array, got string'],
      [{ dropOrder: ['user', 'user'] }, 'dropOrder: lists "user" twice'],
      [{ keepFirstSystem: 'yes' }, 'keepFirstSystem: must be a boolean, got string'],
    ]
    for (const [opts, message] of options) {
      const err = coded(t, await outcome(() => f(messages as Message[], 10, opts as never)), `${f.name} ${JSON.stringify(opts)}`)
      t.is(err?.code, 'INVALID_OPTION')
      expectMessage(t, err, message, `${f.name} ${JSON.stringify(opts)}`)
    }
  }
})

test.serial('the other strategies and classes reject budgets, options and arguments out of range', async (t) => {
  const m = [{ role: 'user', content: 'x' }] as Message[]
  const cases: Array<[string, () => unknown, string, string | RegExp]> = [
    // A positional argument is INVALID_ARGUMENT, an options field INVALID_OPTION (docs/robustness.md).
    ['trimByAge -1', () => ct.trimByAge(m, -1), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got -1'],
    ['trimByAge NaN', () => ct.trimByAge(m, Number.NaN), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got NaN'],
    ['trimByAge string', () => ct.trimByAge(m, '5' as never), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got string'],
    ['trimConversation Infinity', () => ct.trimConversation(m, Number.POSITIVE_INFINITY), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got Infinity'],
    ['trimConversationAsync 1.5', () => ct.trimConversationAsync(m, 1.5), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got 1.5'],
    ['trimByPriority targetTokens string', () => ct.trimByPriority(m, { targetTokens: '5' as never }), 'INVALID_OPTION', 'targetTokens: must be a number, got string'],
    // A nested options object given as a non-object is refused, naming its path.
    ['CacheAwareTrimmer truncation', () => new ct.CacheAwareTrimmer({ contextWindow: 10, strategy: 'truncate', truncation: 5 as never }), 'INVALID_OPTION', 'truncation: must be an object, got number'],
    ['CacheAwareTrimmer roles', () => new ct.CacheAwareTrimmer({ contextWindow: 10, strategy: 'roles', roles: 'age' as never }), 'INVALID_OPTION', 'roles: must be an object, got string'],
    ['CacheAwareTrimmer roles.minKeep', () => new ct.CacheAwareTrimmer({ contextWindow: 10, strategy: 'roles', roles: { minKeep: [2] as never } }), 'INVALID_OPTION', 'roles.minKeep: must be an object, got array'],
    ['simulate roles.minKeep', () => ct.simulate(m, { contextWindow: 10, strategy: 'roles', roles: { minKeep: true as never } }), 'INVALID_OPTION', 'roles.minKeep: must be an object, got boolean'],
    ['applyMaxContextTokens minKeep getter', () => ct.applyMaxContextTokens(m, 5, { get minKeep(): never { throw new Error('nested getter exploded') } }), 'INVALID_OPTION', 'options: nested getter exploded'],
    ['RollingContext config', () => new ct.RollingContext({ config: 5 as never }), 'INVALID_OPTION', 'config: must be an object, got number'],
    ['RollingContext config setter', () => { new ct.RollingContext().config = 'x' as never }, 'INVALID_OPTION', 'config: must be an object, got string'],
    ['trimConversation strategy', () => ct.trimConversation(m, 5, { strategy: 'x' as never }), 'INVALID_OPTION', 'strategy: must be one of age-based, priority-based, got "x"'],
    ['trimByPriority without targetTokens', () => ct.trimByPriority(m, {}), 'INVALID_OPTION', 'targetTokens: is required'],
    ['trimByPriority without options', () => ct.trimByPriority(m, undefined as never), 'INVALID_OPTION', /targetTokens/],
    ['trimByPriority 1.5', () => ct.trimByPriority(m, { targetTokens: 1.5 }), 'INVALID_OPTION', 'targetTokens: must be an integer of at least 0, got 1.5'],
    ['trimWithPlaceholders fileTracker', () => ct.trimWithPlaceholders(m, { targetTokens: 5, fileTracker: {} as never }), 'INVALID_OPTION', 'fileTracker: must be a FileTracker, got object'],
    ['trimByPriority preserveRecentTurns', () => ct.trimByPriority(m, { targetTokens: 5, preserveRecentTurns: -2 }), 'INVALID_OPTION', /^preserveRecentTurns: /],
    ['truncateOldToolOutputs maxAge', () => ct.truncateOldToolOutputs(m, { maxAge: -1 }), 'INVALID_OPTION', 'maxAge: must be an integer of at least 0, got -1'],
    ['truncateOldToolOutputs maxTokensPerOutput', () => ct.truncateOldToolOutputs(m, { maxTokensPerOutput: 1 }), 'INVALID_OPTION', /^maxTokensPerOutput: must be an integer of at least \d+, got 1$/],
    ['truncateOldToolOutputs minQuotedChars', () => ct.truncateOldToolOutputs(m, { minQuotedChars: 0 }), 'INVALID_OPTION', 'minQuotedChars: must be an integer of at least 1, got 0'],
    ['truncateOldToolOutputs placeholder', () => ct.truncateOldToolOutputs(m, { placeholder: 5 as never }), 'INVALID_OPTION', /placeholder/],
    ['truncateOldToolOutputsAsync maxAge', () => ct.truncateOldToolOutputsAsync(m, { maxAge: Number.NaN }), 'INVALID_OPTION', 'maxAge: must be an integer of at least 0, got NaN'],
    ['RollingContext options', () => new ct.RollingContext(5 as never), 'INVALID_OPTION', 'options: must be an object, got number'],
    ['RollingContext config', () => new ct.RollingContext({ config: { maxAge: -1 } }), 'INVALID_OPTION', /maxAge/],
    ['RollingContext handleCommand', () => new ct.RollingContext().handleCommand('explode'), 'INVALID_ARGUMENT', 'arg: must be on, off, enable, disable, toggle, status or nothing, got "explode"'],
    ['RollingContext prepare', () => new ct.RollingContext().prepare(5 as never), 'INVALID_MESSAGES', 'messages: must be an array, got number'],
    ['FileTracker trackAccess step', () => new ct.FileTracker().trackAccess('a', Number.NaN, 'read'), 'INVALID_ARGUMENT', 'step: must be an integer of at least 0, got NaN'],
    ['FileTracker trackAccess operation', () => new ct.FileTracker().trackAccess('a', 1, 'zap' as never), 'INVALID_ARGUMENT', 'operation: must be one of read, create, edit, delete, got "zap"'],
    ['FileTracker isStale', () => new ct.FileTracker().isStale('a', -1, 2), 'INVALID_ARGUMENT', /^currentStep: /],
    ['FileTracker getRecentFiles', () => new ct.FileTracker().getRecentFiles(1, Number.POSITIVE_INFINITY), 'INVALID_ARGUMENT', /^maxAge: /],
    ['classifyMessage', () => ct.classifyMessage(5 as never), 'INVALID_MESSAGE', 'messages[0]: must be an object, got number'],
    ['classifyMessage context', () => ct.classifyMessage({ role: 'user', content: 'x' }, 5 as never), 'INVALID_OPTION', 'context: must be an object, got number'],
    ['classifyMessage getter', () => ct.classifyMessage(throwingGetter('role') as never), 'INVALID_MESSAGE', 'messages[0].role: could not be read: getter exploded'],
  ]
  for (const [what, f, code, message] of cases) {
    const err = coded(t, await outcome(f), what)
    t.is(err?.code, code, what)
    if (typeof message === 'string') t.is(err?.message, message, what)
    else t.regex(err?.message ?? '', message, what)
  }
})

test.serial('simulate rejects windows, marks, prices and policies out of range, sync and async alike', async (t) => {
  const m = [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'y' }] as Message[]
  const cases: Array<[unknown, string]> = [
    [undefined, 'contextWindow: is required'],
    [{}, 'contextWindow: is required'],
    [{ contextWindow: 0 }, 'contextWindow: must be an integer of at least 1, got 0'],
    [{ contextWindow: -1 }, 'contextWindow: must be an integer of at least 1, got -1'],
    [{ contextWindow: Number.NaN }, 'contextWindow: must be an integer of at least 1, got NaN'],
    [{ contextWindow: Number.POSITIVE_INFINITY }, 'contextWindow: must be an integer of at least 1, got Infinity'],
    [{ contextWindow: 1.5 }, 'contextWindow: must be an integer of at least 1, got 1.5'],
    [{ contextWindow: 2 ** 60 }, 'contextWindow: must be an integer of at least 1, got 1152921504606847000'],
    [{ contextWindow: '100' }, 'contextWindow: must be a number, got string'],
    [{ contextWindow: 100, highWater: 0 }, 'highWater: must be a fraction of the window in (0, 1], got 0'],
    [{ contextWindow: 100, highWater: Number.NaN }, 'highWater: must be a fraction of the window in (0, 1], got NaN'],
    [{ contextWindow: 100, lowWater: -0.5 }, 'lowWater: must be a fraction of the window in [0, highWater = 0.85], got -0.5'],
    [{ contextWindow: 100, clearAtLeast: -1 }, 'clearAtLeast: must be an integer of at least 0, got -1'],
    [{ contextWindow: 100, everyTurnBudget: Number.POSITIVE_INFINITY }, 'everyTurnBudget: must be an integer of at least 1, got Infinity'],
    [{ contextWindow: 100, everyTurnBudget: 'all' }, 'everyTurnBudget: must be a number, got string'],
    [{ contextWindow: 100, pricing: [1, 2, 3] }, 'pricing: must be anthropic, openai or a price table, got array'],
    [{ contextWindow: 100, pricing: null, strategy: 'lru' }, 'strategy: must be one of priority, placeholders, truncate, roles, age, got "lru"'],
    [{ contextWindow: 100, pricing: { input: Number.POSITIVE_INFINITY, cacheRead: 0, cacheWrite: 1 } }, 'pricing.input: must be a non-negative number of dollars per million tokens, got Infinity'],
    [{ contextWindow: 100, pricing: { input: 1, cacheRead: 0 } }, '^pricing: must be a price table: .*cacheWrite'],
    [{ contextWindow: 100, policies: ['none', 'none'] }, 'policies: lists "none" twice'],
    [{ contextWindow: 100, policies: 'none' }, 'policies: must be an array, got string'],
    [{ contextWindow: 100, policies: [5] }, 'policies: every entry must be a string'],
    [{ contextWindow: 100, strategy: 'age', preserveRecentTurns: 2 }, 'preserveRecentTurns: applies to strategy priority or placeholders only, the strategy is "age"'],
  ]
  for (const f of [ct.simulate, ct.simulateAsync]) {
    for (const [options, message] of cases) {
      const label = `${f.name} ${JSON.stringify(options)}`
      const err = coded(t, await outcome(() => f(m, options as never)), label)
      t.is(err?.code, 'INVALID_OPTION', label)
      expectMessage(t, err, message, label)
    }
  }
  // An empty list of policies is a report of nothing; a window of 2^40 tokens is fine.
  t.deepEqual(ct.simulate(m, { contextWindow: 100, policies: [] }).policies, [])
  t.is(ct.simulate(m, { contextWindow: 2 ** 40 }).contextWindow, 2 ** 32 - 1)
})

test.serial('every …Async function returns a Promise that rejects, never throws, with the error of its sync variant', async (t) => {
  const bad: Array<[string, unknown, unknown]> = [
    ['messages not an array', 42, undefined],
    ['a malformed message', [{ role: 'wizard' }], undefined],
    ['options not an object', [{ role: 'user', content: 'x' }], 5],
    ['a getter that throws', [throwingGetter('content')], undefined],
  ]
  const asyncEntries = messageEntryPoints.filter((e) => e.name.endsWith('Async'))
  // Every …Async function of index.d.ts (enforceContextLimitAsync is the eighth).
  t.is(asyncEntries.length, 8)
  for (const entry of asyncEntries) {
    const sync = messageEntryPoints.find((e) => e.name === entry.name.replace(/Async$/, ''))
    for (const [what, messages, options] of bad) {
      const label = `${entry.name}: ${what}`
      let returned: unknown
      t.notThrows(() => { returned = entry.call(messages, options) }, label)
      t.true(returned instanceof Promise, label)
      const error = await (returned as Promise<unknown>).then(() => undefined, (e: unknown) => e) as CodedError | undefined
      t.true(error instanceof TypeError, `${label}: ${String(error)}`)
      let expected: CodedError | undefined
      try {
        sync?.call(messages, options)
      } catch (e) {
        expected = e as CodedError
      }
      t.is(error?.code, expected?.code, label)
      t.is(error?.message, expected?.message, label)
    }
  }
  // The positional budgets too.
  await t.throwsAsync(() => ct.applyMaxContextTokensAsync([], -1), { instanceOf: TypeError, code: 'INVALID_ARGUMENT' } as never)
  await t.throwsAsync(() => ct.trimConversationAsync([], Number.NaN), { instanceOf: TypeError, code: 'INVALID_ARGUMENT' } as never)
})

test.serial('countTokens and estimateMessageTokens reject what they cannot read with coded errors', (t) => {
  for (const [text, message] of [[5, 'text: must be a string, got number'], [null, 'text: must be a string, got null'], [undefined, 'text: must be a string, got undefined'], [{}, 'text: must be a string, got object'], [Symbol('s'), 'text: must be a string, got symbol']] as const) {
    t.throws(() => ct.countTokens(text as never), { instanceOf: TypeError, code: 'INVALID_ARGUMENT', message })
  }
  for (const [message, text] of [
    [null, 'messages[0]: must be an object, got null'],
    [[], 'messages[0]: must be an object, got array'],
    [{ content: 'x' }, 'messages[0].role: is required'],
    [throwingGetter('role'), 'messages[0].role: could not be read: getter exploded'],
    [{ role: 'assistant', tool_calls: [call('1', circular)] }, /^messages\[0\]\.tool_calls\[0\]\.function\.arguments: could not be serialized to JSON/],
  ] as const) {
    t.throws(() => ct.estimateMessageTokens(message as never), { instanceOf: TypeError, code: 'INVALID_MESSAGE', message: text })
  }
  t.is(ct.estimateMessageTokens({ role: 'user', content: '\ud800' }), ct.estimateMessageTokens({ role: 'user', content: '\ufffd' }))
  for (const bad of [5, 'x', true, [1]]) {
    t.throws(() => ct.countTokens('x', bad as never), { instanceOf: TypeError, code: 'INVALID_OPTION' })
    t.throws(() => ct.estimateMessageTokens({ role: 'user', content: 'x' }, bad as never), { instanceOf: TypeError, code: 'INVALID_OPTION' })
  }
  for (const set of [ct.setTokenCacheCapacity, ct.setMessageCacheCapacity]) {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 1.5]) {
      t.throws(() => set(bad), { instanceOf: TypeError, code: 'INVALID_ARGUMENT', message: /^capacity: must be a non-negative integer, got / })
    }
    t.throws(() => set('5' as never), { code: 'NumberExpected' })
  }
})

// The large inputs, made once; each entry point gets its own test so that ava sees progress.
const big = 'a'.repeat(100 * 1024 * 1024)
const bigMessages: Message[] = [{ role: 'user', content: 'question' }, { role: 'assistant', content: big }, { role: 'user', content: 'and?' }]
const many: Message[] = Array.from({ length: 1_000_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' }))
const defaultBounds = ct.messageCacheStats()
// Room for all of them in the message cache, so that each is read once (with the default bounds
// every call would read the million messages again).
test.before(() => ct.setMessageCacheCapacity(1_100_000, { maxBytes: 2 ** 31 }))
test.after.always(() => ct.setMessageCacheCapacity(defaultBounds.capacity, { maxBytes: defaultBounds.maxBytes }))

test.serial('a 100 MB string is counted', (t) => {
  t.is(ct.countTokens(big, { encoding: 'approximate' }), (100 * 1024 * 1024) / 4)
  t.true(ct.estimateTokens(bigMessages, { encoding: 'approximate' }) > 26_000_000)
  // Over the budget, the oldest go first until it fits; the last message stays.
  t.deepEqual(ct.applyMaxContextTokens(bigMessages, 1000, { encoding: 'approximate' }), [bigMessages[2]])
})

test.serial('a million tiny messages are counted and capped', (t) => {
  t.is(ct.countSteps(many), 0)
  t.is(ct.estimateTokens(many), 1_000_000 * 5 + 3)
  // 5 tokens a message, 3 of reply priming: the last 19 fit in 100.
  const capped = ct.applyMaxContextTokens(many, 100)
  t.is(capped.length, 19)
  t.is(capped[18], many[999_999])
})

for (const entry of messageEntryPoints) {
  // Exact counting is linear but slow in a debug build (minutes for 100 MB of one letter): an
  // entry point that cannot be asked for the approximate encoding gets 10 MB.
  const size = entry.exact ? '10 MB' : '100 MB'
  test.serial(`${entry.name} passes a ${size} string`, async (t) => {
    const input = entry.exact ? [bigMessages[0], { role: 'assistant', content: big.slice(0, 10 * 1024 * 1024) }, bigMessages[2]] : bigMessages
    const options = { ...(takesTarget(entry.name) ? { targetTokens: 1000 } : {}), encoding: 'approximate' }
    const result = await outcome(() => entry.call(input, entry.counts ? options : undefined))
    t.true(result.ok, `${entry.name}: ${result.ok ? '' : (result.error as Error).message}`)
    if (result.ok) checkReturned(t, entry, input, result.value, entry.name)
  })

  test.serial(`${entry.name} passes ${entry.quadratic ? '2,000' : 'a million'} tiny messages`, async (t) => {
    const result = await outcome(() => entry.call(entry.quadratic ? many.slice(0, 2000) : many))
    t.true(result.ok, `${entry.name}: ${result.ok ? '' : (result.error as Error).message}`)
  })
}

test.serial('a whitespace run of a million characters is counted exactly enough instead of failing', (t) => {
  // tiktoken-rs's regex gives up on such a run and panicked; it is now counted in pieces.
  const run = ' '.repeat(1_100_000)
  const n = ct.countTokens(`a${run}b`)
  t.true(n > 8_000 && n < 9_000, String(n))
  t.is(ct.estimateTokens([{ role: 'user', content: run }]), ct.countTokens(run) + ct.estimateTokens([{ role: 'user', content: '' }]))
})

test.serial('real transcripts in every format survive every entry point unchanged', async (t) => {
  const base = transcript('openhands-resolver-dark-mode.json')
  for (const messages of [base, toAnthropic(base), toAiSdk(base)] as unknown[][]) {
    const before = snapshot(messages)
    for (const entry of messageEntryPoints) {
      const result = await outcome(() => entry.call(messages))
      t.true(result.ok, entry.name)
      if (result.ok) checkReturned(t, entry, messages, result.value, entry.name)
    }
    t.deepEqual(messages, before)
  }
})

test.serial('a warm call (every message found in the cache) returns the caller\'s own objects as the first call did', async (t) => {
  // The second call finds each message by its id alone and takes no handle to it until one is
  // needed: what it returns must still be the caller's objects, in order.
  const base = transcript('openhands-resolver-dark-mode.json')
  for (const messages of [base, toAnthropic(base), toAiSdk(base)] as unknown[][]) {
    for (const entry of messageEntryPoints.filter((e) => e.returned)) {
      const first = await outcome(() => entry.call(messages))
      const second = await outcome(() => entry.call(messages))
      t.true(first.ok && second.ok, entry.name)
      if (!first.ok || !second.ok || !entry.returned) continue
      checkReturned(t, entry, messages, second.value, entry.name)
      const own = (r: unknown) => entry.returned!(r).filter((m) => messages.includes(m))
      t.deepEqual(own(second.value), own(first.value), `${entry.name}: the same objects`)
      t.true(own(second.value).every((m, i) => m === own(first.value)[i]), `${entry.name}: identical`)
    }
    const last = messages.length - 1
    t.true(ct.classifyMessage(messages[last] as never, { messages: messages as never, index: last }).message === messages[last])
    const window = new ct.ContextWindow()
    window.append(messages as never)
    t.true(window.messages().every((m, i) => m === messages[i]))
  }
})

test('a frozen options object holding options of its own is read, and a misspelt key in it is still named', (t) => {
  // The unknown-option check reads options through a proxy; a proxy of a frozen object cannot
  // hand out a wrapped nested object for a read-only field, which failed the whole call.
  const chat = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }] as never
  const frozen = Object.freeze({ keepFirstSystem: true, minKeep: Object.freeze({ user: 1 }) })
  t.deepEqual(ct.applyMaxContextTokens(chat, 1000, frozen), ct.applyMaxContextTokens(chat, 1000, { keepFirstSystem: true, minKeep: { user: 1 } }))
  t.throws(() => ct.applyMaxContextTokens(chat, 10, Object.freeze({ minKeep: Object.freeze({ usr: 2 }) }) as never), { instanceOf: TypeError, code: 'INVALID_OPTION', message: /^minKeep\.usr: is not an option \(did you mean user\?\)/ })
  const nested = Object.freeze({ contextWindow: 400, encoding: 'approximate', strategy: 'truncate', truncation: Object.freeze({ maxAge: 2 }) })
  t.notThrows(() => new ct.CacheAwareTrimmer(nested as never))
  t.throws(() => new ct.CacheAwareTrimmer(Object.freeze({ contextWindow: 400, strategy: 'truncate', truncation: Object.freeze({ maxAg: 2 }) }) as never), { code: 'INVALID_OPTION', message: /^truncation\.maxAg: is not an option/ })
})

test('options whose fields are known are read without the watch, and still refuse what is no option, at any depth', (t) => {
  // From the second call on, an options object of only known fields is read as it is: every
  // shape the watch alone can check still goes through it.
  const chat = [{ role: 'user', content: 'hi' }] as never
  for (let k = 0; k < 3; k++) ct.applyMaxContextTokens(chat, 10, { keepFirstSystem: true })
  for (let k = 0; k < 3; k++) ct.trimByPriority(chat, { targetTokens: 100 })
  const refused: Array<[() => unknown, string | RegExp]> = [
    [() => ct.applyMaxContextTokens(chat, 10, { keepFirstSystem: true, keepFristSystem: true } as never), /^keepFristSystem: is not an option \(did you mean keepFirstSystem\?\)/],
    [() => ct.applyMaxContextTokens(chat, 10, { keepFirstSystem: true, minKeep: { usr: 2 } } as never), /^minKeep\.usr: is not an option/],
    [() => ct.applyMaxContextTokens(chat, 10, { keepFirstSystem: 'yes' } as never), 'keepFirstSystem: must be a boolean, got string'],
    [() => ct.applyMaxContextTokens(chat, 10, Object.create({ minKeep: { usr: 2 } }, { keepFirstSystem: { value: true, enumerable: true } })), /^minKeep\.usr: is not an option/],
    [() => ct.applyMaxContextTokens(chat, 10, Object.defineProperty({ keepFirstSystem: true }, 'minKeep', { value: { usr: 2 }, enumerable: false })), /^minKeep\.usr: is not an option/],
    [() => ct.trimByPriority(chat, { targetTokens: 100, preserveRecentTurn: 2 } as never), /^preserveRecentTurn: is not an option \(did you mean preserveRecentTurns\?\)/],
    [() => ct.trimByPriority(chat, { targetTokens: -1 }), /^targetTokens: must be an integer/],
  ]
  for (const [call, message] of refused) t.throws(call, { instanceOf: TypeError, code: 'INVALID_OPTION', message })
  // A getter is called once, as by the watch, and its value used.
  let reads = 0
  const byGetter = { targetTokens: 100, get preserveRecentTurns() { reads++; return 1 } }
  t.is(ct.trimByPriority(chat, byGetter).messages.length, 1)
  t.is(reads, 1)
  // Known fields read as they are give what the watch gave.
  const plain = { targetTokens: 3, preserveRecentTurns: 0 }
  const long = [{ role: 'user', content: 'one two three four five six seven eight nine ten' }, { role: 'user', content: 'x' }] as never
  const watched = { targetTokens: 3, get preserveRecentTurns() { return 0 } }
  t.deepEqual(ct.trimByPriority(long, plain), ct.trimByPriority(long, watched))
})

test('a wrongly typed option field is named, as any invalid option is; a list with a wrong entry says what every entry must be', (t) => {
  const chat = [{ role: 'user', content: 'hi' }] as never
  const cases: Array<[() => unknown, string]> = [
    [() => ct.applyMaxContextTokens(chat, 10, { keepFirstSystem: 'yes' } as never), 'keepFirstSystem: must be a boolean, got string'],
    [() => ct.estimateTokens(chat, { model: 5 } as never), 'model: must be a string, got number'],
    [() => ct.simulate(chat, { policies: 'none' } as never), 'policies: must be an array, got string'],
    [() => ct.simulate(chat, { policies: [1] } as never), 'policies: every entry must be a string'],
    [() => ct.applyMaxContextTokens(chat, 10, { minKeep: { user: '2' } } as never), 'minKeep.user: must be a number, got string'],
    [() => ct.setMessageCacheCapacity(100, { maxBytes: 'x' } as never), 'maxBytes: must be a number, got string'],
    [() => new ct.CacheAwareTrimmer({ contextWindow: 'x' } as never), 'contextWindow: must be a number, got string'],
  ]
  for (const [call, message] of cases) t.throws(call, { instanceOf: TypeError, code: 'INVALID_OPTION', message })
})

test('the caller\'s array is read once per element: what is analysed is what is returned, even from an index getter', (t) => {
  // Each read of an element makes a new object: a second read would analyse one object and
  // return another.
  const history = transcript('openhands-ponyc-4595.json')
  const reads = new Array<number>(history.length).fill(0)
  const made: object[][] = history.map(() => [])
  const messages: Message[] = []
  history.forEach((m, i) => {
    Object.defineProperty(messages, i, {
      enumerable: true,
      get: () => {
        reads[i]++
        const copy = { ...m }
        made[i].push(copy)
        return copy
      },
    })
  })
  const target = Math.floor(ct.estimateTokens(history) / 2)
  reads.fill(0)
  for (const m of made) m.length = 0
  for (const [name, run] of [
    ['trimByPriority', () => ct.trimByPriority(messages, { targetTokens: target }).messages],
    ['trimWithPlaceholders', () => ct.trimWithPlaceholders(messages, { targetTokens: target }).messages],
    ['deduplicateToolResults', () => ct.deduplicateToolResults(messages, { deduplicationThreshold: 0 }).messages],
  ] as const) {
    const out = run() as object[]
    t.deepEqual(reads, history.map(() => 1), `${name}: every element read once`)
    const kept = out.filter((o) => made.some((objects) => objects.includes(o)))
    t.true(kept.length > 0, name)
    t.true(kept.every((o) => made.some((objects) => objects[0] === o)), `${name}: kept objects are the ones read`)
    reads.fill(0)
    for (const m of made) m.length = 0
  }
})
