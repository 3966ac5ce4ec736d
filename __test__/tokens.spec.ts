import test from 'ava'
import { encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base'
import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base'

import { toAiSdk, toAnthropic } from './convert.js'
import { ct, snapshot, transcript, transcripts, type CodedError } from './helpers.js'
import type { Message } from '../index.js'

/**
 * An independent implementation of the OpenAI-cookbook count (as tiktoken-rs extends it to
 * tool calls), on gpt-tokenizer: 3 per message + role + content + name (+1) + per tool call
 * name + arguments + 1, then 3 for reply priming.
 */
function cookbookCount(messages: Message[], encode: (s: string) => number[]): number {
  let n = 0
  for (const m of messages) {
    n += 3 + encode(m.role).length
    if (typeof m.content === 'string') n += encode(m.content).length
    if (typeof m.name === 'string') n += encode(m.name).length + 1
    for (const c of m.tool_calls ?? []) {
      const args = typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments)
      n += encode(c.function.name).length + encode(args ?? '').length + 1
    }
  }
  return messages.length ? n + 3 : 0
}

test('countTokens counts hello world as 2 tokens', (t) => {
  t.is(ct.countTokens('hello world'), 2)
})

test('countTokens picks the encoding from the model, and encoding wins over model', (t) => {
  const text = 'Résumé: naïve café — 東京 🚀 fn main() { println!("hi"); }'
  t.is(ct.countTokens(text, { model: 'gpt-4o' }), encodeO200k(text).length)
  t.is(ct.countTokens(text, { model: 'gpt-4' }), encodeCl100k(text).length)
  t.is(ct.countTokens(text, { model: 'gpt-4', encoding: 'o200k_base' }), encodeO200k(text).length)
  t.is(ct.countTokens(text, { model: 'some-unknown-model' }), encodeO200k(text).length)
  t.is(ct.countTokens('abcdefgh', { encoding: 'approximate' }), 2)
})

test('estimateTokens matches an independent cookbook count on every transcript', (t) => {
  for (const [name, messages] of transcripts()) {
    t.is(ct.estimateTokens(messages), cookbookCount(messages, encodeO200k), name)
    t.is(ct.estimateTokens(messages, { model: 'gpt-4' }), cookbookCount(messages, encodeCl100k), name)
  }
})

test('estimateTokens on the marshmallow transcript', (t) => {
  const messages = transcript('sweagent-marshmallow-1867-fc.json')
  t.is(ct.estimateTokens(messages), cookbookCount(messages, encodeO200k))
})

test('estimateMessageTokens counts content parts, images, names and object arguments', (t) => {
  const parts: Message = {
    role: 'user',
    content: [
      { type: 'text', text: 'hello world' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
    ],
  }
  // An image whose size cannot be read ('AAAA' is no header) counts the most an OpenAI image
  // costs at high detail (docs/formats.md).
  t.is(ct.estimateMessageTokens(parts), 3 + 1 + 2 + 1445)
  const call: Message = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: { path: 'a.ts' } } }],
  }
  const asString: Message = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }],
  }
  t.is(ct.estimateMessageTokens(call), ct.estimateMessageTokens(asString))
  t.is(ct.estimateMessageTokens({ role: 'user', content: 'hi', name: 'bob' }), ct.estimateMessageTokens({ role: 'user', content: 'hi' }) + 2)
})

test('a text document counts its text in objects, fresh copies and JSON bodies; a PDF stays an attachment', (t) => {
  const anthropic = { format: 'anthropic' } as const
  const contract = 'the party of the first part agrees to the terms below\n'.repeat(800)
  const asText = ct.estimateMessageTokens({ role: 'user', content: [{ type: 'text', text: contract }] }, anthropic)
  t.true(asText > 5_000)
  const documents = [
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: contract }, title: 'contract', citations: { enabled: true } },
    { type: 'document', source: { type: 'content', content: [{ type: 'text', text: contract }] } },
  ]
  for (const document of documents) {
    const messages = [{ role: 'user', content: [document] }, { role: 'assistant', content: 'Read.' }]
    const tokens = ct.estimateTokens(messages as never, anthropic)
    t.is(ct.estimateMessageTokens(messages[0] as never, anthropic), asText, document.source.type)
    t.is(ct.estimateTokens(JSON.parse(JSON.stringify(messages)), anthropic), tokens, `${document.source.type}: a fresh copy`)
    t.is(ct.trimByPriorityJson(JSON.stringify(messages), { targetTokens: 100_000, format: 'anthropic' }).totalTokens, tokens, `${document.source.type}: a JSON body`)
    // A budget below the document is met, not reported met by a 765-token estimate.
    const trimmed = ct.trimByPriority(messages as never, { targetTokens: 2_000, format: 'anthropic' })
    t.true(trimmed.totalTokens <= 2_000 && ct.estimateTokens(trimmed.messages, anthropic) === trimmed.totalTokens)
  }
  // A cached message whose source is changed in place from a PDF to text is read again.
  const data = Buffer.alloc(3_000, 7).toString('base64')
  const source: Record<string, unknown> = { type: 'base64', media_type: 'application/pdf', data }
  const message = { role: 'user', content: [{ type: 'document', source }] }
  // A PDF: 765 tokens, with the message's framing (3) and role (1).
  t.is(ct.estimateMessageTokens(message as never, anthropic), 4 + 765)
  source.type = 'text'
  source.data = contract
  t.is(ct.estimateMessageTokens(message as never, anthropic), asText)
})

// The image's data has no header the library reads: at Anthropic's rate it counts 1,600, the most
// an image costs there (docs/formats.md); a PDF counts 765.
const UNKNOWN = 1600

