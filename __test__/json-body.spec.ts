// trimByPriorityJson and trimWithPlaceholdersJson (issue 20): a request body given as JSON text
// is trimmed as trimByPriority / trimWithPlaceholders trim JSON.parse of it, on every transcript
// in the three formats; kept messages are their original bytes; the body's other fields are
// kept byte for byte; messages seen before are found by their text.
import test, { type ExecutionContext } from 'ava'

import type { Message } from '../index.js'
import { toAiSdk, toAnthropic } from './convert.js'
import { ct, transcripts, type CodedError } from './helpers.js'

type Format = 'openai' | 'anthropic' | 'ai-sdk'
const FORMATS: Array<[Format, (m: Message[]) => unknown[]]> = [
  ['openai', (m) => m],
  ['anthropic', (m) => toAnthropic(m)],
  ['ai-sdk', (m) => toAiSdk(m)],
]
const STRATEGIES = [
  ['trimByPriority', ct.trimByPriority, ct.trimByPriorityJson],
  ['trimWithPlaceholders', ct.trimWithPlaceholders, ct.trimWithPlaceholdersJson],
] as const

for (const [name, onObjects, onJson] of STRATEGIES) {
  test(`${name}Json decides as ${name} does on JSON.parse of the body, on every transcript in three formats at 10-90%`, (t) => {
    let compared = 0
    let changed = 0
    for (const [file, openai] of transcripts()) {
      for (const [format, convert] of FORMATS) {
        const messages = convert(openai)
        const text = JSON.stringify(messages)
        const total = ct.estimateTokens(messages as never, { format })
        for (const share of [0.1, 0.3, 0.5, 0.7, 0.9]) {
          const options = { targetTokens: Math.floor(total * share), format }
          const want = onObjects(JSON.parse(text), options as never)
          const got = onJson(text, options as never)
          const where = `${file} ${format} ${share}`
          t.deepEqual(JSON.parse(got.body), JSON.parse(JSON.stringify(want.messages)), where)
          const parsed = JSON.parse(text) as unknown[]
          const want2 = onObjects(parsed as never, options as never)
          const removed = want2.droppedMessages.map((c) => parsed.indexOf(c.message))
          t.deepEqual([...got.dropped, ...got.replaced].sort((a, b) => a - b), removed.sort((a, b) => a - b), where)
          t.is(got.savedTokens, want.savedTokens, where)
          t.is(got.totalTokens, want.totalTokens, where)
          t.is(got.overBudget, want.overBudget, where)
          compared++
          if (got.dropped.length + got.replaced.length > 0) changed++
        }
      }
    }
    t.true(compared > 100, `${compared} comparisons`)
    t.true(changed > compared / 2, `${changed} of ${compared} trimmed something`)
  })
}

test('the format is detected as for objects, and an auto-detected body decides the same', (t) => {
  const [, openai] = transcripts()[0]
  for (const [, convert] of FORMATS) {
    const messages = convert(openai)
    const text = JSON.stringify(messages)
    const options = { targetTokens: Math.floor(ct.estimateTokens(messages as never) / 3) }
    t.deepEqual(JSON.parse(ct.trimByPriorityJson(text, options).body), JSON.parse(JSON.stringify(ct.trimByPriority(JSON.parse(text), options).messages)))
  }
})

test('kept messages are their original bytes, and the body around the messages is kept byte for byte', (t) => {
  const [, messages] = transcripts()[0]
  const inner = JSON.stringify(messages, null, 2)
  const body = `{\n  "model": "gpt-4o",\n  "messages": ${inner},\n  "max_tokens": 512, "stream": true\n}`
  const options = { targetTokens: Math.floor(ct.estimateTokens(messages) / 2) }
  const got = ct.trimByPriorityJson(body, options)
  const start = body.indexOf('[')
  t.true(got.body.startsWith(body.slice(0, start)))
  t.true(got.body.endsWith(body.slice(start + inner.length)))
  const out = JSON.parse(got.body) as { model: string; messages: Message[]; max_tokens: number; stream: boolean }
  t.is(out.model, 'gpt-4o')
  t.is(out.max_tokens, 512)
  const want = ct.trimByPriority(messages, options)
  t.deepEqual(out.messages, JSON.parse(JSON.stringify(want.messages)))
  // Every kept message appears with its pretty-printed bytes.
  const replaced = new Set(got.replaced)
  const dropped = new Set(got.dropped)
  let kept = 0
  messages.forEach((m, i) => {
    if (dropped.has(i) || replaced.has(i)) return
    const bytes = JSON.stringify(m, null, 2).replace(/\n/g, '\n  ')
    t.true(got.body.includes(bytes), `message ${i}`)
    kept++
  })
  t.true(kept > 0 && got.dropped.length > 0)
})

