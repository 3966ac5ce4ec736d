import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'

import test from 'ava'
import type { ExecutionContext } from 'ava'

import { DEFAULT_CONFIG, RollingContext, countTokens, estimateTokens, truncateOldToolOutputs } from '../index.js'
import type { Message, ResolvedTruncationConfig, TruncationConfig } from '../index.js'
import { replay, transcriptPath } from '../examples/rolling-context-chat-handler.js'
import { snapshot, transcript, transcripts } from './helpers.js'

const require = createRequire(import.meta.url)

/** About 8 tokens a line, unique to `seed`: no two outputs share a 40-character span. */
function big(seed: string, lines = 30): string {
  return Array.from({ length: lines }, (_, i) => `${seed}-${String(i).padStart(4, '0')} payload line\n`).join('')
}

function call(id: string, args: Record<string, unknown> = {}, name = 'read_file'): Message {
  return { role: 'assistant', content: '', tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] }
}

function result(id: string, content: string, extra: Partial<Message> = {}): Message {
  return { role: 'tool', tool_call_id: id, name: 'read_file', content, ...extra }
}

/** A task and `steps` steps; step k reads /src/file{k}.rs and gets `output(k)`. */
function conversation(steps: number, output: (k: number) => string = (k) => big(`out${k}`)): Message[] {
  const messages: Message[] = [{ role: 'user', content: 'do the task' }]
  for (let k = 1; k <= steps; k++) {
    messages.push(call(String(k), { path: `/src/file${k}.rs` }), result(String(k), output(k)))
  }
  return messages
}

/** The indices of the messages that were replaced (copies carrying metadata). */
function truncated(messages: Message[]): number[] {
  return messages.flatMap((m, i) => ('_truncatedAt' in m || '_cutTokens' in m ? [i] : []))
}

/** Every tool result answers a call earlier in `messages`, and every call has its results. */
function pairingProblems(messages: Message[]): string[] {
  const calls = new Set<string>()
  const answered = new Set<string>()
  const problems: string[] = []
  messages.forEach((m, i) => {
    for (const c of m.tool_calls ?? []) calls.add(c.id)
    if (m.role === 'tool') {
      if (!calls.has(m.tool_call_id ?? '')) problems.push(`messages[${i}] answers no earlier call`)
      answered.add(m.tool_call_id ?? '')
    }
  })
  for (const id of calls) if (!answered.has(id)) problems.push(`call ${id} has no result`)
  return problems
}

function assertPaired(t: ExecutionContext, messages: Message[], label = '') {
  t.deepEqual(pairingProblems(messages), [], label)
}

/** truncateOldToolOutputs, checking that the output is still paired. */
function run(t: ExecutionContext, messages: Message[], config?: TruncationConfig): Message[] {
  const out = truncateOldToolOutputs(messages, config)
  assertPaired(t, out)
  return out
}

// The design's three tests, ported. Its first one reads 'very long content...' (4 tokens), which
// its own small-output rule never truncates; the port uses a long output, and the literal
// messages pass once that rule is turned off.

test('truncates tool outputs older than maxAge', (t) => {
  const messages: Message[] = [
    { role: 'user', content: 'read file.txt' },
    { role: 'assistant', content: '', tool_calls: [{ id: '1', function: { name: 'read_file', arguments: {} } }] },
    { role: 'tool', tool_call_id: '1', name: 'read_file', content: 'very long content...' + big('file.txt') },
    ...conversation(6).slice(1),
  ]
  const out = truncateOldToolOutputs(messages, { maxAge: 5 })
  t.true((out[2].content as string).includes('[content truncated'))
  t.is(out[2].content, '[content truncated - 6 steps ago]')
  t.deepEqual(truncated(out), [2])
  assertPaired(t, out)

  const literal = messages.map((m, i) => (i === 2 ? { ...m, content: 'very long content...' } : m))
  t.is(run(t, literal, { maxAge: 5 })[2], literal[2])
  t.is(run(t, literal, { maxAge: 5, smallOutputTokens: 0 })[2].content, '[content truncated - 6 steps ago]')
})

test('preserves recent tool outputs', (t) => {
  const messages = conversation(6)
  // Step 1 is 5 steps old: not older than maxAge.
  const out = run(t, messages)
  t.deepEqual(truncated(out), [])
  out.forEach((m, i) => t.is(m, messages[i]))
  t.deepEqual(truncated(run(t, messages, { maxAge: 4 })), [2])
  t.deepEqual(truncated(run(t, messages, { maxAge: 0 })), [2, 4, 6, 8, 10])
})