test('screenshots and files count as images wherever they are, and a budget holds them', (t) => {
  const data = Buffer.alloc(30_000, 7).toString('base64')
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data } }
  const anthropic = { format: 'anthropic' } as const
  const alone = ct.estimateMessageTokens({ role: 'user', content: [image] } as never, anthropic)
  const result = (content: unknown) =>
    ct.estimateMessageTokens({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content }] } as never, anthropic)
  t.is(result([image]), alone)
  t.is(result([{ type: 'text', text: 'ok' }, image, image]), result('ok') + 2 * UNKNOWN)
  const pdf = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }
  t.is(ct.estimateMessageTokens({ role: 'user', content: [pdf] } as never, anthropic), alone - UNKNOWN + 765)
  const text = 'hello world '.repeat(500)
  const search = { type: 'search_result', source: 's', title: 't', content: [{ type: 'text', text }] }
  t.true(ct.estimateMessageTokens({ role: 'user', content: [search] } as never, anthropic) > 500)
  // An AI SDK tool output of parts: its media part is an image, never its base64 text.
  const aiSdk = { format: 'ai-sdk' } as const
  const output = (o: unknown) =>
    ct.estimateMessageTokens({ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', toolName: 'shot', output: o }] } as never, aiSdk)
  const media = { type: 'content', value: [{ type: 'text', text: 'here' }, { type: 'media', data, mediaType: 'image/png' }] }
  t.is(output(media), output({ type: 'text', value: 'here' }) + UNKNOWN)
  t.is(ct.estimateMessageTokens({ role: 'user', content: [{ type: 'file', data, mediaType: 'image/png' }] } as never, aiSdk), alone)
  // Forty screenshots do not fit 5,000 tokens: the trim drops them rather than report a fit.
  const session: unknown[] = [{ role: 'user', content: 'Use the computer' }]
  for (let i = 0; i < 40; i++) {
    session.push({ role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 'computer', input: { action: 'screenshot' } }] })
    session.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: [image] }] })
  }
  session.push({ role: 'user', content: 'continue' })
  t.true(ct.estimateTokens(session as never) > 40 * UNKNOWN)
  const trimmed = ct.trimByPriority(session as never, { targetTokens: 5000 })
  t.true(trimmed.totalTokens <= 5000)
  t.is(trimmed.totalTokens, ct.estimateTokens(trimmed.messages))
  // Old screenshots lose their image and keep what the tool said: no unit has to go.
  const withText = structuredClone(session) as { content: unknown }[]
  for (let i = 2; i < withText.length - 1; i += 2) (withText[i].content as { content: unknown }[])[0].content = [{ type: 'text', text: `clicked at ${i}` }, image]
  const cut = ct.trimByPriority(withText as never, { targetTokens: 8000 })
  t.is(cut.messages.length, withText.length)
  t.true(cut.totalTokens <= 8000)
  t.deepEqual((cut.messages[2] as unknown as { content: { content: unknown }[] }).content[0].content, 'clicked at 2\n\n[... 1600 tokens cut ...]')
  const body = JSON.stringify({ messages: session })
  t.is(JSON.parse(ct.trimByPriorityJson(body, { targetTokens: 5000 }).body).messages.length, trimmed.messages.length)
})

test('counting leaves the input untouched', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const before = snapshot(messages)
  ct.estimateTokens(messages)
  ct.tagMessagesWithStep(messages)
  t.deepEqual(messages, before)
})

test('countSteps and tagMessagesWithStep follow assistant tool calls', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 's' },
    { role: 'user', content: 'task' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { name: 'ls', arguments: '{}' } }, { id: 'b', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'a', content: 'A' },
    { role: 'tool', tool_call_id: 'b', content: 'B' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'c', content: 'C', extra: { kept: true } },
  ]
  t.is(ct.countSteps(messages), 2)
  const tagged = ct.tagMessagesWithStep(messages)
  t.deepEqual(tagged.map((x) => x.step), [0, 0, 1, 1, 1, 2, 2])
  t.is(tagged[6].message, messages[6])
})

test('the token cache answers repeated long texts and can be bounded', (t) => {
  const text = 'const x = 1;\n'.repeat(100) + Math.random()
  const first = ct.countTokens(text)
  const before = ct.tokenCacheStats()
  t.is(ct.countTokens(text), first)
  const after = ct.tokenCacheStats()
  t.true(after.hits > before.hits)
  t.true(after.entries <= after.capacity)
  t.throws(() => ct.setTokenCacheCapacity(-1), { code: 'INVALID_ARGUMENT', message: 'capacity: must be a non-negative integer, got -1' })
})

test('invalid messages are TypeErrors naming the index and field, with a code', (t) => {
  const cases: Array<[unknown, string, string]> = [
    [5, 'INVALID_MESSAGES', 'messages: must be an array, got number'],
    [[null], 'INVALID_MESSAGE', 'messages[0]: must be an object, got null'],
    [[{ role: 'user', content: 'a' }, { content: 'x' }], 'INVALID_MESSAGE', 'messages[1].role: is required'],
    [[{ role: 'robot' }], 'INVALID_MESSAGE', 'messages[0].role: must be one of system, developer, user, assistant, tool, got "robot"'],
    [[{ role: 'user', content: 42 }], 'INVALID_MESSAGE', 'messages[0].content: must be a string, an array of content parts or null, got number'],
    [[{ role: 'assistant', tool_calls: 'x' }], 'INVALID_MESSAGE', 'messages[0].tool_calls: must be an array, got string'],
    [[{ role: 'assistant', tool_calls: [{ function: { name: 'x' } }] }], 'INVALID_MESSAGE', 'messages[0].tool_calls[0].id: is required'],
    [[{ role: 'assistant', tool_calls: [{ id: '1', function: {} }] }], 'INVALID_MESSAGE', 'messages[0].tool_calls[0].function.name: is required'],
  ]
  for (const [input, code, message] of cases) {
    const err = t.throws<CodedError>(() => ct.estimateTokens(input as Message[]), { instanceOf: TypeError })
    t.is(err?.code, code)
    t.is(err?.message, message)
  }
})