test('a Buffer is read as UTF-8 without JSON.parse, and the body comes back as a Buffer with the same bytes as from the string', (t) => {
  const messages = [
    { role: 'system', content: 'Be brief. 東京 🚀' },
    { role: 'user', content: 'é'.repeat(400) },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'and now?' },
  ]
  const text = JSON.stringify(messages)
  const options = { targetTokens: 60 }
  const fromString = ct.trimByPriorityJson(text, options)
  t.is(typeof fromString.body, 'string')
  for (const bytes of [Buffer.from(text), new TextEncoder().encode(text)]) {
    const got = ct.trimByPriorityJson(bytes, options)
    t.true(Buffer.isBuffer(got.body))
    t.deepEqual({ ...got, body: new TextDecoder().decode(got.body) }, fromString)
  }
  t.true(fromString.dropped.length > 0)
})

// In a `u` pattern a surrogate pair is one code point: this matches lone surrogates only.
const LONE_SURROGATE = /[\ud800-\udfff]/u

test('a string body is read and written unit for unit: ASCII, Latin-1, astral characters at every offset, lone surrogates read as U+FFFD', (t) => {
  // The string path copies UTF-16 units across and transcodes them 16 at a time where they are
  // ASCII: characters on each side of a chunk's edge, in kept and in cut messages.
  const pieces = ['é', '€', '🚀', '\u0080', '\u00ff', '\uffff', '\u{10000}']
  const texts = pieces.flatMap((p, k) => [0, 1, 14, 15, 16, 17, 31, 33].map((lead) => 'x'.repeat(lead) + p + 'y'.repeat(k) + pieces[(k + 2) % pieces.length]))
  const long = (seed: string) => Array.from({ length: 300 }, (_, i) => `${seed} line ${i} ${texts[i % texts.length]}`).join('\n')
  const bodies: Array<[string, string]> = [
    ['ASCII only', JSON.stringify([{ role: 'user', content: 'read it' }, { role: 'assistant', content: 'a'.repeat(3000) }, { role: 'user', content: 'go on' }])],
    ['characters at every offset', JSON.stringify([{ role: 'system', content: texts.join(' ') }, ...texts.map((c) => ({ role: 'user', content: c })), { role: 'assistant', content: long('cut me') }, { role: 'user', content: texts[5] }])],
    // A raw lone surrogate, and escaped ones (as JSON.stringify writes them): the objects'
    // reader reads U+FFFD for them, as V8's UTF-8 writes them.
    ['lone surrogates', `[{"role":"user","content":"a\ud800b \udc00 ${'z'.repeat(20)}\ud83d"},{"role":"assistant","content":${JSON.stringify(long('\ud800 cut'))}},{"role":"user","content":"end\udfff"}]`],
    // In an arguments object, which the objects' reader counts as its JSON.stringify text (the
    // escape itself), and in an arguments string (U+FFFD).
    ['lone surrogates in arguments', JSON.stringify([
      { role: 'user', content: 'read them' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: { path: 'a\ud800b\udfff' } } }, { id: 'c2', type: 'function', function: { name: 'read', arguments: '{"path":"\ud800"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: long('first') },
      { role: 'tool', tool_call_id: 'c2', content: long('second') },
      { role: 'user', content: 'go on' },
    ])],
    // Characters of the last private-use plane beside escaped lone surrogates: the marks the
    // reader uses for the lone ones are never taken for them.
    ['private-use characters beside lone surrogates', JSON.stringify([
      { role: 'user', content: `\u{10f800}\u{10ffff} then \ud800 ${'\u{10f8ff}'.repeat(30)}` },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: { path: '\u{10fc00}\udbff.txt' } } }] },
      { role: 'tool', tool_call_id: 'c1', content: long('\u{10f800}\udc00 read') },
      { role: 'user', content: 'go on' },
    ])],
  ]
  for (const [what, text] of bodies) {
    const total = ct.estimateTokens(JSON.parse(text))
    for (const share of [1, 0.5, 0.2]) {
      const options = { targetTokens: Math.floor(total * share) }
      const fromString = ct.trimByPriorityJson(text, options)
      const fromBuffer = ct.trimByPriorityJson(Buffer.from(text), options)
      const where = `${what} at ${share}`
      // A raw lone surrogate stays where its message is kept (the string's own units); the
      // Buffer of the string has U+FFFD for it, and so has what is trimmed from it.
      t.is(fromString.body.replace(new RegExp(LONE_SURROGATE, 'gu'), '\ufffd'), new TextDecoder().decode(fromBuffer.body), where)
      // Counted as the objects JSON.parse makes of it (a lone surrogate as U+FFFD).
      if (share === 1) t.is(fromString.totalTokens, total, where)
      const parsed = JSON.parse(text) as unknown[]
      const removed = ct.trimByPriority(parsed as never, options).droppedMessages.map((c) => parsed.indexOf(c.message))
      t.deepEqual([...fromString.dropped, ...fromString.replaced].sort((a, b) => a - b), removed.sort((a, b) => a - b), where)
      if (share === 1) t.is(fromString.body, text, where)
      else t.true(fromString.replaced.length + fromString.dropped.length > 0, where)
    }
  }
})

