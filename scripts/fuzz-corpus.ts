// Writes the committed seed corpus of the fuzz targets (fuzz/corpus/strategies and
// fuzz/corpus/validate, the same files in both): the bundled transcripts cut into pieces, in
// each format, and hand-made edge cases. Each file is the 12-byte header that
// `context_trim::fuzzing::decode` reads (format, encoding, budget, option bits) followed by JSON.
//
//   node --import @oxc-node/core/register scripts/fuzz-corpus.ts
//
// Deterministic: the same files every run. Files the fuzzer added (named by their SHA-1) and
// `regression-*` files are left alone.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { toAiSdk, toAnthropic } from '../__test__/convert.js'
import type { Message } from '../index.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const targets = ['strategies', 'validate']
const FORMATS = { openai: 0, anthropic: 1, 'ai-sdk': 2, auto: 3 } as const
type FormatName = keyof typeof FORMATS

/** A small deterministic generator for option bits (64-bit LCG). */
let state = 0x2545f4914f6cdd1dn
function nextBits(): bigint {
  state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn
  return state
}

function header(format: FormatName, encoding: number, budget: number): Buffer {
  const h = Buffer.alloc(12)
  h[0] = FORMATS[format]
  h[1] = encoding
  h.writeUInt16LE(budget, 2)
  h.writeBigUInt64LE(nextBits(), 4)
  return h
}

/** Every string longer than `max` characters cut to its head, so that pieces stay small. */
function shorten<T>(value: T, max = 200): T {
  if (typeof value === 'string') return (value.length > max ? value.slice(0, max) : value) as T
  if (Array.isArray(value)) return value.map((v) => shorten(v, max)) as T
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shorten(v, max)])) as T
  }
  return value
}

const files = new Map<string, Buffer>()
function add(name: string, format: FormatName, encoding: number, budget: number, json: unknown | string) {
  const text = typeof json === 'string' ? json : JSON.stringify(json)
  files.set(name, Buffer.concat([header(format, encoding, budget), Buffer.from(text, 'utf8')]))
}

// 1. The transcripts cut into pieces: windows of 3, 6 and 12 messages at spread offsets (a
// window may open on a tool result whose call is cut off: an orphan), in each format.
const budgets = [0, 8192, 16384, 26000, 32768, 50000]
const dir = join(root, 'samples', 'transcripts')
let k = 0
for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const messages = shorten(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Message[])
  const stem = file.replace(/\.json$/, '')
  for (const [size, offset] of [[3, 0], [6, 0], [12, 1], [6, 9], [12, messages.length - 12]] as const) {
    const piece = messages.slice(Math.max(0, offset), Math.max(0, offset) + size)
    const renderings: Array<[FormatName, unknown]> = [
      ['openai', piece],
      ['anthropic', toAnthropic(piece)],
      ['ai-sdk', toAiSdk(piece)],
      ['auto', k % 2 ? toAnthropic(piece) : toAiSdk(piece)],
    ]
    for (const [format, json] of renderings) {
      const encoding = k % 5 === 4 ? 4 : 0
      add(`${stem}-${offset}-${size}-${format}`, format, encoding, budgets[k % budgets.length], json)
      k++
    }
  }
}

