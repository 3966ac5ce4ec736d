// Issue 42, parts 4 and 5: nothing is counted as nothing (images by the size in their header at
// each provider's rate, audio by its duration, unknown parts by their JSON text), and bad input
// is refused the same way by every entry point and adapter. The figures are docs/formats.md's.
import test from 'ava'
import { HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'

import { trimPrepareStep } from '../adapters/ai-sdk.mjs'
import { toOpenAIMessages, trimBaseMessages } from '../adapters/langchain.mjs'
import { ct, type CodedError } from './helpers.js'
import type { AnyMessage } from '../index.js'

type Format = 'openai' | 'anthropic' | 'ai-sdk'

/** Tiny hand-made headers of each image format, `w` × `h`: all the library reads of an image. */
function png(w: number, h: number): Buffer {
  const b = Buffer.alloc(33)
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').copy(b)
  b.writeUInt32BE(w, 16)
  b.writeUInt32BE(h, 20)
  return b
}
function gif(w: number, h: number): Buffer {
  const b = Buffer.alloc(13)
  b.write('GIF89a')
  b.writeUInt16LE(w, 6)
  b.writeUInt16LE(h, 8)
  return b
}
function jpeg(w: number, h: number): Buffer {
  // SOI, an APP0 of 16 bytes, then SOF0 with the size.
  const app0 = Buffer.from('ffe000104a46494600010100000100010000', 'hex')
  const sof = Buffer.from('ffc0001108000000000301220002110103110100', 'hex')
  sof.writeUInt16BE(h, 5)
  sof.writeUInt16BE(w, 7)
  return Buffer.concat([Buffer.from('ffd8', 'hex'), app0, sof])
}
function webp(w: number, h: number): Buffer {
  // Lossless (VP8L): 14 bits each of width - 1 and height - 1.
  const b = Buffer.alloc(25)
  b.write('RIFF')
  b.write('WEBPVP8L', 8)
  b[20] = 0x2f
  b.writeUInt32LE((w - 1) | ((h - 1) << 14), 21)
  return b
}
/** A 1280×800 PNG's header followed by some image data, as base64. */
const screenshot = (image = png(1280, 800)) => Buffer.concat([image, Buffer.alloc(30_000, 7)]).toString('base64')

/** The tokens `part` adds to a user message, in `format`. */
function partTokens(format: Format, part: unknown): number {
  const user = (content: unknown[]) => [{ role: 'user', content }] as AnyMessage[]
  return ct.estimateTokens(user([part]), { format }) - ct.estimateTokens(user([]), { format })
}

/** The image part of each format for base64 `data` of `mime`. */
const imagePart: Record<Format, (data: string, mime?: string) => unknown> = {
  openai: (data, mime = 'image/png') => ({ type: 'image_url', image_url: { url: `data:${mime};base64,${data}` } }),
  anthropic: (data, mime = 'image/png') => ({ type: 'image', source: { type: 'base64', media_type: mime, data } }),
  'ai-sdk': (data, mime = 'image/png') => ({ type: 'image', image: data, mediaType: mime }),
}

// (w, h): OpenAI high detail, Anthropic; the AI SDK's provider is unknown, so the larger.
const SIZES: Array<[number, number, number, number]> = [
  [200, 200, 255, 54],
  [1280, 800, 1105, 1366],
  [4000, 3000, 765, 1600],
]

test('an image counts by the size in its header, by the formula of each format\'s provider', (t) => {
  for (const [w, h, openai, anthropic] of SIZES) {
    const expected: Record<Format, number> = { openai, anthropic, 'ai-sdk': Math.max(openai, anthropic) }
    for (const [name, header] of [['png', png(w, h)], ['jpeg', jpeg(w, h)], ['gif', gif(w, h)], ['webp', webp(w, h)]] as const) {
      const data = screenshot(header)
      for (const format of ['openai', 'anthropic', 'ai-sdk'] as const) {
        t.is(partTokens(format, imagePart[format](data, `image/${name}`)), expected[format], `${format} ${name} ${w}x${h}`)
      }
    }
  }
  // OpenAI's low detail is 85 whatever the size.
  const low = { type: 'image_url', image_url: { url: `data:image/png;base64,${screenshot()}`, detail: 'low' } }
  t.is(partTokens('openai', low), 85)
})

test('an image of unknown size (a URL, malformed data) counts the most its formula gives any image', (t) => {
  const url = 'https://example.com/shot.png'
  t.is(partTokens('openai', { type: 'image_url', image_url: { url } }), 1445)
  t.is(partTokens('anthropic', { type: 'image', source: { type: 'url', url } }), 1600)
  t.is(partTokens('ai-sdk', { type: 'image', image: url }), 1600)
  for (const junk of ['!!!not base64', 'AAAA', '', 'data:image/png;base64,', 'data:image/png,raw']) {
    t.is(partTokens('openai', { type: 'image_url', image_url: { url: junk } }), 1445, junk)
    t.is(partTokens('anthropic', { type: 'image', source: { type: 'base64', media_type: 'image/png', data: junk } }), 1600, junk)
  }
})

test('an image counts the same as a string, a Uint8Array, in a tool result, and in a JSON body', (t) => {
  const data = screenshot()
  const bytes = Buffer.from(data, 'base64')
  t.is(partTokens('ai-sdk', { type: 'image', image: new Uint8Array(bytes) }), 1366)
  t.is(partTokens('ai-sdk', { type: 'file', data: bytes, mediaType: 'image/png' }), 1366)
  t.is(partTokens('ai-sdk', { type: 'image', image: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) }), 1366)
  // A screenshot in an Anthropic tool result (computer use).
  const result = (content: unknown[]) => [
    { role: 'user', content: 'click the button' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'computer', input: { action: 'screenshot' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content }] },
  ] as AnyMessage[]
  const text = { type: 'text', text: 'done' }
  t.is(ct.estimateTokens(result([text, imagePart.anthropic(data)])) - ct.estimateTokens(result([text])), 1366)
  // The JSON entry points read the same bytes the same way.
  for (const format of ['openai', 'anthropic', 'ai-sdk'] as const) {
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'look' }, imagePart[format](data)] }] as AnyMessage[]
    const body = JSON.stringify({ messages })
    const json = ct.trimByPriorityJson(body, { targetTokens: 100_000, format })
    t.is(json.totalTokens, ct.estimateTokens(messages, { format }), format)
  }
})