test('bad options and arguments are TypeErrors with a code', (t) => {
  t.throws(() => ct.countTokens(5 as unknown as string), { instanceOf: TypeError, code: 'INVALID_ARGUMENT', message: 'text: must be a string, got number' })
  t.throws(() => ct.countTokens('x', 5 as never), { code: 'INVALID_OPTION', message: 'options: must be an object, got number' })
  t.throws(() => ct.countTokens('x', { encoding: 'nope' as never }), {
    code: 'INVALID_OPTION',
    message: 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "nope"',
  })
})

test('getters that throw, circular arguments and lone surrogates give clear errors or counts', (t) => {
  const getter = { role: 'user' } as Message
  Object.defineProperty(getter, 'content', { enumerable: true, get: () => { throw new Error('boom') } })
  t.throws(() => ct.estimateTokens([getter]), { code: 'INVALID_MESSAGE', message: 'messages[0].content: could not be read: boom' })
  const circular: Record<string, unknown> = {}
  circular.self = circular
  const err = t.throws<CodedError>(() => ct.estimateTokens([{ role: 'assistant', tool_calls: [{ id: '1', function: { name: 'x', arguments: circular } }] }]))
  t.is(err?.code, 'INVALID_MESSAGE')
  t.true(err?.message.startsWith('messages[0].tool_calls[0].function.arguments: could not be serialized to JSON: '))
  t.true(ct.estimateTokens([{ role: 'user', content: '\ud800 lone surrogate' }]) > 0)
  t.is(ct.estimateTokens([Object.freeze({ role: 'user', content: 'hi' }) as Message]), ct.estimateTokens([{ role: 'user', content: 'hi' }]))
  t.is(ct.estimateTokens([new Proxy({ role: 'user', content: 'hi' }, {}) as Message]), ct.estimateTokens([{ role: 'user', content: 'hi' }]))
})