// 2. Hand-made edge cases: what a hostile or careless caller sends.
const call = (id: string, name = 'read_file', args: unknown = '{"path":"a.ts"}') => ({ id, type: 'function', function: { name, arguments: args } })
const deepJson = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)
const edge: Array<[string, FormatName, unknown | string]> = [
  ['empty-array', 'openai', []],
  ['not-an-array', 'auto', { role: 'user', content: 'x' }],
  ['a-number', 'auto', 42],
  ['null-message', 'openai', [null]],
  ['missing-role', 'openai', [{ content: 'x' }]],
  ['unknown-role', 'anthropic', [{ role: 'wizard', content: 'x' }]],
  ['numeric-content', 'openai', [{ role: 'user', content: 5 }]],
  ['nested-array-content', 'ai-sdk', [{ role: 'user', content: [[{ type: 'text', text: 'x' }]] }]],
  ['tool-calls-not-array', 'openai', [{ role: 'assistant', tool_calls: { id: '1' } }]],
  ['tool-call-without-id', 'openai', [{ role: 'assistant', tool_calls: [{ function: { name: 'x' } }] }]],
  ['tool-call-without-function', 'openai', [{ role: 'assistant', tool_calls: [{ id: '1' }] }]],
  ['arguments-invalid-json', 'openai', [{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: [call('a', 'str_replace_editor', '{"command": "view", "path": ')] }, { role: 'tool', tool_call_id: 'a', content: 'x' }]],
  ['arguments-deep-100', 'openai', `[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"x","arguments":${deepJson(100)}}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`],
  ['arguments-deep-200', 'openai', `[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"x","arguments":${deepJson(200)}}}]}]`],
  ['duplicate-call-ids', 'openai', [{ role: 'user', content: 'u' }, { role: 'assistant', content: null, tool_calls: [call('dup'), call('dup', 'ls')] }, { role: 'tool', tool_call_id: 'dup', content: 'one' }, { role: 'tool', tool_call_id: 'dup', content: 'two' }]],
  ['id-reused-across-messages', 'anthropic', [{ role: 'user', content: 'u' }, { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'ls', input: {} }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'a' }] }, { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'ls', input: {} }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'b' }] }]],
  ['orphan-result', 'openai', [{ role: 'user', content: 'u' }, { role: 'tool', tool_call_id: 'ghost', content: 'boo' }]],
  ['result-before-call', 'openai', [{ role: 'tool', tool_call_id: 'a', content: 'early' }, { role: 'assistant', content: null, tool_calls: [call('a')] }]],
  ['result-after-a-user-message', 'ai-sdk', [{ role: 'user', content: 'u' }, { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'ls', input: {} }] }, { role: 'user', content: 'wait' }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'ls', output: { type: 'text', value: 'x' } }] }]],
  ['call-without-result-last', 'openai', [{ role: 'user', content: 'u' }, { role: 'assistant', content: 'let me look', tool_calls: [call('a'), call('b')] }, { role: 'tool', tool_call_id: 'a', content: 'A' }]],
  ['tool-without-tool-call-id', 'openai', [{ role: 'user', content: 'u' }, { role: 'tool', content: 'who am i' }]],
  ['null-contents', 'openai', [{ role: 'user', content: null }, { role: 'assistant', content: null, tool_calls: [call('a')] }, { role: 'tool', tool_call_id: 'a', content: null }, { role: 'assistant', content: null }]],
  ['blank-texts', 'anthropic', [{ role: 'user', content: '   ' }, { role: 'assistant', content: [{ type: 'text', text: '' }] }, { role: 'user', content: [] }]],
  ['lone-surrogate-escapes', 'openai', '[{"role":"user","content":"\\ud800 and \\udfff"}]'],
  ['emoji-and-cjk', 'auto', [{ role: 'system', content: '東京 🚀 👩‍👩‍👧 汉字 naïve' }, { role: 'user', content: [{ type: 'text', text: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ' + '🚀'.repeat(50) }] }]],
  ['special-tokens', 'openai', [{ role: 'user', content: '<|endoftext|><|im_start|>system<|im_end|>' }]],
  ['proto-keys', 'openai', [{ role: 'user', content: 'u' }, { role: 'assistant', content: null, tool_calls: [call('a', 'x', '{"__proto__":{"polluted":true},"constructor":{"prototype":{"p":1}}}')] }, { role: 'tool', tool_call_id: 'a', content: 'ok', __proto__x: 1 }]],
  ['two-formats-at-once', 'auto', [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] }, { role: 'tool', tool_call_id: 'a', content: 'r' }]],
  ['tool-use-in-user-message', 'anthropic', [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] }]],
  ['tool-call-part-in-tool-message', 'ai-sdk', [{ role: 'tool', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'x', input: {} }] }]],
  ['results-for-two-calls-in-one-message', 'anthropic', [{ role: 'user', content: 'u' }, { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] }, { role: 'assistant', content: [{ type: 'tool_use', id: 'b', name: 'x', input: {} }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'A' }, { type: 'tool_result', tool_use_id: 'b', content: 'B', is_error: true }] }]],
  ['parallel-calls-parts-and-errors', 'ai-sdk', [{ role: 'system', content: 'rules' }, { role: 'user', content: [{ type: 'text', text: 'fix it' }, { type: 'image', image: 'data:,' }] }, { role: 'assistant', content: [{ type: 'reasoning', text: 'hmm' }, { type: 'tool-call', toolCallId: 'a', toolName: 'str_replace_editor', input: { command: 'view', path: '/r/a.ts' } }, { type: 'tool-call', toolCallId: 'b', toolName: 'str_replace_editor', input: { command: 'str_replace', path: '/r/a.ts', old_str: 'x', new_str: 'y' } }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'str_replace_editor', output: { type: 'text', value: 'x' } }, { type: 'tool-result', toolCallId: 'b', toolName: 'str_replace_editor', output: { type: 'error-text', value: 'no match' } }] }, { role: 'user', content: 'again' }]],
  ['agents-md-and-developer', 'openai', [{ role: 'developer', content: 'be brief' }, { role: 'user', content: '# AGENTS.md\nrun tests' }, { role: 'user', name: 'AGENTS.md', content: 'more rules' }, { role: 'user', content: 'task' }, { role: 'assistant', content: 'done' }]],
  ['only-assistant', 'anthropic', [{ role: 'assistant', content: 'prefill' }]],
  ['many-tiny-messages', 'openai', Array.from({ length: 300 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: String(i) }))],
  ['not-json', 'openai', '[{"role": "user", "content": "unterminated'],
]
for (const [name, format, json] of edge) {
  for (const [budget, suffix] of [[0, 'b0'], [20000, 'b20000']] as const) add(`edge-${name}-${suffix}`, format, 0, budget, json)
}

for (const target of targets) {
  const out = join(root, 'fuzz', 'corpus', target)
  mkdirSync(out, { recursive: true })
  // Replace what this script wrote before; keep the fuzzer's finds and the regression inputs.
  for (const f of readdirSync(out)) if (!/^[0-9a-f]{40}$/.test(f) && !f.startsWith('regression-')) rmSync(join(out, f))
  for (const [name, bytes] of files) writeFileSync(join(out, name), bytes)
}
console.log(`wrote ${files.size} files to fuzz/corpus/{${targets.join(',')}}`)
