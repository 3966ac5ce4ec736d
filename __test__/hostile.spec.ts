// Hostile input: whatever a caller passes, the addon answers with a clear coded error or a
// documented lenient result, and never crashes the process.
import test from 'ava'

import { ct, snapshot, transcript } from './helpers.js'
import type { Message } from '../index.js'

const CODES = new Set(['INVALID_MESSAGES', 'INVALID_MESSAGE', 'INVALID_OPTION', 'INVALID_ARGUMENT'])

/** Every entry point that takes a message array, called with `messages` (and benign other arguments). */
export const messageEntryPoints: Array<[string, (messages: unknown) => unknown]> = [
  ['estimateTokens', (m) => ct.estimateTokens(m as Message[])],
  ['countSteps', (m) => ct.countSteps(m as Message[])],
  ['tagMessagesWithStep', (m) => ct.tagMessagesWithStep(m as Message[])],
]

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

const circular: Record<string, unknown> = { x: 1 }
circular.self = circular
const throwing = { role: 'user' } as Record<string, unknown>
Object.defineProperty(throwing, 'content', { enumerable: true, get: () => { throw new Error('getter exploded') } })

/** Inputs that must be rejected with a coded TypeError. */
const rejected: Array<[string, unknown]> = [
  ['a number', 42],
  ['a string', 'hello'],
  ['null', null],
  ['undefined', undefined],
  ['an object', { role: 'user', content: 'x' }],
  ['null as a message', [null]],
  ['undefined as a message', [undefined]],
  ['a number as a message', [7]],
  ['a string as a message', ['hi']],
  ['an array as a message', [[{ role: 'user' }]]],
  ['a missing role', [{ content: 'x' }]],
  ['an unknown role', [{ role: 'wizard', content: 'x' }]],
  ['a numeric role', [{ role: 5, content: 'x' }]],
  ['numeric content', [{ role: 'user', content: 5 }]],
  ['object content', [{ role: 'user', content: { text: 'x' } }]],
  ['nested array content', [{ role: 'user', content: [[{ type: 'text', text: 'x' }]] }]],
  ['tool_calls not an array', [{ role: 'assistant', tool_calls: { id: '1' } }]],
  ['a tool call without id', [{ role: 'assistant', tool_calls: [{ function: { name: 'x', arguments: '{}' } }] }]],
  ['a tool call without function', [{ role: 'assistant', tool_calls: [{ id: '1' }] }]],
  ['a tool call without name', [{ role: 'assistant', tool_calls: [{ id: '1', function: { arguments: '{}' } }] }]],
  ['numeric arguments', [{ role: 'assistant', tool_calls: [{ id: '1', function: { name: 'x', arguments: 1 } }] }]],
  ['circular arguments', [{ role: 'assistant', tool_calls: [{ id: '1', function: { name: 'x', arguments: circular } }] }]],
  ['arguments 10,000 levels deep', [{ role: 'assistant', tool_calls: [{ id: '1', function: { name: 'x', arguments: deep(10_000) } }] }]],
  ['a getter that throws', [throwing]],
  ['a function as content', [{ role: 'user', content: () => 'x' }]],
  ['a symbol as role', [{ role: Symbol('user') }]],
  ['a bigint as content', [{ role: 'user', content: 10n }]],
]

for (const [name, call] of messageEntryPoints) {
  test(`${name} rejects hostile input with a coded TypeError`, (t) => {
    for (const [what, input] of rejected) {
      const err = t.throws(() => call(input), undefined, `${name}: ${what}`)
      t.true(err instanceof TypeError, `${name}: ${what}: ${err?.constructor.name}`)
      t.true(CODES.has((err as { code?: string } | undefined)?.code ?? ''), `${name}: ${what}: code ${(err as { code?: string })?.code}`)
      t.regex(err?.message ?? '', /^(messages|messages\[\d+\]|options|text)/, `${name}: ${what}`)
    }
  })

  test(`${name} accepts lenient shapes: unicode, proxies, frozen objects, prototype keys`, (t) => {
    const lenient: unknown[] = [
      [],
      [{ role: 'user', content: '\ud800 lone high surrogate and \udfff lone low' }],
      [{ role: 'user', content: '東京 🚀 emoji 👩‍👩‍👧 and CJK 汉字' }],
      [new Proxy({ role: 'user', content: 'proxied' }, {})],
      [Object.freeze({ role: 'user', content: 'frozen', extra: Object.freeze({ a: 1 }) })],
      [JSON.parse('{"role":"assistant","content":null,"tool_calls":[{"id":"1","function":{"name":"x","arguments":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}}}]}')],
      [{ role: 'tool', tool_call_id: 'unknown-id', content: 'a result for a call that is not there' }],
      [{ role: 'user', content: [{ type: 'text', text: 'x', meta: deep(10_000) }] }],
      [{ role: 'assistant', content: null, tool_calls: [{ id: 'dup', function: { name: 'a', arguments: '{}' } }, { id: 'dup', function: { name: 'b', arguments: 'not json' } }] }],
    ]
    for (const input of lenient) {
      // structuredClone refuses proxies; those are checked for not throwing only.
      let before: unknown = undefined
      try {
        before = snapshot(input)
      } catch {}
      t.notThrows(() => call(input))
      if (before !== undefined) t.deepEqual(input, before)
    }
    t.is(({} as Record<string, unknown>).polluted, undefined)
  })
}

test('a 100 MB string is counted without crashing', (t) => {
  const big = 'a'.repeat(100 * 1024 * 1024)
  t.true(ct.countTokens(big, { encoding: 'approximate' }) === 100 * 1024 * 1024 / 4)
  t.true(ct.estimateTokens([{ role: 'user', content: big }], { encoding: 'approximate' }) > 26_000_000)
})

test('a million tiny messages are handled', (t) => {
  const many: Message[] = Array.from({ length: 1_000_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' }))
  t.is(ct.countSteps(many), 0)
  t.true(ct.estimateTokens(many) > 1_000_000)
})

test('wrong option types and out-of-range numbers are coded errors', (t) => {
  for (const bad of [5, 'x', true, [1]]) {
    t.throws(() => ct.estimateTokens([], bad as never), { instanceOf: TypeError, code: 'INVALID_OPTION' })
  }
  for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 1.5]) {
    t.throws(() => ct.setTokenCacheCapacity(bad), { instanceOf: TypeError, code: 'INVALID_ARGUMENT' })
  }
})

test('real transcripts survive a round of every entry point unchanged', (t) => {
  const messages = transcript('openhands-resolver-dark-mode.json')
  const before = snapshot(messages)
  for (const [, call] of messageEntryPoints) call(messages)
  t.deepEqual(messages, before)
})

test('a panic inside the addon becomes a JavaScript error and the process lives on', (t) => {
  t.throws(() => ct.__testPanic(), { message: '__testPanic panics only when CONTEXT_TRIM_TEST_PANIC=1' })
  process.env.CONTEXT_TRIM_TEST_PANIC = '1'
  try {
    t.throws(() => ct.__testPanic(), { instanceOf: Error, message: /context-trim test panic/ })
  } finally {
    delete process.env.CONTEXT_TRIM_TEST_PANIC
  }
  t.is(ct.countTokens('hello world'), 2)
})