test('preserves error messages regardless of age', (t) => {
  const messages = conversation(10)
  messages[2] = { ...messages[2], is_error: true }
  messages[4] = { ...messages[4], isError: true }
  messages[6] = result('3', big('build') + 'make: *** [Makefile:192: build] Error 2\n[The command completed with exit code 2.]')
  messages[8] = result('4', 'Traceback (most recent call last):\n' + big('trace'))
  messages[10] = result('5', big('ls') + "ls: cannot access 'src/lib': No such file or directory")
  const out = run(t, messages, { maxAge: 0, maxTokensPerOutput: 32 })
  for (const i of [2, 4, 6, 8, 10]) t.is(out[i], messages[i], `messages[${i}] is kept`)
  t.deepEqual(truncated(out), [12, 14, 16, 18, 20])
})

test('small outputs are never truncated, under a configurable threshold', (t) => {
  const ninetyNine = ' x'.repeat(99)
  t.is(countTokens(ninetyNine), 99)
  t.is(countTokens(' y'.repeat(100)), 100)
  // Steps 1 and 2 are older than maxAge; step 1 is under 100 tokens.
  const messages = conversation(8, (k) => (k === 1 ? ninetyNine : ' y'.repeat(100)))
  t.deepEqual(truncated(run(t, messages)), [4])
  t.deepEqual(truncated(run(t, messages, { smallOutputTokens: 101 })), [])
  t.deepEqual(truncated(run(t, messages, { smallOutputTokens: 0 })), [2, 4])
  // Small wins over the cap.
  t.deepEqual(truncated(run(t, conversation(3, () => ninetyNine), { maxTokensPerOutput: 32 })), [])
})

test('an old output that a recent tool call consumes is kept while the call is recent', (t) => {
  const span = 'fn parse_pattern(&mut self) -> Result<Pattern> {' // 49 characters
  const messages = conversation(8, (k) => (k === 1 ? big('a', 15) + span + '\n' + big('b', 15) : big(`out${k}`)))
  // Step 8 copies the span into its arguments.
  messages[15] = call('8', { path: '/other.rs', old_str: `  ${span}  `, new_str: 'x' }, 'str_replace')
  t.is(run(t, messages)[2], messages[2])
  // 39 characters are not a substantial span.
  messages[15] = call('8', { old_str: span.slice(0, 39) }, 'str_replace')
  t.deepEqual(truncated(run(t, messages)), [2, 4])
  t.is(run(t, messages, { minQuotedChars: 39 })[2], messages[2])
  // Naming the file it came from (relative or absolute) consumes it too.
  messages[15] = call('8', { command: 'gcc -c ./src/file1.rs -o out.o' }, 'bash')
  t.is(run(t, messages)[2], messages[2])
  // Once the consuming call is older than maxAge, the output goes.
  messages[15] = call('8', {}, 'bash')
  messages[3] = call('2', { file_path: 'src/file1.rs' }, 'edit')
  t.deepEqual(truncated(run(t, messages)), [2, 4])
  t.deepEqual(truncated(run(t, messages, { maxAge: 5 + 1 })), [])
})

test('only the latest output a reference can come from is kept', (t) => {
  const messages = conversation(9)
  messages[1] = call('1', { path: '/a.c' }, 'view')
  messages[3] = call('2', { path: '/a.c' }, 'view')
  messages[17] = call('9', { path: '/a.c' }, 'edit')
  // Steps 1 and 2 both viewed /a.c: the edit took its text from step 2.
  t.deepEqual(truncated(run(t, messages)), [2, 6])
})

test('an old output that a later user message quotes is kept', (t) => {
  const quote = "thread 'main' overflowed its stack while parsing the tuple"
  const messages = conversation(8, (k) => (k === 1 ? big('a', 15) + quote + '\n' + big('b', 15) : big(`out${k}`)))
  const asked: Message[] = [...messages, { role: 'user', content: `Why does it say "${quote}"?` }]
  t.is(run(t, asked)[2], asked[2])
  // A user message before the output is not a quote of it.
  const before: Message[] = [{ role: 'user', content: `I expect "${quote}"` }, ...messages.slice(1)]
  t.deepEqual(truncated(run(t, before)), [2, 4])
})