test('unchanged messages are read once; a replaced field is read again', (t) => {
  const messages: Message[] = [
    { role: 'user', content: 'first ' + Math.random() },
    { role: 'assistant', content: null, tool_calls: [{ id: 'x1', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'x1', content: 'listing ' + Math.random() },
  ]
  const first = ct.estimateTokens(messages)
  const before = ct.messageCacheStats()
  t.is(ct.estimateTokens(messages), first)
  const after = ct.messageCacheStats()
  t.is(after.hits - before.hits, 3)
  t.is(after.misses, before.misses)
  // Replacing a string, mutating a nested array or adding a field is noticed.
  messages[0].content = 'a different and longer first message ' + Math.random()
  messages[1].tool_calls!.push({ id: 'x2', function: { name: 'cat', arguments: '{"path":"a.ts"}' } })
  messages[2].name = 'ls'
  const changed = ct.estimateTokens(messages)
  t.is(ct.messageCacheStats().misses - after.misses, 3)
  // Inside a tool call: a changed or deleted field the reader read is noticed...
  const call = messages[1].tool_calls![0]
  call.function.arguments = '{"path":"src/a-much-longer-file-name.ts"}'
  const misses = ct.messageCacheStats().misses
  t.not(ct.estimateTokens(messages), changed)
  t.is(ct.messageCacheStats().misses - misses, 1)
  // ...a field added in place to an existing call is not (documented): replace the object.
  ;(call as unknown as Record<string, unknown>).name = 'added'
  ct.estimateTokens(messages)
  t.is(ct.messageCacheStats().misses - misses, 1)
  call.function.arguments = '{}'
  ct.setMessageCacheCapacity(0)
  t.is(ct.estimateTokens(messages), changed)
  t.is(ct.messageCacheStats().entries, 0)
  ct.setMessageCacheCapacity(100_000)
  t.throws(() => ct.setMessageCacheCapacity(Number.NaN), { code: 'INVALID_ARGUMENT', message: 'capacity: must be a non-negative integer, got NaN' })
})

test('a value of another kind in place of one read is noticed, at the top and inside calls', (t) => {
  // The identity check decides primitives without walking them and walks objects: each swap
  // of one kind for the other, at the top of a message or inside its calls, is a change.
  const base = (): Message[] => [
    { role: 'user', content: 'kinds ' + Math.random() },
    { role: 'assistant', content: null, tool_calls: [{ id: 'k1', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'k1', content: 'listing ' + Math.random() },
    { role: 'assistant', content: null, tool_calls: [{ id: 'k2', type: 'function', function: { name: 'cat', arguments: { path: 'b' } as unknown as string } }] },
  ]
  const edits: Array<[string, (m: Message[]) => void]> = [
    ['a string content by parts', (m) => void (m[0].content = [{ type: 'text', text: m[0].content as string }])],
    ['null content by a string', (m) => void (m[1].content = 'now text')],
    ['the calls by undefined', (m) => void ((m[1] as unknown as Record<string, unknown>).tool_calls = undefined)],
    ["a call's arguments by an object", (m) => void ((m[1].tool_calls![0].function as unknown as Record<string, unknown>).arguments = { path: 'a' })],
    ["a call's object arguments by their JSON text", (m) => void ((m[3].tool_calls![0].function as unknown as Record<string, unknown>).arguments = '{"path":"b"}')],
    ['an absent field by false', (m) => void ((m[2] as unknown as Record<string, unknown>).is_error = false)],
  ]
  for (const [what, edit] of edits) {
    const messages = base()
    const first = ct.estimateTokens(messages)
    t.is(ct.estimateTokens(messages), first)
    const misses = ct.messageCacheStats().misses
    edit(messages)
    ct.estimateTokens(messages)
    t.is(ct.messageCacheStats().misses - misses, 1, what)
    const fresh = structuredClone(messages)
    t.is(ct.estimateTokens(messages), ct.estimateTokens(fresh), what)
  }
})

test.serial('the message cache is bounded in bytes too, and refuses a message heavier than half the bound', (t) => {
  const defaults = ct.messageCacheStats()
  t.is(defaults.maxBytes, 64 * 1024 * 1024)
  try {
    ct.setMessageCacheCapacity(100_000, { maxBytes: 20_000 })
    t.like(ct.messageCacheStats(), { entries: 0, bytes: 0, capacity: 100_000, maxBytes: 20_000 })
    // A message of 12,000 bytes weighs more than half the bound: read every time, never kept.
    const heavy: Message[] = [{ role: 'user', content: 'x'.repeat(12_000) }]
    ct.estimateTokens(heavy)
    ct.estimateTokens(heavy)
    t.like(ct.messageCacheStats(), { entries: 0, bytes: 0, hits: 0, misses: 2 })
    // Many light ones: the bytes held never pass the bound, the newest stay.
    const light: Message[] = Array.from({ length: 200 }, (_, i) => ({ role: 'user', content: `message ${i} `.repeat(20) }))
    ct.estimateTokens(light)
    const held = ct.messageCacheStats()
    t.true(held.bytes > 0 && held.bytes <= 20_000, String(held.bytes))
    t.true(held.entries > 0 && held.entries < 200, String(held.entries))
    // Seen once, they went to probation, an eighth of the bounds (2,500 bytes here): the newest
    // that fit are held.
    const last = light.slice(-2)
    const misses = held.misses
    ct.estimateTokens(last)
    t.is(ct.messageCacheStats().misses, misses, 'the newest messages are still held')
    // Without options the byte bound is kept; every bound empties the cache.
    ct.setMessageCacheCapacity(50)
    t.like(ct.messageCacheStats(), { entries: 0, bytes: 0, capacity: 50, maxBytes: 20_000 })
    for (const bad of [-1, Number.NaN, 0.5, Number.POSITIVE_INFINITY, '5']) {
      t.throws(() => ct.setMessageCacheCapacity(50, { maxBytes: bad as never }), { instanceOf: TypeError, code: 'INVALID_OPTION', message: /maxBytes/ })
    }
    t.throws(() => ct.setMessageCacheCapacity(50, 5 as never), { instanceOf: TypeError, code: 'INVALID_OPTION' })
    t.like(ct.messageCacheStats(), { capacity: 50, maxBytes: 20_000 }, 'a refused call changes nothing')
  } finally {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  }
})

test.serial('objects seen once stay in probation: they hold at most an eighth of the bounds and never evict a reused history', (t) => {
  const defaults = ct.messageCacheStats()
  try {
    ct.setMessageCacheCapacity(100_000, { maxBytes: 4_000_000 })
    const reused = transcript('openhands-ponyc-4595.json')
    ct.estimateTokens(reused)
    ct.estimateTokens(reused) // came back: moved out of probation
    const afterReuse = ct.messageCacheStats()
    t.is(afterReuse.hits, reused.length)
    // A stateless server: every call brings freshly parsed copies of another history.
    const text = JSON.stringify(transcript('openhands-ponyc-4593.json'))
    for (let call = 0; call < 20; call++) {
      const fresh = JSON.parse(text) as Message[]
      fresh[1].content = `${fresh[1].content} ${call}`
      ct.estimateTokens(fresh)
    }
    const afterFresh = ct.messageCacheStats()
    t.true(afterFresh.bytes - afterReuse.bytes <= 4_000_000 / 8, `${afterFresh.bytes - afterReuse.bytes} bytes held for objects seen once`)
    // The reused history is still held whole.
    ct.estimateTokens(reused)
    const again = ct.messageCacheStats()
    t.is(again.misses, afterFresh.misses)
    t.is(again.hits - afterFresh.hits, reused.length)
  } finally {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  }
})

/** Each message as its JSON text and its hidden metadata (the non-enumerable `_` fields). */
function withMetadata(messages: object[]): unknown[] {
  return messages.map((m) => [
    JSON.stringify(m),
    Object.getOwnPropertyNames(m)
      .filter((k) => !Object.prototype.propertyIsEnumerable.call(m, k))
      .map((k) => [k, (m as Record<string, unknown>)[k]]),
  ])
}

test.serial('a growing history keeps its layout from call to call, and every call decides as a fresh analysis does', (t) => {
  const defaults = ct.messageCacheStats()
  const restore = () => ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  const calls = [
    (m: Message[], k: number) => ct.trimByPriority(m, { targetTokens: Math.floor(ct.estimateTokens(m) * 0.4) + k }).messages,
    (m: Message[]) => ct.trimWithPlaceholders(m, { targetTokens: Math.floor(ct.estimateTokens(m) * 0.5) }).messages,
    (m: Message[]) => ct.truncateOldToolOutputs(m, { maxAge: 3 }),
    (m: Message[]) => ct.deduplicateToolResults(m, { deduplicationThreshold: 0 }).messages,
  ]
  try {
    for (const [name, messages] of transcripts()) {
      for (const [format, session] of [['openai', messages], ['anthropic', toAnthropic(messages)]] as const) {
        const history = session as Message[]
        // Every turn's request (before each assistant message), then a shorter one (the history
        // edited back) and the whole again.
        const ends = history.flatMap((m, i) => (i > 0 && m.role === 'assistant' ? [i] : []))
        ends.push(Math.max(1, ends[0] ?? 1), history.length)
        // Without the cache every call reads fresh messages: the layout is built anew each time.
        ct.setMessageCacheCapacity(0)
        const expected = ends.map((end, k) => calls.map((call) => withMetadata(call(history.slice(0, end), k))))
        restore()
        const before = ct.messageCacheStats().layoutExtensions
        ends.forEach((end, k) => {
          calls.forEach((call, c) => {
            t.deepEqual(withMetadata(call(history.slice(0, end), k)), expected[k][c], `${name} ${format}, call ${c} at ${end}`)
          })
        })
        // Every call after the first of each history extended the kept layout, but the shorter one.
        t.true(ct.messageCacheStats().layoutExtensions - before >= calls.length * (ends.length - 2), `${name} ${format}`)
      }
    }
    // Another encoding, another conversation, or the same one with a message replaced (as long,
    // so only the objects tell them apart) builds its own; the first one's is still kept.
    const history = transcript('openhands-ponyc-4595.json')
    const options = { targetTokens: 5_000 }
    const edited = history.map((m, i) => (i === 2 ? { ...m, content: 'The task, said otherwise.' } : m))
    ct.setMessageCacheCapacity(0)
    const fresh = withMetadata(ct.trimByPriority(edited, options).messages)
    restore()
    ct.trimByPriority(history, options)
    const held = ct.messageCacheStats().layoutExtensions
    ct.trimByPriority(history, { ...options, encoding: 'cl100k_base' })
    ct.trimByPriority(transcript('sweagent-ctf-katy.json'), options)
    t.deepEqual(withMetadata(ct.trimByPriority(edited, options).messages), fresh)
    t.is(ct.messageCacheStats().layoutExtensions, held)
    ct.trimByPriority(history, options)
    t.is(ct.messageCacheStats().layoutExtensions, held + 1)
  } finally {
    restore()
  }
})

test.serial('conversations answered in turn keep their layouts, the last four, and decide as a fresh analysis does', (t) => {
  const defaults = ct.messageCacheStats()
  const restore = () => ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  const call = (m: Message[], targetTokens: number) => ct.trimByPriority(m, { targetTokens }).messages
  try {
    // Five conversations, each grown a message a turn, answered one after the other as a server
    // with five chats does. A request after at most three others extends its conversation's layout.
    const histories = transcripts().slice(0, 5).map(([, m]) => m as Message[])
    t.is(histories.length, 5)
    // Each request ends before an assistant message, as an agent's requests do.
    const ends = histories.map((h) => h.flatMap((m, i) => (i > 0 && m.role === 'assistant' ? [i] : [])))
    const turns = Math.min(...ends.map((e) => e.length))
    t.true(turns >= 3)
    const requests: Array<[number, number]> = []
    for (let k = 0; k < turns; k++) for (const c of [0, 1, 2, 3]) requests.push([c, ends[c][k]])
    const whole = (c: number): [number, number] => [c, histories[c].length]
    requests.push(whole(4), whole(1), whole(0))
    ct.setMessageCacheCapacity(0)
    // The budgets first: estimateTokens keeps layouts too, and only the trims are counted here.
    const targets = requests.map(([c, end]) => Math.floor(ct.estimateTokens(histories[c].slice(0, end)) * 0.4))
    const expected = requests.map(([c, end], k) => withMetadata(call(histories[c].slice(0, end), targets[k])))
    restore()
    const before = ct.messageCacheStats().layoutExtensions
    requests.forEach(([c, end], k) => {
      t.deepEqual(withMetadata(call(histories[c].slice(0, end), targets[k])), expected[k], `conversation ${c} at ${end}`)
      const extended = ct.messageCacheStats().layoutExtensions - before
      // The first request of each of the four is built; then every one extends its own. A fifth
      // conversation takes the place of the least recently used (0): 1 extends its own, 0 is built.
      if (k === 3) t.is(extended, 0)
      if (k === requests.length - 3) t.is(extended, requests.length - 3 - 4, 'four conversations in turn')
    })
    t.is(ct.messageCacheStats().layoutExtensions - before, requests.length - 3 - 4 + 1, 'the fifth evicted the first, not the second')
  } finally {
    restore()
  }
})

test.serial('estimateTokens, classifyMessages, trimByAge, the cache-aware trimmer and the trimmers extend the layout (and its file operations and supersessions) of a growing history', (t) => {
  const defaults = ct.messageCacheStats()
  const restore = () => ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  try {
    restore()
    const history = transcript('openhands-ponyc-4595.json') as Message[]
    // The grown range holds file results and superseded ones, which the kept analysis carries.
    const classes = ct.classifyMessages(history.slice(0, 40))
    t.true(classes.some((c) => c.metadata.supersededBy != null) && classes.some((c) => c.metadata.filePath != null))
    const trimmer = new ct.CacheAwareTrimmer({ contextWindow: 8000 })
    const calls: Array<[string, (m: Message[]) => unknown]> = [
      ['estimateTokens', (m) => ct.estimateTokens(m)],
      ['classifyMessages', (m) => ct.classifyMessages(m)],
      ['trimByAge', (m) => ct.trimByAge(m, 1000)],
      ['CacheAwareTrimmer#trim', (m) => trimmer.trim(m)],
      // These read the kept file operations and supersessions too: each call equals a fresh analysis.
      ['trimWithPlaceholders', (m) => ct.trimWithPlaceholders(m, { targetTokens: 3000 })],
      ['deduplicateToolResults', (m) => ct.deduplicateToolResults(m, { deduplicationThreshold: 0 })],
    ]
    for (const [name, run] of calls) {
      restore()
      const seen = history.slice(0, 20)
      const fresh = ct.messageCacheStats().layoutExtensions
      run(seen)
      t.is(ct.messageCacheStats().layoutExtensions, fresh, `${name}: the first call builds`)
      for (let end = 21; end <= 40; end++) {
        const before = ct.messageCacheStats().layoutExtensions
        const got = run(history.slice(0, end))
        t.is(ct.messageCacheStats().layoutExtensions, before + 1, `${name} at ${end}: extends`)
        if (name !== 'CacheAwareTrimmer#trim') {
          // What a fresh analysis gives (the cache and its layouts emptied first).
          ct.setMessageCacheCapacity(0)
          t.deepEqual(run(history.slice(0, end)), got, `${name} at ${end}`)
          restore()
          run(history.slice(0, end))
        }
      }
    }
  } finally {
    restore()
  }
})

test.serial('a new object with the content of a message read before shares its parse: same decisions, only the reading paid again', (t) => {
  const defaults = ct.messageCacheStats()
  const restore = () => ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  try {
    for (const [name, messages] of transcripts()) {
      const formats = [['openai', messages], ['anthropic', toAnthropic(messages)], ['ai-sdk', toAiSdk(messages)]] as const
      for (const [format, history] of formats) {
        const text = JSON.stringify(history)
        const options = { targetTokens: Math.floor(ct.estimateTokens(JSON.parse(text)) * 0.3) }
        // Without the cache, every message is parsed and analysed afresh.
        ct.setMessageCacheCapacity(0)
        const expected = withMetadata(ct.trimByPriority(JSON.parse(text), options).messages)
        restore()
        // A stateless server: the same history parsed afresh on every request.
        const first = ct.trimByPriority(JSON.parse(text), options)
        const before = ct.messageCacheStats()
        const second = ct.trimByPriority(JSON.parse(text), options)
        const after = ct.messageCacheStats()
        t.is(after.hits, before.hits, `${name} ${format}: new objects are never found by identity`)
        t.is(after.contentHits - before.contentHits, history.length, `${name} ${format}: every message found by its content`)
        // From the third request on, the content that came back is found before crossing the
        // boundary: nothing is read again.
        const third = ct.trimByPriority(JSON.parse(text), options)
        t.is(ct.messageCacheStats().misses, after.misses, `${name} ${format}: nothing read on the third request`)
        t.deepEqual(withMetadata(first.messages), expected, `${name} ${format}`)
        t.deepEqual(withMetadata(second.messages), expected, `${name} ${format}`)
        t.deepEqual(withMetadata(third.messages), expected, `${name} ${format}`)
      }
    }
    // A message whose content changed is parsed afresh; the others are still found.
    const history = transcript('openhands-ponyc-4595.json')
    const text = JSON.stringify(history)
    ct.estimateTokens(JSON.parse(text))
    const changed = JSON.parse(text) as Message[]
    changed[3].content = `${changed[3].content} (changed)`
    const before = ct.messageCacheStats()
    t.is(ct.estimateTokens(changed), ct.estimateTokens(JSON.parse(JSON.stringify(changed))))
    t.is(ct.messageCacheStats().contentHits - before.contentHits, 2 * history.length - 1)
    const held = ct.messageCacheStats()
    t.true(held.contentEntries > 0 && held.contentBytes > 0)
    // Disabling the cache empties both maps.
    ct.setMessageCacheCapacity(0)
    t.like(ct.messageCacheStats(), { contentEntries: 0, contentBytes: 0, contentHits: 0 })
  } finally {
    restore()
  }
})

test.serial('a history larger than probation, first seen whole, is admitted when it comes back', (t) => {
  // A stateless server started mid-conversation gets a long history at once. It does not fit
  // probation (an eighth of the bounds), so it evicts itself from there before any of it comes
  // back; the keys evicted are remembered, so the next request admits it.
  const defaults = ct.messageCacheStats()
  try {
    ct.setMessageCacheCapacity(100_000, { maxBytes: 4_000_000 })
    const history = transcripts().flatMap(([, messages]) => messages)
    const text = JSON.stringify(history)
    const estimate = ct.estimateTokens(JSON.parse(text))
    ct.estimateTokens(JSON.parse(text)) // came back: admitted to the main maps
    const before = ct.messageCacheStats()
    t.is(ct.estimateTokens(JSON.parse(text)), estimate)
    const after = ct.messageCacheStats()
    t.is(after.contentHits - before.contentHits, history.length, 'every message found by content')
    t.true(after.contentBytes > 4_000_000 / 8, `${after.contentBytes} bytes: more than probation holds`)
  } finally {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  }
})

test.serial('new objects are found at their place in a recent request: beyond what the content index keeps per probe, conversations interleaved', (t) => {
  // Tool results that share their length, head and tail (the content index's probe, which
  // keeps four messages each), as a test runner's outputs do; two conversations interleaved,
  // each request one message longer, a message changed now and then: every output equals the
  // one without the cache, and from the third request of a conversation on, every message but
  // the new one is found by content.
  const defaults = ct.messageCacheStats()
  const output = (k: number) => `PASS test/suite.test.ts ${'.'.repeat(40)}\ncase ${String(k).padStart(3, '0')} ${'x'.repeat(60)}\n${'.'.repeat(20)}`
  const conversation = (tag: string): Message[] => [
    { role: 'system', content: `You run tests (${tag}).` },
    { role: 'user', content: `Run the suite until it passes, ${tag}.` },
    ...Array.from({ length: 24 }, (_, k) => [
      { role: 'assistant', content: null, tool_calls: [{ id: `${tag}${k}`, type: 'function', function: { name: 'bash', arguments: '{"command":"npm test"}' } }] },
      { role: 'tool', tool_call_id: `${tag}${k}`, content: output(tag === 'a' ? k : 100 + k) },
    ]).flat(),
  ] as Message[]
  try {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
    const runs = [conversation('a'), conversation('b')]
    // Two messages were added to each conversation since its request before; now and then a
    // message of it changed on the way.
    const requests: Array<{ text: string; options: { targetTokens: number } }> = []
    for (let n = 6; n <= runs[0].length; n += 2) {
      for (const history of runs) {
        const messages = history.slice(0, n)
        if (n % 10 === 0) messages[3] = { ...messages[3], content: `${messages[3].content} (${n})` }
        requests.push({ text: JSON.stringify(messages), options: { targetTokens: 0 } })
      }
    }
    ct.setMessageCacheCapacity(0)
    const expected = requests.map((r) => {
      r.options.targetTokens = Math.floor(ct.estimateTokens(JSON.parse(r.text)) * 0.5)
      return withMetadata(ct.trimByPriority(JSON.parse(r.text), r.options).messages)
    })
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
    // Between requests, an agent loop in the same process trims its own objects, found by
    // identity: that pushes none of the conversations' recent finds out.
    const held = transcript('openhands-ponyc-4595.json')
    let checked = 0
    requests.forEach(({ text, options }, k) => {
      for (let j = 0; j < 5; j++) ct.estimateTokens(held)
      const before = ct.messageCacheStats()
      const got = withMetadata(ct.trimByPriority(JSON.parse(text), options).messages)
      const after = ct.messageCacheStats()
      t.deepEqual(got, expected[k], `request ${k}`)
      // From the third request of a conversation on, only what is new since its request before
      // (two messages, and a changed one) is read, with the two new in the request before (read
      // again once: content seen once is not indexed); the rest is found before crossing.
      if (k >= 4) t.true(after.misses - before.misses <= 5, `request ${k}: ${after.misses - before.misses} read`)
      checked++
    })
    t.true(checked > 20)
  } finally {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  }
})

test('flagging a held message as a summary is noticed, as any field the reader reads', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: `task ${Math.random()}` },
    { role: 'assistant', content: `an older reply ${Math.random()} `.repeat(5) },
    { role: 'user', content: 'next' },
    { role: 'assistant', content: 'ok' },
  ]
  const priorities = () => ct.classifyMessages(messages).map((c) => c.priority)
  t.not(priorities()[2], ct.ContentPriority.SUMMARIZED)
  ;(messages[2] as Message & { _summary?: boolean })._summary = true
  t.is(priorities()[2], ct.ContentPriority.SUMMARIZED)
  delete (messages[2] as Message & { _summary?: boolean })._summary
  ;(messages[2] as Message & { isSummary?: boolean }).isSummary = true
  t.is(priorities()[2], ct.ContentPriority.SUMMARIZED)
})

/**
 * Copies of `m`, each with one thing the reader reads changed: a string, a flag, a key added to
 * or removed from a nested object, a field inside an object-valued `input`/`arguments`, a part
 * added, a top-level field added. Each change is unique (a random tag).
 */
function mutationsOf(m: Record<string, unknown>, tag: string): Array<Record<string, unknown>> {
  const NESTED = ['type', 'text', 'refusal', 'id', 'name', 'function', 'arguments', 'input', 'tool_use_id', 'content', 'is_error', 'isError', 'thinking', 'toolCallId', 'toolName', 'output', 'value', 'providerExecuted']
  const out: Array<Record<string, unknown>> = []
  const clone = () => JSON.parse(JSON.stringify(m)) as Record<string, unknown>
  // Paths to the leaves the reader reads (through NESTED keys; anything inside an object-valued
  // arguments/input/value, which it reads as JSON text).
  const leaves: Array<Array<string | number>> = []
  const serialisedLeaves: Array<Array<string | number>> = []
  const nestedObjects: Array<Array<string | number>> = []
  const visit = (v: unknown, path: Array<string | number>, serialised: boolean, depth: number) => {
    if (depth > 8) return
    if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') (serialised ? serialisedLeaves : leaves).push(path)
    else if (Array.isArray(v)) v.forEach((x, i) => visit(x, [...path, i], serialised, depth + 1))
    else if (v !== null && typeof v === 'object') {
      if (!serialised && path.length > 1) nestedObjects.push(path)
      for (const [k, x] of Object.entries(v)) {
        if (serialised || NESTED.includes(k)) visit(x, [...path, k], serialised || (['arguments', 'input', 'value'].includes(k) && typeof x === 'object'), depth + 1)
      }
    }
  }
  for (const k of ['role', 'content', 'tool_calls', 'tool_call_id', 'name', 'is_error', 'isError']) if (k in m) visit(m[k], [k], false, 0)
  const at = (o: Record<string, unknown>, path: Array<string | number>) => path.slice(0, -1).reduce<any>((x, k) => x[k], o)
  for (const path of [...serialisedLeaves.slice(0, 2), ...leaves.filter((p) => p[0] !== 'role').slice(0, 4)]) {
    const c = clone()
    const parent = at(c, path)
    const key = path[path.length - 1]
    const v = parent[key]
    parent[key] = typeof v === 'string' ? `${v} ${tag}` : typeof v === 'boolean' ? !v : v + 1
    out.push(c)
  }
  const first = nestedObjects[0]
  if (first) {
    const added = clone()
    const target = at(added, [...first, ''])
    target.thinking = tag
    out.push(added)
    const keys = Object.keys(at(m, [...first, ''])).filter((k) => NESTED.includes(k))
    if (keys.length >= 2) {
      const removed = clone()
      delete at(removed, [...first, ''])[keys[keys.length - 1]]
      out.push(removed)
    }
  }
  if (Array.isArray(m.content)) {
    const part = clone()
    ;(part.content as unknown[]).push({ type: 'text', text: tag })
    out.push(part)
  }
  const flagged = clone()
  flagged.isError = true
  out.push(flagged)
  const named = clone()
  named.name = tag
  out.push(named)
  return out
}

test.serial('a new object is found by content only when every value the reader reads is equal', (t) => {
  const defaults = ct.messageCacheStats()
  let checked = 0
  try {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
    for (const [name, transcriptMessages] of transcripts()) {
      // Each message's text made unique, so that every message is indexed under its own probe
      // (equal texts share one, which holds a few messages) and a copy reads exactly the
      // changed message afresh.
      // Tool-call ids are renamed too, so that no message equals one another test read.
      const messages = transcriptMessages.map((m, i) => ({
        ...m,
        ...(typeof m.content === 'string' ? { content: `${m.content} #${name}:${i}` } : {}),
        ...(m.tool_call_id ? { tool_call_id: `${m.tool_call_id}~u` } : {}),
        ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ ...c, id: `${c.id}~u` })) } : {}),
      }))
      const formats = [['openai', messages], ['anthropic', toAnthropic(messages)], ['ai-sdk', toAiSdk(messages)]] as const
      for (const [format, history] of formats) {
        const text = JSON.stringify(history)
        // Content seen once is not indexed in JavaScript (it holds nothing there): the second
        // copy is read again, found by its parse; it came back, so now it is indexed.
        ct.estimateTokens(JSON.parse(text))
        const once = ct.messageCacheStats()
        ct.estimateTokens(JSON.parse(text))
        t.is(ct.messageCacheStats().misses - once.misses, history.length, `${name} ${format}: read again once`)
        const before = ct.messageCacheStats()
        ct.estimateTokens(JSON.parse(text))
        t.is(ct.messageCacheStats().contentHits - before.contentHits, history.length, `${name} ${format}: indexed`)
        for (let i = 0; i < history.length; i += 3) {
          for (const mutated of mutationsOf(history[i] as unknown as Record<string, unknown>, `~${Math.random()}`)) {
            // The index keeps a few messages per probe: the changed copies read before may
            // have displaced the original, which a read of the history puts back.
            ct.estimateTokens(JSON.parse(text))
            const copy = JSON.parse(text) as Array<Record<string, unknown>>
            copy[i] = mutated
            const a = ct.messageCacheStats()
            const label = `${name} ${format} message ${i}: ${JSON.stringify(mutated).slice(0, 200)}`
            try {
              ct.estimateTokens(copy as never)
            } catch (err) {
              // Read, and refused (a removed key the format needs): not taken from the cache.
              t.is((err as CodedError).code, 'INVALID_MESSAGE', label)
              checked++
              continue
            }
            const b = ct.messageCacheStats()
            // The changed message is read afresh (the parse may still equal a held one: a
            // tool call's `type`, say, is not part of a parsed message); the others are found.
            t.is(b.misses - a.misses, 1, label)
            t.true(b.contentHits - a.contentHits >= history.length - 1, label)
            checked++
          }
        }
      }
    }
  } finally {
    ct.setMessageCacheCapacity(defaults.capacity, { maxBytes: defaults.maxBytes })
  }
  t.true(checked > 500, String(checked))
})