test('arguments objects are counted from their JSON.stringify text, key order and number spelling included', (t) => {
  const body = `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool-call","toolCallId":"c1","toolName":"edit",
    "input":{"z":1.0,"2":[1e2,-0.0,1.5e-7],"a":"x","1":true,"a":"last"}}]},
    {"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"edit","output":{"type":"text","value":"done"}}]}]`
  const options = { targetTokens: 1000, format: 'ai-sdk' as const }
  const got = ct.trimByPriorityJson(body, options)
  t.is(got.totalTokens, ct.trimByPriority(JSON.parse(body), options).totalTokens)
  t.is(got.totalTokens, ct.estimateTokens(JSON.parse(body), { format: 'ai-sdk' }))
})

test('messages seen on an earlier call are found by their text, in a body parsed nowhere', (t) => {
  const [, messages] = transcripts()[1]
  const options = { targetTokens: Math.floor(ct.estimateTokens(messages) / 2) }
  ct.setMessageCacheCapacity(ct.messageCacheStats().capacity)
  const first = ct.trimByPriorityJson(JSON.stringify(messages), options)
  const afterFirst = ct.messageCacheStats()
  t.is(afterFirst.bodyHits, 0)
  t.is(afterFirst.bodyMisses, messages.length)
  t.true(afterFirst.bodyEntries > 0 && afterFirst.bodyBytes > 0)
  // The next request: the same history and one more message, as a new string. Its leading
  // messages are where they were in the previous body: found in place, not even by their text.
  const next = [...messages, { role: 'user', content: 'one more thing' }] as Message[]
  const second = ct.trimByPriorityJson(JSON.stringify(next), options)
  const afterSecond = ct.messageCacheStats()
  t.is(afterSecond.recentBodyHits, messages.length)
  t.is(afterSecond.bodyHits, 0)
  t.is(afterSecond.bodyMisses, messages.length + 1)
  t.is(afterSecond.recentBodies, 1)
  t.is(afterSecond.recentBodyBytes, Buffer.byteLength(JSON.stringify(next)))
  // The same messages in another order: found by their text.
  const reordered = [next[0], ...next.slice(1).reverse()]
  ct.trimByPriorityJson(JSON.stringify(reordered), options)
  t.is(ct.messageCacheStats().bodyHits, next.length - 1)
  t.deepEqual(JSON.parse(second.body), JSON.parse(JSON.stringify(ct.trimByPriority(JSON.parse(JSON.stringify(next)), options).messages)))
  t.truthy(first.body)
  // A cache of 0 still trims the same.
  ct.setMessageCacheCapacity(0)
  t.deepEqual(ct.trimByPriorityJson(JSON.stringify(next), options), second)
  ct.setMessageCacheCapacity(100_000)
})