test('maxTokensPerOutput cuts younger outputs to their head and tail within the limit', (t) => {
  const long = big('long', 600)
  const messages = conversation(2, (k) => (k === 2 ? long : big('short', 5)))
  for (const limit of [32, 100, 500, 2000]) {
    const out = run(t, messages, { maxTokensPerOutput: limit })
    const content = out[4].content as string
    t.true(countTokens(content) <= limit, `${countTokens(content)} tokens for a limit of ${limit}`)
    t.true(content.startsWith('long-0000 payload line\n'), `head kept at ${limit}`)
    t.true(content.endsWith('long-0599 payload line\n'), `tail kept at ${limit}`)
    const marker = /\n\n\[\.\.\. (\d+) tokens cut \.\.\.\]\n\n/.exec(content)
    t.truthy(marker, `marker at ${limit}`)
    t.is(out[4]._cutTokens, Number(marker?.[1]))
    t.is(out[4]._originalLength, long.length)
    t.is(out[4].tool_call_id, '2')
    const [head, tail] = content.split(marker?.[0] ?? '')
    t.is(out[4]._cutTokens, countTokens(long) - countTokens(head) - countTokens(tail))
    t.is(out[2], messages[2])
  }
  t.deepEqual(truncated(run(t, messages, { maxTokensPerOutput: 100_000 })), [])
  // Outputs older than maxAge become the placeholder, not a cut.
  const old = conversation(2, (k) => (k === 1 ? long : big('short', 5)))
  t.is(run(t, old, { maxAge: 0 })[2].content, '[content truncated - 1 steps ago]')
})

test('the placeholder fills {age} and {tokens} and the copy keeps every other field', (t) => {
  const sym = Symbol('app')
  const messages = conversation(7, (k) => (k === 1 ? '東京🚀 '.repeat(100) : big(`out${k}`)))
  messages[2] = { ...messages[2], metadata: { traceId: 'abc' }, [sym]: 42 } as Message
  const out = run(t, messages, { placeholder: '[{age} steps ago, {tokens} tokens, {age}]' })
  const tokens = countTokens('東京🚀 '.repeat(100))
  t.deepEqual(out[2], {
    role: 'tool',
    tool_call_id: '1',
    name: 'read_file',
    content: `[6 steps ago, ${tokens} tokens, 6]`,
    metadata: { traceId: 'abc' },
    [sym]: 42,
  })
  // The metadata is readable but not enumerable: it stays out of JSON.stringify.
  t.is(out[2]._originalLength, 500)
  t.is(out[2]._truncatedAt, 6)
  t.false(JSON.stringify(out[2]).includes('_truncatedAt'))
  t.not(out[2], messages[2])
})

test('a copy is its original field for field: an own __proto__ key as data, a field named as metadata hidden under the metadata, earlier metadata carried', (t) => {
  const messages = conversation(7, (k) => big(`out${k}`))
  // An own `__proto__` key (JSON.parse makes one): copied as data, never as the prototype.
  messages[2] = JSON.parse(JSON.stringify({ ...messages[2], z: 1 }).replace('"z":1', '"__proto__":{"polluted":true}'))
  // A field of the caller's with a metadata name, before `content` in key order.
  messages[4] = { role: 'tool', tool_call_id: '2', _truncatedAt: 'mine', content: big('out2'), name: 'read_file' } as Message
  // Metadata an earlier pass hid on the object.
  const earlier = truncateOldToolOutputs(conversation(7, (k) => big(`out${k}`)), { maxAge: 0 })[6]
  messages[6] = earlier
  const out = run(t, messages, { maxAge: 1 })
  t.true(Object.prototype.hasOwnProperty.call(out[2], '__proto__'))
  t.is(Object.getPrototypeOf(out[2]), Object.prototype)
  t.deepEqual(Object.keys(out[2]), Object.keys(messages[2]))
  t.is(({} as Record<string, unknown>).polluted, undefined)
  // The metadata wins, hidden; the other fields keep their order, content in its place.
  t.is(out[4]._truncatedAt, 5)
  t.false(Object.prototype.propertyIsEnumerable.call(out[4], '_truncatedAt'))
  t.deepEqual(Object.keys(out[4]), ['role', 'tool_call_id', 'content', 'name'])
  t.is(messages[4]._truncatedAt as unknown, 'mine')
  // A copy of a copy keeps the hidden metadata of the first pass it does not set again.
  t.is(out[6]._originalLength, earlier._originalLength)
  t.false(JSON.stringify(out[6]).includes('_originalLength'))
})