test('a model name is looked up in any case and without its provider prefix (OpenRouter, LiteLLM)', async (t) => {
  const text = '東京の天気は晴れです。 Ünïcode façade {"k": [1, 2, 3]}\n\tindentation    12345678'
  const o200k = encodeO200k(text).length
  const cl100k = encodeCl100k(text).length
  t.not(o200k, cl100k)
  for (const model of ['gpt-4', 'GPT-4', 'openai/gpt-4', 'azure/gpt-4', 'OpenAI/GPT-4-0613', 'openrouter/openai/gpt-4', 'azure/gpt-35-turbo', 'litellm/openai/gpt-3.5-turbo']) {
    t.is(ct.countTokens(text, { model }), cl100k, model)
    t.is(ct.estimateTokens([{ role: 'user', content: text }], { model }), ct.estimateTokens([{ role: 'user', content: text }], { encoding: 'cl100k_base' }), model)
  }
  for (const model of ['gpt-4o', 'openrouter/openai/gpt-4o', 'GPT-4o-mini', 'anthropic/claude-sonnet-4', 'claude-sonnet-4', 'openai/gpt-9000', 'openai/']) {
    t.is(ct.countTokens(text, { model }), o200k, model)
  }
  t.is(ct.countTokens(text, { model: 'groq/openai/gpt-oss-120b' }), ct.countTokens(text, { encoding: 'o200k_harmony' }))
  // The CLI knows them too (it warns about the models the addon does not know).
  const { encodingForModel, unknownModelWarning } = await import('../cli/models.mjs')
  t.is(encodingForModel('openai/gpt-4'), 'cl100k_base')
  t.is(encodingForModel('GPT-4'), 'cl100k_base')
  t.is(encodingForModel('openrouter/openai/gpt-4o'), 'o200k_base')
  t.is(encodingForModel('groq/openai/gpt-oss-120b'), 'o200k_harmony')
  t.is(unknownModelWarning('azure/gpt-4'), null)
  t.is(encodingForModel('anthropic/claude-sonnet-4'), encodingForModel('claude-sonnet-4'))
  t.not(unknownModelWarning('anthropic/claude-sonnet-4'), null)
})