test('bad bodies are coded errors naming the body, the message index or the field', (t) => {
  const options = { targetTokens: 100 }
  const code = (f: () => unknown) => {
    const err = t.throws(f) as CodedError
    return `${err.code}: ${err.message}`
  }
  t.regex(code(() => ct.trimByPriorityJson([] as never, options)), /^INVALID_ARGUMENT: .*body.*must be a string or a Uint8Array, got array/)
  t.regex(code(() => ct.trimByPriorityJson('[{"role":"user"', options)), /^INVALID_ARGUMENT: .*body.*is not valid JSON/)
  t.regex(code(() => ct.trimByPriorityJson('{"model":"m"}', options)), /^INVALID_ARGUMENT: .*body.*messages/)
  t.regex(code(() => ct.trimByPriorityJson('{"messages":{}}', options)), /^INVALID_ARGUMENT: .*messages must be an array, got object/)
  t.regex(code(() => ct.trimByPriorityJson(Buffer.from([0x5b, 0xff, 0x5d]), options)), /^INVALID_ARGUMENT: .*body.*not UTF-8/)
  t.regex(code(() => ct.trimByPriorityJson(new Int16Array(2) as never, options)), /^INVALID_ARGUMENT: .*body/)
  // The same message errors as trimByPriority gives for the parsed body.
  for (const body of ['[{"role":"user","content":"a"}, 3]', '[{"role":"user","content":"a"},{"role":"wizard","content":"b"}]', '[{"role":"user","content":{"x":1}}]']) {
    const err = t.throws(() => ct.trimByPriority(JSON.parse(body), options)) as CodedError
    t.is(code(() => ct.trimByPriorityJson(body, options)), `${err.code}: ${err.message}`, body)
  }
  // A lone surrogate escape, which JSON.parse takes, is no error: counted as U+FFFD (below).
  t.is(ct.trimByPriorityJson('[{"role":"user","content":"\\ud800"}]', options).totalTokens, ct.estimateTokens([{ role: 'user', content: '\ufffd' }]))
  t.regex(code(() => ct.trimByPriorityJson('[]', {} as never)), /^INVALID_OPTION: .*targetTokens/)
  t.regex(code(() => ct.trimByPriorityJson('[]', { targetTokens: 10, summarizer: async () => 's' } as never)), /summarizer/)
})

test('depth: an unterminated million-level body is a coded error, and a field no format reads is skipped at any depth, as for objects', (t) => {
  const err = t.throws(() => ct.trimByPriorityJson('['.repeat(1_000_000), { targetTokens: 10 })) as CodedError
  t.is(err.code, 'INVALID_ARGUMENT')
  t.regex(err.message, /body.*is not valid JSON/)
  const deep = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)
  const body = `[{"role":"user","content":"go","meta":${deep}},{"role":"assistant","content":"ok"}]`
  const options = { targetTokens: 1000 }
  const got = ct.trimByPriorityJson(body, options)
  t.is(got.totalTokens, ct.trimByPriority(JSON.parse(body), options).totalTokens)
  t.is(got.body, body)
})

test('bodies seen once hold at most the probation eighth and leave a body that comes back in place', (t) => {
  const [, messages] = transcripts()[0]
  const maxBytes = 8 << 20
  ct.setMessageCacheCapacity(100_000, { maxBytes })
  const options = { targetTokens: Math.floor(ct.estimateTokens(messages) / 2) }
  const working = JSON.stringify(messages)
  ct.trimByPriorityJson(working, options)
  // It came back, found in place in the body before (not by its text): promoted out of
  // probation all the same, so the one-off bodies below do not evict it.
  const inPlace = ct.messageCacheStats().recentBodyHits
  ct.trimByPriorityJson(working, options)
  t.is(ct.messageCacheStats().recentBodyHits - inPlace, messages.length)
  for (let i = 0; i < 40; i++) {
    // A request no one sends twice: every message's bytes are new.
    const once = JSON.stringify(messages.map((m) => ({ ...m, content: typeof m.content === 'string' ? `${m.content} #${i}` : m.content, request: i })))
    ct.trimByPriorityJson(once, options)
  }
  // Four other bodies came since: its own is no longer outlined, its messages are found by text.
  const held = ct.messageCacheStats()
  const before = held.bodyHits
  ct.trimByPriorityJson(working, options)
  t.is(ct.messageCacheStats().bodyHits - before, messages.length, 'the working set is still held whole')
  ct.setMessageCacheCapacity(100_000, { maxBytes })
  ct.trimByPriorityJson(working, options)
  ct.trimByPriorityJson(working, options)
  const workingOnly = ct.messageCacheStats().bodyBytes
  t.true(held.bodyBytes - workingOnly <= maxBytes / 8, `${held.bodyBytes - workingOnly} bytes held for bodies seen once`)
  ct.setMessageCacheCapacity(100_000, { maxBytes: 64 << 20 })
})