test('a copy is the same with a frozen Object.prototype (a hardened realm), where fields are defined, not assigned', (t) => {
  const script = `
    Object.freeze(Object.prototype)
    const ct = require(${JSON.stringify(require.resolve('../index.js'))})
    const long = Array.from({ length: 40 }, (_, i) => 'line ' + i + ' of the output').join('\\n')
    const messages = [{ role: 'user', content: 'go' }]
    for (let k = 1; k <= 7; k++) {
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id: String(k), type: 'function', function: { name: 'read_file', arguments: '{}' } }] })
      messages.push({ role: 'tool', tool_call_id: String(k), toString: 'a field', content: long })
    }
    const out = ct.truncateOldToolOutputs(messages, { maxAge: 1 })
    process.stdout.write(JSON.stringify({ keys: Object.keys(out[2]), toString: out[2].toString, age: out[2]._truncatedAt, copied: out[2] !== messages[2] }))
  `
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' })
  t.is(r.status, 0, r.stderr)
  t.deepEqual(JSON.parse(r.stdout), { keys: ['role', 'tool_call_id', 'toString', 'content'], toString: 'a field', age: 6, copied: true })
})

test('partial configs merge with DEFAULT_CONFIG, which is exported and typed', (t) => {
  const defaults: ResolvedTruncationConfig = DEFAULT_CONFIG
  t.deepEqual(defaults, { maxAge: 5, maxTokensPerOutput: 2000, placeholder: '[content truncated - {age} steps ago]', smallOutputTokens: 100, minQuotedChars: 40, stablePlaceholders: false, preserveErrors: true })
  const messages = conversation(7)
  const expected = truncateOldToolOutputs(messages)
  t.deepEqual(truncateOldToolOutputs(messages, DEFAULT_CONFIG), expected)
  t.deepEqual(truncateOldToolOutputs(messages, {}), expected)
  t.deepEqual(truncateOldToolOutputs(messages, undefined), expected)
  t.deepEqual(truncateOldToolOutputs(messages, { maxAge: undefined }), expected)
  const three: TruncationConfig = { ...DEFAULT_CONFIG, maxAge: 3 }
  t.deepEqual(truncated(run(t, messages, three)), [2, 4, 6])
  t.deepEqual(truncateOldToolOutputs(messages, { maxAge: 3 }), truncateOldToolOutputs(messages, three))
})