/** A WAV header: 24 kHz mono 16-bit PCM, 48,000 bytes a second. */
function wav(): Buffer {
  const b = Buffer.alloc(44)
  b.write('RIFF')
  b.write('WAVEfmt ', 8)
  b.writeUInt32LE(16, 16)
  b.writeUInt16LE(1, 20)
  b.writeUInt16LE(1, 22)
  b.writeUInt32LE(24_000, 24)
  b.writeUInt32LE(48_000, 28)
  b.writeUInt16LE(2, 32)
  b.writeUInt16LE(16, 34)
  b.write('data', 36)
  return b
}

test('audio counts by its duration: 150 kB of 24 kHz WAV is 3.1 s, 32 tokens at OpenAI, 100 at Gemini', (t) => {
  const data = Buffer.concat([wav(), Buffer.alloc(150_000 - 44)]).toString('base64')
  t.is(partTokens('openai', { type: 'input_audio', input_audio: { data, format: 'wav' } }), 32)
  t.is(partTokens('ai-sdk', { type: 'file', data, mediaType: 'audio/wav' }), 100)
  // An MP3 whose header cannot be read: 128 kbps, 9.4 s.
  const mp3 = Buffer.alloc(150_000, 1).toString('base64')
  t.is(partTokens('openai', { type: 'input_audio', input_audio: { data: mp3, format: 'mp3' } }), 94)
  // LangChain's audio block becomes an input_audio part, counted the same.
  const lc = toOpenAIMessages([new HumanMessage({ content: [{ type: 'audio', data, mimeType: 'audio/wav' }] })])
  t.deepEqual(lc[0].content, [{ type: 'input_audio', input_audio: { data, format: 'wav' } }])
  t.is(ct.estimateTokens(lc), ct.estimateTokens([{ role: 'user', content: [{ type: 'input_audio', input_audio: { data, format: 'wav' } }] }] as AnyMessage[]))
})

test('a part of an unknown type counts by its JSON text in every format, as the LangChain adapter counts it', (t) => {
  const weird = { type: 'weird', data: 'lorem ipsum dolor sit amet '.repeat(400), meta: { n: 1 } }
  const json = ct.countTokens(JSON.stringify(weird))
  t.true(json > 2_000)
  for (const format of ['openai', 'anthropic', 'ai-sdk'] as const) t.is(partTokens(format, weird), json, format)
  // The LangChain adapter turns it into a text part of the same JSON text: the same count.
  const lc = toOpenAIMessages([new HumanMessage({ content: [weird] as never })])
  t.is(ct.estimateTokens(lc), ct.estimateTokens([{ role: 'user', content: [weird] }] as AnyMessage[]))
  // A JSON body too.
  const messages = [{ role: 'user', content: [weird] }] as AnyMessage[]
  t.is(ct.trimByPriorityJson(JSON.stringify(messages), { targetTokens: 100_000 }).totalTokens, ct.estimateTokens(messages))
  // A changed part that keeps its known keys is read again, not taken from the cache.
  const other = [{ role: 'user', content: [{ ...weird, meta: { n: 'a much longer value '.repeat(50) } }] }] as AnyMessage[]
  t.true(ct.estimateTokens(other) > ct.estimateTokens(messages))
})

const NO_CONTENT = 'messages[1].content: is required: a message without tool calls must have content'
const NO_CALL_ID = 'messages[2].tool_call_id: is required: a tool message must name the call it answers'

/** Calls `f` and returns its error's code and message. */
function refusal(f: () => unknown): [string | undefined, string] {
  try {
    f()
  } catch (e) {
    return [(e as CodedError).code, (e as Error).message]
  }
  return [undefined, 'no error']
}