test.serial('an unknown model counts with o200k_base and emits one process warning per name', async (t) => {
  const warnings: Error[] = []
  const listen = (w: Error) => void warnings.push(w)
  process.on('warning', listen)
  try {
    const text = 'How many tokens is this sentence?'
    const messages: Message[] = [{ role: 'user', content: text }]
    t.is(ct.countTokens(text, { model: 'acme-llm-7' }), encodeO200k(text).length)
    ct.estimateTokens(messages, { model: 'acme-llm-7' })
    ct.trimByPriority(messages, { targetTokens: 100, model: 'acme-llm-7' })
    new ct.CacheAwareTrimmer({ contextWindow: 1000, model: 'acme-llm-8' })
    // Known names (any case, with a provider prefix), and a model the encoding overrides, are silent.
    ct.countTokens(text, { model: 'GPT-4o' })
    ct.countTokens(text, { model: 'openrouter/openai/gpt-4o' })
    ct.countTokens(text, { model: 'acme-llm-9', encoding: 'cl100k_base' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const ours = warnings.filter((w) => (w as CodedError).code === 'CONTEXT_TRIM_UNKNOWN_MODEL')
    t.deepEqual(ours.map((w) => w.message), [
      'unknown model "acme-llm-7": counting with o200k_base (the encoding of gpt-4o and later models); name a known model (gpt-4o, gpt-4.1, gpt-4, gpt-3.5-turbo, o3, gpt-oss-120b, …) or give `encoding`',
      'unknown model "acme-llm-8": counting with o200k_base (the encoding of gpt-4o and later models); name a known model (gpt-4o, gpt-4.1, gpt-4, gpt-3.5-turbo, o3, gpt-oss-120b, …) or give `encoding`',
    ])
    t.true(ours.every((w) => w.name === 'ContextTrimWarning'))
  } finally {
    process.off('warning', listen)
  }
})