test('bad configs are TypeErrors naming the option', (t) => {
  const messages = conversation(2)
  const cases: Array<[unknown, string]> = [
    [5, 'config: must be an object, got number'],
    [[], 'config: must be an object, got array'],
    [{ maxAge: -1 }, 'maxAge: must be an integer of at least 0, got -1'],
    [{ maxAge: 1.5 }, 'maxAge: must be an integer of at least 0, got 1.5'],
    [{ maxAge: Number.NaN }, 'maxAge: must be an integer of at least 0, got NaN'],
    [{ maxTokensPerOutput: Number.POSITIVE_INFINITY }, 'maxTokensPerOutput: must be an integer of at least 32, got Infinity'],
    [{ maxTokensPerOutput: 31 }, 'maxTokensPerOutput: must be an integer of at least 32, got 31'],
    [{ smallOutputTokens: -5 }, 'smallOutputTokens: must be an integer of at least 0, got -5'],
    [{ minQuotedChars: 0 }, 'minQuotedChars: must be an integer of at least 1, got 0'],
    [{ encoding: 'nope' }, 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "nope"'],
  ]
  for (const [config, message] of cases) {
    t.throws(() => truncateOldToolOutputs(messages, config as TruncationConfig), { instanceOf: TypeError, code: 'INVALID_OPTION', message })
  }
  t.throws(() => truncateOldToolOutputs(messages, { placeholder: 5 } as unknown as TruncationConfig), {
    instanceOf: TypeError,
    code: 'INVALID_OPTION',
    message: 'placeholder: must be a string, got number',
  })
  t.throws(() => truncateOldToolOutputs(messages, { maxAge: null } as unknown as TruncationConfig), {
    code: 'INVALID_OPTION',
    message: 'maxAge: must be a number, got null',
  })
  t.throws(() => truncateOldToolOutputs(5 as unknown as Message[]), { code: 'INVALID_MESSAGES', message: 'messages: must be an array, got number' })
})

test('the encoding and model options change how tokens are counted', (t) => {
  const messages = conversation(2, (k) => (k === 2 ? big('long', 600) : big('short')))
  const cl100k = truncateOldToolOutputs(messages, { model: 'gpt-4', maxTokensPerOutput: 300 })
  t.true(countTokens(cl100k[4].content as string, { model: 'gpt-4' }) <= 300)
  const approximate = truncateOldToolOutputs(messages, { encoding: 'approximate', maxTokensPerOutput: 300 })
  t.true(countTokens(approximate[4].content as string, { encoding: 'approximate' }) <= 300)
  t.not(cl100k[4].content, approximate[4].content)
})

test('the input is never modified and kept messages are the caller objects', (t) => {
  for (const [name, messages] of transcripts()) {
    const before = snapshot(messages)
    const out = run(t, messages, { maxAge: 2, maxTokensPerOutput: 200 })
    t.deepEqual(messages, before, name)
    t.is(out.length, messages.length, name)
    out.forEach((m, i) => {
      if (!truncated(out).includes(i)) t.is(m, messages[i], `${name} messages[${i}]`)
    })
  }
})

test('every transcript gives byte-identical output on two runs, with every call paired', (t) => {
  for (const [name, messages] of transcripts()) {
    for (const config of [undefined, { maxAge: 0 }, { maxAge: 2, maxTokensPerOutput: 100 }] as Array<TruncationConfig | undefined>) {
      const first = JSON.stringify(truncateOldToolOutputs(messages, config))
      const second = JSON.stringify(truncateOldToolOutputs(messages, config))
      t.is(first, second, `${name} ${JSON.stringify(config)}`)
      assertPaired(t, JSON.parse(first) as Message[], `${name} ${JSON.stringify(config)}`)
    }
  }
})

test('openhands-ponyc-4595 with the defaults: 29,476 tokens become 5,522, ten results truncated', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const out = truncateOldToolOutputs(messages)
  t.is(estimateTokens(messages), 29_476)
  t.is(estimateTokens(out), 5_522)
  t.deepEqual(truncated(out), [3, 5, 7, 9, 11, 15, 19, 21, 27, 29])
  t.is(out.filter((m) => '_cutTokens' in m).length, 0)
  t.is(out[11].content, '[content truncated - 17 steps ago]')
  t.is(out[11]._originalLength, (messages[11].content as string).length)
  assertPaired(t, out)
})

/** A RollingContext's config also says how it counts and reads (DEFAULT_CONFIG does not). */
const COUNTING = { encoding: 'o200k_base', framing: true, format: 'auto' } as const

test('RollingContext is off by default and prepare returns the very array given', (t) => {
  const rolling = new RollingContext()
  const messages = conversation(7)
  t.false(rolling.enabled)
  t.is(rolling.prepare(messages), messages)
  t.deepEqual(rolling.config, { ...DEFAULT_CONFIG, ...COUNTING })
  rolling.enabled = true
  const out = rolling.prepare(messages)
  t.not(out, messages)
  t.deepEqual(out, truncateOldToolOutputs(messages))
  // A bad message fails whether the toggle is on or off.
  rolling.enabled = false
  t.throws(() => rolling.prepare([{ role: 'robot' } as unknown as Message]), { code: 'INVALID_MESSAGE' })
  t.throws(() => {
    rolling.enabled = 'yes' as unknown as boolean
  }, { instanceOf: TypeError, code: 'INVALID_ARGUMENT', message: 'enabled: must be a boolean, got string' })
})

test('/rolling-context on, off, status and no argument drive the toggle', (t) => {
  const rolling = new RollingContext()
  const on = 'Rolling context: on (tool outputs older than 5 steps are truncated, longer than 2000 tokens are cut)'
  const off = 'Rolling context: off (tool outputs are sent in full)'
  t.is(rolling.status(), off)
  t.is(rolling.handleCommand('on'), on)
  t.true(rolling.enabled)
  t.is(rolling.handleCommand('status'), on)
  t.is(rolling.handleCommand(), off)
  t.is(rolling.handleCommand(''), on)
  t.is(rolling.handleCommand(null), off)
  t.is(rolling.handleCommand('  ON '), on)
  t.is(rolling.handleCommand('off'), off)
  t.throws(() => rolling.handleCommand('maybe'), { instanceOf: TypeError, code: 'INVALID_ARGUMENT', message: 'arg: must be on, off, enable, disable, toggle, status or nothing, got "maybe"' })
  t.throws(() => rolling.handleCommand(1 as unknown as string), { code: 'INVALID_ARGUMENT', message: 'arg: must be a string, got number' })
  t.false(rolling.enabled)
})