/** Each request trimmed by both JSON entry points, as a string or a Buffer, bodies as text. */
function trimEach(requests: Array<{ text: string; options: { targetTokens: number } }>, asBuffer: boolean) {
  return requests.map(({ text, options }) => {
    const input = asBuffer ? Buffer.from(text) : text
    const r = ct.trimByPriorityJson(input, options)
    const w = ct.trimWithPlaceholdersJson(input, options)
    return [{ ...r, body: Buffer.from(r.body).toString() }, { ...w, body: Buffer.from(w.body).toString() }]
  })
}

/**
 * `requests` trimmed with the message cache disabled, then with it, as strings and as Buffers:
 * every cached result equals the uncached one. Returns how much the cache statistic `grew`
 * rose in each cached run (strings, then Buffers).
 */
function decideAsUncached(
  t: ExecutionContext,
  requests: Array<{ where: string; text: string; options: { targetTokens: number } }>,
  grew: 'recentBodyHits' | 'layoutExtensions',
): number[] {
  ct.setMessageCacheCapacity(0)
  const alone = trimEach(requests, false)
  ct.setMessageCacheCapacity(100_000)
  return [false, true].map((asBuffer) => {
    const before = ct.messageCacheStats()[grew]
    const got = trimEach(requests, asBuffer)
    requests.forEach((r, i) => t.deepEqual(got[i], alone[i], `${r.where} ${asBuffer ? 'Buffer' : 'string'}`))
    return ct.messageCacheStats()[grew] - before
  })
}

test('a body that starts as a recent one is trimmed as on its own: every transcript grown a message at a time, interleaved, as strings and Buffers', (t) => {
  // Five conversations interleaved (one more than the bodies outlined), each request one
  // message longer, some with a field after the messages, some with a message changed on the
  // way: every result equals the result with the cache disabled.
  const runs = transcripts().slice(0, 5).map(([file, messages], k) => ({ file, messages, k }))
  const body = (messages: Message[], k: number) =>
    k % 2 === 0 ? JSON.stringify(messages) : `{"model":"m","messages":${JSON.stringify(messages)},"stream":true}`
  const requests: Array<{ where: string; text: string; options: { targetTokens: number } }> = []
  const longest = Math.max(...runs.map((r) => r.messages.length))
  for (let n = 2; n <= longest; n += 3) {
    for (const { file, messages, k } of runs) {
      if (n > messages.length) continue
      let history = messages.slice(0, n)
      // Now and then an earlier message is edited in place (a client that rewrites history).
      if (n % 7 === 0) history = history.map((m, i) => (i === n >> 1 && typeof m.content === 'string' ? { ...m, content: `${m.content} (edited)` } : m))
      const targetTokens = Math.floor(ct.estimateTokens(history) * (0.3 + 0.1 * (k % 3)))
      requests.push({ where: `${file} ${n}`, text: body(history, k), options: { targetTokens } })
    }
  }
  for (const found of decideAsUncached(t, requests, 'recentBodyHits')) t.true(found > requests.length, 'messages were found in place')
  t.true(ct.messageCacheStats().recentBodies <= 4)
  // A disabled cache outlines nothing.
  ct.setMessageCacheCapacity(0)
  ct.trimByPriorityJson(requests[0].text, requests[0].options)
  t.is(ct.messageCacheStats().recentBodies, 0)
  ct.setMessageCacheCapacity(100_000)
})