test('a message without content, or a tool message without tool_call_id, is refused by every entry point and adapter', (t) => {
  const noContent = [{ role: 'system', content: 'sys' }, { role: 'user', text: 'hi' }] as unknown as AnyMessage[]
  const noCallId = [
    { role: 'user', content: 'task' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
    { role: 'tool', content: 'a.ts' },
  ] as unknown as AnyMessage[]
  const entryPoints: Array<[string, (m: AnyMessage[]) => unknown]> = [
    ['estimateTokens', (m) => ct.estimateTokens(m)],
    ['trimByPriority', (m) => ct.trimByPriority(m, { targetTokens: 1000 })],
    ['trimWithPlaceholders', (m) => ct.trimWithPlaceholders(m, { targetTokens: 1000 })],
    ['CacheAwareTrimmer', (m) => new ct.CacheAwareTrimmer({ contextWindow: 1000 }).trim(m)],
    ['trimByPriorityJson', (m) => ct.trimByPriorityJson(JSON.stringify(m), { targetTokens: 1000 })],
    ['trimPrepareStep', (m) => trimPrepareStep({ budget: 1000 })({ messages: m as never, steps: [], stepNumber: 0 })],
  ]
  for (const [name, f] of entryPoints) {
    t.deepEqual(refusal(() => f(noContent)), ['INVALID_MESSAGE', NO_CONTENT], name)
    if (name !== 'trimPrepareStep') t.deepEqual(refusal(() => f(noCallId)), ['INVALID_MESSAGE', NO_CALL_ID], name)
  }
  t.deepEqual(refusal(() => ct.estimateMessageTokens({ role: 'user', text: 'hi' } as never)), ['INVALID_MESSAGE', NO_CONTENT.replace('[1]', '[0]')])
  // LangChain: a message-like object without content, a tool message without its call's id.
  const lc = (m: unknown) => refusal(() => trimBaseMessages([new SystemMessage('sys'), m] as BaseMessage[], { budget: 1000 }))
  t.deepEqual(lc({ type: 'human', text: 'hi' }), ['INVALID_MESSAGE', NO_CONTENT])
  const tool = new ToolMessage({ content: 'a.ts', tool_call_id: 'x' })
  ;(tool as { tool_call_id?: string }).tool_call_id = undefined
  t.deepEqual(
    refusal(() => trimBaseMessages([new HumanMessage('task'), new HumanMessage('more'), tool], { budget: 1000 })),
    ['INVALID_MESSAGE', NO_CALL_ID],
  )
  // Still valid: content null with tool calls, tool calls without a content key.
  const calls = [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }]
  const valid = [
    { role: 'user', content: 'task' },
    { role: 'assistant', tool_calls: calls },
    { role: 'tool', tool_call_id: 'c1', content: 'a.ts' },
    { role: 'assistant', content: null, tool_calls: [{ ...calls[0], id: 'c2' }] },
    { role: 'tool', tool_call_id: 'c2', content: 'b.ts' },
  ] as AnyMessage[]
  t.true(ct.estimateTokens(valid) > 0)
  // validateConversation and repairConversation report and repair them, as before; a checking
  // entry point called afterwards on the same objects still refuses them.
  t.deepEqual(ct.validateConversation(noCallId).map((p) => p.kind), ['call-without-result', 'missing-tool-call-id'])
  t.deepEqual(ct.validateConversation(noContent).map((p) => p.kind), ['empty-message'])
  t.is(ct.repairConversation(noContent).messages.length, 1)
  t.deepEqual(refusal(() => ct.estimateTokens(noContent)), ['INVALID_MESSAGE', NO_CONTENT])
})

test('a result whose call is missing is kept or dropped as a unit of its own, the same way by the core and both adapters', (t) => {
  const orphan = 'orphan result '.repeat(50)
  const openai = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'task' },
    { role: 'tool', tool_call_id: 'zz', content: orphan },
    { role: 'assistant', content: 'ok' },
  ] as AnyMessage[]
  const aiSdk = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: [{ type: 'text', text: 'task' }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'zz', toolName: 'read', output: { type: 'text', value: orphan } }] },
    { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
  ] as AnyMessage[]
  const lc = [new SystemMessage('sys'), new HumanMessage('task'), new ToolMessage({ content: orphan, tool_call_id: 'zz' }), new HumanMessage('ok')]
  for (const [budget, roles] of [
    [1000, ['system', 'user', 'tool', 'assistant']],
    [40, ['system', 'user', 'assistant']],
  ] as const) {
    t.deepEqual(ct.trimByPriority(openai, { targetTokens: budget }).messages.map((m) => m.role), [...roles])
    t.deepEqual(ct.trimByPriority(aiSdk, { targetTokens: budget, format: 'ai-sdk' }).messages.map((m) => m.role), [...roles])
    const step = trimPrepareStep({ budget })({ messages: aiSdk as never, steps: [], stepNumber: 0 })
    t.deepEqual(step.messages.map((m: { role: string }) => m.role), [...roles])
    const kept = trimBaseMessages(lc, { budget }).messages.map((m) => m.getType())
    t.deepEqual(kept, budget === 1000 ? ['system', 'human', 'tool', 'human'] : ['system', 'human', 'human'])
  }
  t.deepEqual(ct.validateConversation(openai).map((p) => p.kind), ['orphan-result'])
})