test('RollingContext takes a config, and a new config merges with the defaults', (t) => {
  const rolling = new RollingContext({ enabled: true, config: { maxAge: 3, placeholder: '[gone]' } })
  t.true(rolling.enabled)
  t.deepEqual(rolling.config, { ...DEFAULT_CONFIG, ...COUNTING, maxAge: 3, placeholder: '[gone]' })
  t.is(rolling.handleCommand('status'), 'Rolling context: on (tool outputs older than 3 steps are truncated, longer than 2000 tokens are cut)')
  const messages = conversation(7)
  t.is(rolling.prepare(messages).filter((m) => m.content === '[gone]').length, 3)
  rolling.config = { maxTokensPerOutput: 500 }
  t.deepEqual(rolling.config, { ...DEFAULT_CONFIG, ...COUNTING, maxTokensPerOutput: 500 })
  rolling.config = undefined
  t.deepEqual(rolling.config, { ...DEFAULT_CONFIG, ...COUNTING })
  t.throws(() => {
    rolling.config = { maxAge: -1 }
  }, { code: 'INVALID_OPTION', message: 'maxAge: must be an integer of at least 0, got -1' })
  t.throws(() => new RollingContext({ config: { maxTokensPerOutput: 1 } }), { code: 'INVALID_OPTION', message: 'maxTokensPerOutput: must be an integer of at least 32, got 1' })
})

test('the chat-handler example sends truncated history only while rolling context is on', async (t) => {
  t.true(transcriptPath.endsWith('openhands-ponyc-4595.json'))
  const messages = transcript('openhands-ponyc-4595.json')
  const events = await replay(messages, { 3: ['/rolling-context status'], 6: ['/rolling-context on'], 21: ['/rolling-context'], 22: ['/rolling-context bogus'] }).catch((e: Error) => e)
  t.true(events instanceof Error && events.message === 'arg: must be on, off, enable, disable, toggle, status or nothing, got "bogus"')
  const run = await replay(messages, { 3: ['/rolling-context status'], 6: ['/rolling-context on'], 21: ['/rolling-context'] })
  const statuses = run.flatMap((e) => (e.kind === 'status' ? [`${e.turn}: ${e.line}`] : []))
  t.deepEqual(statuses, [
    '3: Rolling context: off (tool outputs are sent in full)',
    '6: Rolling context: on (tool outputs older than 5 steps are truncated, longer than 2000 tokens are cut)',
    '21: Rolling context: off (tool outputs are sent in full)',
  ])
  const replies = run.flatMap((e) => (e.kind === 'reply' ? [e] : []))
  t.is(replies.length, 23)
  for (const r of replies) {
    if (r.enabled) t.true(r.tokensSent <= r.tokensFull, `turn ${r.turn}`)
    else t.is(r.tokensSent, r.tokensFull, `turn ${r.turn}`)
    t.is(r.enabled, r.turn >= 6 && r.turn < 21, `turn ${r.turn}`)
  }
  // Each model call got the history, truncated exactly as truncateOldToolOutputs does while on.
  const turns = messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []))
  for (const r of replies) {
    const history = messages.slice(0, turns[r.turn - 1])
    t.is(r.tokensFull, estimateTokens(history), `turn ${r.turn}`)
    t.is(r.tokensSent, estimateTokens(r.enabled ? truncateOldToolOutputs(history) : history), `turn ${r.turn}`)
  }
})

test('truncating a truncated history changes no content: placeholders are taken for nothing a later message refers to (every transcript, defaults and a tight config)', (t) => {
  let replaced = 0
  for (const config of [{}, { maxAge: 1, smallOutputTokens: 20 }] as TruncationConfig[]) {
    for (const [name, messages] of transcripts()) {
      const once = truncateOldToolOutputs(messages, config)
      replaced += once.filter((m, i) => m !== messages[i]).length
      const again = truncateOldToolOutputs(once, config)
      const changed = again.flatMap((m, i) => (JSON.stringify(m.content) === JSON.stringify(once[i].content) ? [] : [i]))
      t.deepEqual(changed, [], `${name} ${JSON.stringify(config)}`)
    }
  }
  t.true(replaced > 0, 'the transcripts have old outputs')
})