test('the bodies of a growing conversation extend its layout from call to call, and decide as on their own', (t) => {
  // One conversation grown a message a request, as a server gets its bodies: each request after
  // the first extends the layout kept for the one before (its messages are found in place).
  for (const [file, messages] of transcripts().slice(0, 3)) {
    const requests = messages.slice(2, 60).map((_, k) => {
      const history = messages.slice(0, k + 3)
      return { where: `${file} ${k + 3}`, text: JSON.stringify(history), options: { targetTokens: Math.floor(ct.estimateTokens(history) * 0.4) } }
    })
    // Two calls a request, each extending the layout of the call before but the first.
    for (const extended of decideAsUncached(t, requests, 'layoutExtensions')) t.true(extended >= 2 * requests.length - 1, file)
  }
})

test('a kept message keeps its lone surrogates, raw in a string body or escaped; a rewritten one has U+FFFD', (t) => {
  // The repro: an escaped lone surrogate (as JSON.stringify writes one), and a raw one in the
  // string (a JavaScript string cut in the middle of an emoji has one), kept as they are.
  for (const text of ['[{"role":"user","content":"a\\uD800b"}]', '[{"role":"user","content":"a\uD800b"}]']) {
    t.is(ct.trimByPriorityJson(text, { targetTokens: 1000 }).body, text)
    t.is(ct.trimWithPlaceholdersJson(text, { targetTokens: 1000 }).body, text)
  }
  // Raw ones in kept messages, outside the messages array and beside astral characters; one in
  // a dropped message, gone with it.
  const kept = [
    '{"role":"system","content":"sys \udc00"}',
    '{"role":"user","content":"a\ud800b 😀 \udbff"}',
    '{"role":"user","content":"c\udc00d"}',
    '{"role":"assistant","content":"ok \ud83d"}',
    '{"role":"user","content":"last 🚀 \udfff"}',
  ]
  const dropped = `{"role":"assistant","content":"${'x '.repeat(3000)}\ud800"}`
  const body = (messages: string[]) => `{"system":"\udbff","messages":[${messages.join(',')}],"x":"é\udfff"}`
  const text = body([...kept.slice(0, 2), dropped, ...kept.slice(2)])
  for (let call = 0; call < 2; call++) {
    const got = ct.trimByPriorityJson(text, { targetTokens: 200 })
    t.deepEqual(got.dropped, [2])
    t.is(got.body, body(kept), `call ${call}`)
    // Counted as the Buffer of the string (U+FFFD for each), with the same decisions.
    const fromBuffer = ct.trimByPriorityJson(Buffer.from(text), { targetTokens: 200 })
    t.deepEqual({ ...fromBuffer, body: new TextDecoder().decode(fromBuffer.body) }, { ...got, body: Buffer.from(got.body).toString() })
  }
  // A Buffer holds no lone surrogate (UTF-8 cannot): its escapes, and its bytes, stay.
  const escaped = Buffer.from('{"messages":[{"role":"user","content":"a\\ud800b"},{"role":"user","content":"\\udfff"}],"s":"\\udc00"}')
  t.deepEqual(Buffer.from(ct.trimByPriorityJson(escaped, { targetTokens: 1000 }).body), escaped)
  // A message rewritten (a placeholder for a long tool result) is new text: U+FFFD for its lone
  // surrogate; the kept ones around it keep theirs.
  const messages = [
    { role: 'user', content: 'read a.ts \ud800' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: `${'line of a.ts\n'.repeat(400)}\udc00` },
    { role: 'assistant', content: 'done' },
    { role: 'user', content: 'go on \udbff' },
  ]
  // JSON.stringify escapes lone surrogates: put them back raw.
  const raw = JSON.stringify(messages).replace(/\\u(d[89a-f][0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  t.true(LONE_SURROGATE.test(raw))
  // A placeholder, and a cut.
  for (const w of [ct.trimWithPlaceholdersJson(raw, { targetTokens: 300 }), ct.trimByPriorityJson(raw, { targetTokens: 100 })]) {
    t.deepEqual([w.replaced, w.dropped], [[2], []])
    const out = JSON.parse(w.body) as Array<{ content: string }>
    t.is(out[0].content, 'read a.ts \ud800')
    t.is(out[4].content, 'go on \udbff')
    t.false(LONE_SURROGATE.test(out[2].content))
    t.true(w.body.startsWith(raw.slice(0, raw.indexOf(',{"role":"tool"'))))
    t.true(w.body.endsWith(raw.slice(raw.indexOf(',{"role":"assistant","content":"done"}'))))
  }
})
