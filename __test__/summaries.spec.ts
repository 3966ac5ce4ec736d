import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { ct, snapshot, transcript, transcripts } from './helpers.js'
import type { AnyMessage, Message, MessageFormat, TrimResult } from '../index.js'

const MARKER = '[context-trim summary]'
const HEADER = `${MARKER} Earlier messages were removed to fit the context window. What they contained:`

/** A summary's sections: heading → items left out and items listed. */
function sections(summary: string): Map<string, { omitted: number; items: string[] }> {
  const out = new Map<string, { omitted: number; items: string[] }>()
  let current: { omitted: number; items: string[] } | undefined
  for (const line of summary.split('\n').slice(1)) {
    if (line.startsWith('- ')) {
      current!.items.push(line.slice(2))
      continue
    }
    const m = /^(.+?)(?: \((\d+) earlier left out\))?:$/.exec(line)
    if (!m) throw new Error(`not a heading: ${line}`)
    current = { omitted: Number(m[2] ?? 0), items: [] }
    out.set(m[1], current)
  }
  return out
}

const summaryMessages = (messages: AnyMessage[]) => messages.filter((m) => (m as Message)._summary === true)

test('the summary of a real transcript names its files, commands and errors', (t) => {
  // Everything but the system prompt and the last message's unit is dropped (targetTokens 0):
  // the task and the edits too, since the never-truncated tiers go last, not never. The facts
  // below were read off the transcripts.
  const ponyc = transcript('openhands-ponyc-4595.json')
  const result = ct.trimByPriority(ponyc, { targetTokens: 0, summarizeDropped: true, maxSummaryTokens: 3000 })
  const text = result.summary!
  t.true(text.startsWith(`${HEADER}\n`))
  const s = sections(text)
  t.deepEqual([...s.keys()], ['User requests', 'Files edited', 'Files read', 'Commands run', 'Errors', 'Assistant notes'])
  t.deepEqual(s.get('Files edited')!.items, ['/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c'])
  t.deepEqual(s.get('Commands run')!.items, [
    '`ls -l /workspace/ponylang__ponyc__0.1` → exit 0',
    '`ls -l /workspace/ponylang__ponyc__0.1/src` → exit 0',
    '`ls -l /workspace/ponylang__ponyc__0.1/src/libponyc` → exit 0',
    '`ls -l /workspace/ponylang__ponyc__0.1/src/libponyc/ast` → exit 0',
    '`grep -n "DECL(pattern);" /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c` → exit 0',
    '`grep -n "DEF(pattern);" /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c` → exit 0',
    '`echo "int main() { return 0; }" > /workspace/test.c` → exit 0',
    '`cd /workspace && echo "type CrashIt is (I32 | (I32, (I32))) actor Main new create(env: Env) => let x: CrashIt = 123 mat…` → exit 127',
    '`cd /workspace/ponylang__ponyc__0.1 && make` → exit 2',
    '`make clean && make` → exit 2',
    '`cd /workspace && ./ponylang__ponyc__0.1/ponyc test.pony -o . && ./test` → exit 127',
    '`find /workspace/ponylang__ponyc__0.1 -name ponyc` → exit 0',
    '`cd /workspace && /workspace/ponylang__ponyc__0.1/build/bin/ponyc test.pony -o . && ./test` → exit 127',
  ])
  t.deepEqual(s.get('Errors')!.items, [
    '/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c: ERROR: No replacement was performed, old_str `DEF(idseqsingle);',
    '`cd /workspace && echo "type CrashIt is (I32 | (I32, (I32)))…`: bash: ponyc: command not found',
    '`cd /workspace/ponylang__ponyc__0.1 && make`: make: *** [Makefile:192: build] Error 2',
    '`make clean && make`: make: *** [Makefile:192: build] Error 2',
    '`cd /workspace && ./ponylang__ponyc__0.1/ponyc test.pony -o…`: bash: ./ponylang__ponyc__0.1/ponyc: No such file or directory',
    '`cd /workspace && /workspace/ponylang__ponyc__0.1/build/bin/…`: bash: /workspace/ponylang__ponyc__0.1/build/bin/ponyc: No such file or directory',
  ])
  t.true(s.get('Assistant notes')!.items.includes('The `idseqsingle` rule has been modified to set the `AST_FLAG_IN_PARENS` flag.'))
  // SWE-agent: a relative `open setup.py` joined to its working directory; no exit codes shown.
  const marshmallow = ct.trimByPriority(transcript('sweagent-marshmallow-1867-fc.json'), { targetTokens: 0, summarizeDropped: true, maxSummaryTokens: 3000 })
  const m = sections(marshmallow.summary!)
  t.deepEqual(m.get('Files read')!.items, ['/testbed/setup.py', '/testbed/src/marshmallow/fields.py'])
  t.deepEqual(m.get('Commands run')!.items, ['`ls -F`', '`pip install -e .[dev]`', '`python reproduce.py`', '`rm reproduce.py`'])
  t.false(m.has('Errors'))
  // Age-based trimming drops edits too; the inserted summary then lists the edited file.
  const out = ct.trimConversation(ponyc, 2500, { strategy: 'age-based', summarizeDropped: true })
  t.true(ct.estimateTokens(out) <= 2500)
  const inserted = summaryMessages(out)
  t.deepEqual(Object.keys(inserted[0]), ['role', 'content'])
  t.is(inserted[0]._summary, true, 'flagged, out of JSON.stringify')
  t.is(out[0], ponyc[0])
  t.is(out[1], inserted[0])
  t.deepEqual(sections(String(inserted[0].content)).get('Files edited')?.items, ['/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c'])
})

test('summaries respect maxSummaryTokens and the inserted one counts towards targetTokens', (t) => {
  for (const [name, messages] of transcripts()) {
    const total = ct.estimateTokens(messages)
    for (const share of [0.25, 0.5, 0.75]) {
      for (const maxSummaryTokens of [64, 200, 500]) {
        const targetTokens = Math.floor(total * share)
        const label = `${name} ${share} ${maxSummaryTokens}`
        const result = ct.trimWithPlaceholders(messages, { targetTokens, summarizeDropped: true, insertSummary: true, maxSummaryTokens })
        t.truthy(result.summary, label)
        t.true(ct.countTokens(result.summary!) <= maxSummaryTokens, label)
        t.is(result.summarySource, 'extractive', label)
        t.is(result.totalTokens, ct.estimateTokens(result.messages), label)
        t.true(result.totalTokens <= targetTokens || result.overBudget, label)
        const inserted = summaryMessages(result.messages)
        t.is(inserted.length, 1, label)
        t.is(inserted[0].content, result.summary, label)
        // Not inserted: the summary is returned and the budget is the strategy's alone.
        const plain = ct.trimWithPlaceholders(messages, { targetTokens, summarizeDropped: true, maxSummaryTokens })
        t.deepEqual(plain.messages, ct.trimWithPlaceholders(messages, { targetTokens }).messages, label)
        t.is(summaryMessages(plain.messages).length, 0, label)
        t.true(ct.countTokens(plain.summary!) <= maxSummaryTokens, label)
      }
    }
  }
})

test('summaries are deterministic and never mutate the input', (t) => {
  for (const [name, messages] of transcripts()) {
    const before = snapshot(messages)
    const targetTokens = Math.floor(ct.estimateTokens(messages) / 2)
    const a = ct.trimByPriority(messages, { targetTokens, summarizeDropped: true, insertSummary: true })
    const b = ct.trimByPriority(snapshot(messages), { targetTokens, summarizeDropped: true, insertSummary: true })
    t.is(a.summary, b.summary, name)
    t.deepEqual(a.messages, b.messages, name)
    t.deepEqual(messages, before, name)
  }
})

test('twenty successive trims fold each summary into the next without growing', (t) => {
  const source = transcript('sweagent-ctf-i-got-id.json')
  const maxSummaryTokens = 300
  const targetTokens = 3000
  for (const trim of [ct.trimByPriority, ct.trimWithPlaceholders]) {
    let history: Message[] = source.slice(0, 2)
    let next = 2
    let previous: Map<string, { omitted: number; items: string[] }> | undefined
    let summarized = 0
    for (let round = 1; round <= 20; round++) {
      // The agent takes one more step: an assistant message and its tool results.
      history = [...history, source[next++]]
      while (next < source.length && source[next].role === 'tool') history.push(source[next++])
      const result = trim(history, { targetTokens, summarizeDropped: true, insertSummary: true, maxSummaryTokens })
      const label = `${trim.name} round ${round}`
      t.deepEqual(ct.validateConversation(result.messages), [], label)
      t.false(result.overBudget, label)
      t.true(result.totalTokens <= targetTokens, label)
      const inserted = summaryMessages(result.messages)
      t.true(inserted.length <= 1, label)
      if (result.summary !== undefined) {
        summarized++
        t.is(inserted[0].content, result.summary, label)
        t.is(result.messages[1], inserted[0], label)
        t.true(ct.countTokens(result.summary) <= maxSummaryTokens, label)
        const now = sections(result.summary)
        // What earlier summaries said is carried forward: no section ever counts fewer items.
        for (const [heading, was] of previous ?? []) {
          const is = now.get(heading)
          t.true(is !== undefined && is.omitted + is.items.length >= was.omitted + was.items.length, `${label} ${heading}`)
        }
        previous = now
      }
      // The app keeps the trimmed conversation (with its summary) as its history.
      history = result.messages
    }
    t.true(summarized >= 15, trim.name)
    t.true(ct.estimateTokens(history) <= targetTokens, trim.name)
    // Every command of the twenty steps is accounted for: in the summary (the first request to
    // the web server, dropped in round 3, among them), or still in the history.
    const commands = previous!.get('Commands run')!
    const stillSent = history.filter((m) => m._summary !== true && (m.tool_calls?.length ?? 0) > 0).length
    // (trimByPriority accounts for 19: one command, of a unit cut in an earlier round and then
    // dropped, is not counted again; see the closing note of issue 18.)
    const accounted = commands.omitted + commands.items.length + stillSent
    t.true(accounted >= 19, `${trim.name}: ${accounted}`)
  }
})

test('as an app trims its growing history turn after turn, the earlier summary lines stay', (t) => {
  // The app keeps its full history and trims a copy before each model call: oldest first, so
  // the dropped messages only grow, and the summary only gains lines. (With rolling context's
  // rules first, placeholders of newly old outputs can free the room an older message needed,
  // and it comes back whole, its summary line with it: they are kept out of the way here.)
  const source = transcript('openhands-ponyc-4593.json')
  let previous: string[] = []
  let checked = 0
  const ageOnly = { strategy: 'age-based', maxAge: 1000, maxTokensPerOutput: 1_000_000 } as const
  for (let k = 10; k <= source.length; k += 2) {
    const out = ct.trimConversation(source.slice(0, k), 5000, { ...ageOnly, summarizeDropped: true, maxSummaryTokens: 4000 })
    const inserted = summaryMessages(out)
    if (inserted.length === 0) continue
    const lines = String(inserted[0].content).split('\n').filter((l) => l.startsWith('- '))
    let at = 0
    for (const line of previous) {
      at = lines.indexOf(line, at)
      t.true(at >= 0, `k=${k}: lost ${line}`)
    }
    previous = lines
    checked++
  }
  t.true(checked >= 10)
})

// The summarizer callback (async API only).

const agent = () => transcript('sweagent-ctf-i-got-id.json')
const half = (messages: Message[]) => Math.floor(ct.estimateTokens(messages) / 2)

test('a summarizer gets the dropped messages and the draft, and its text is used', async (t) => {
  const messages = agent()
  const targetTokens = half(messages)
  const sync = ct.trimByPriority(messages, { targetTokens, summarizeDropped: true })
  const calls: Array<[Message[], string]> = []
  const result = await ct.trimByPriorityAsync(messages, {
    targetTokens,
    summarizeDropped: true,
    summarizer: async (dropped, draft) => {
      calls.push([dropped, draft])
      return `The agent probed forms.pl and file.pl in ${dropped.length} messages.`
    },
  })
  t.is(calls.length, 1)
  const [dropped, draft] = calls[0]
  t.is(draft, sync.summary!)
  t.deepEqual(dropped, sync.droppedMessages.map((c) => c.message))
  for (const m of dropped) t.true(messages.includes(m))
  t.is(result.summary, `${MARKER}\nThe agent probed forms.pl and file.pl in ${dropped.length} messages.`)
  t.is(result.summarySource, 'callback')
  t.is(result.summaryError, undefined)
  t.deepEqual(result.messages, sync.messages)
})

test('an inserted summarizer text is marked, cut to maxSummaryTokens and fits the budget', async (t) => {
  for (const fn of [ct.trimByPriorityAsync, ct.trimWithPlaceholdersAsync]) {
    const messages = agent()
    const targetTokens = half(messages)
    const result = await fn(messages, {
      targetTokens,
      summarizeDropped: true,
      insertSummary: true,
      maxSummaryTokens: 100,
      summarizer: () => 'word '.repeat(1000),
    })
    t.is(result.summarySource, 'callback')
    t.true(result.summary!.startsWith(`${MARKER}\nword word`))
    t.true(result.summary!.endsWith('…'))
    t.true(ct.countTokens(result.summary!) <= 100)
    t.is(summaryMessages(result.messages)[0].content, result.summary)
    t.is(result.totalTokens, ct.estimateTokens(result.messages))
    t.true(result.totalTokens <= targetTokens)
    t.deepEqual(ct.validateConversation(result.messages), [])
  }
})

test('a summarizer that fails leaves the draft, and says why', async (t) => {
  const messages = agent()
  const targetTokens = half(messages)
  const draft = ct.trimByPriority(messages, { targetTokens, summarizeDropped: true }).summary
  const cases: Array<[(dropped: Message[], draft: string) => Promise<string> | string, string]> = [
    [async () => Promise.reject(new Error('model unavailable')), 'model unavailable'],
    [() => { throw new Error('no API key') }, 'no API key'],
    [async () => { throw 'rate limited' }, 'rate limited'],
    [async () => 42 as never, 'summarizer must resolve to a non-empty string, got number'],
    [async () => '  ', 'summarizer must resolve to a non-empty string, got an empty string'],
    [async () => null as never, 'summarizer must resolve to a non-empty string, got null'],
  ]
  for (const [summarizer, error] of cases) {
    const result = await ct.trimByPriorityAsync(messages, { targetTokens, summarizeDropped: true, summarizer })
    t.is(result.summarySource, 'fallback-error', error)
    t.is(result.summaryError, error)
    t.is(result.summary, draft, error)
  }
})

test('a summarizer that does not settle in time leaves the draft', async (t) => {
  const messages = agent()
  const targetTokens = half(messages)
  let late: ((text: string) => void) | undefined
  const result = await ct.trimWithPlaceholdersAsync(messages, {
    targetTokens,
    summarizeDropped: true,
    insertSummary: true,
    summarizerTimeoutMs: 20,
    summarizer: () => new Promise<string>((resolve) => (late = resolve)),
  })
  t.is(result.summarySource, 'fallback-timeout')
  t.is(result.summaryError, 'summarizer did not settle within 20 ms')
  t.true(result.summary!.startsWith(HEADER))
  t.is(summaryMessages(result.messages)[0].content, result.summary)
  t.true(result.totalTokens <= targetTokens)
  // Settling afterwards changes nothing.
  const summary = result.summary
  late!('too late')
  await new Promise((r) => setTimeout(r, 5))
  t.is(result.summary, summary)
})

test('trimConversationAsync inserts the summarizer text', async (t) => {
  const messages = agent()
  const out = await ct.trimConversationAsync(messages, 8000, { summarizeDropped: true, summarizer: (dropped) => `${dropped.length} messages were about the CGI scripts` })
  const inserted = summaryMessages(out)
  t.is(inserted.length, 1)
  t.regex(String(inserted[0].content), /^\[context-trim summary\]\n\d+ messages were about the CGI scripts$/)
  t.true(ct.estimateTokens(out) <= 8000)
  t.deepEqual(ct.validateConversation(out), [])
})

test('a summarizer is not called when nothing is dropped, nor without summarizeDropped', async (t) => {
  const messages = agent()
  let called = 0
  const summarizer = async () => {
    called++
    return 'x'
  }
  const all = await ct.trimByPriorityAsync(messages, { targetTokens: 1e6, summarizeDropped: true, summarizer })
  t.is(called, 0)
  t.is(all.summary, undefined)
  t.is(all.summarySource, undefined)
  await t.throwsAsync(async () => ct.trimByPriorityAsync(messages, { targetTokens: 100, summarizer }), { code: 'INVALID_OPTION', message: 'summarizer: needs summarizeDropped: true' })
  t.is(called, 0)
})

test('the sync functions refuse a summarizer', (t) => {
  const messages = agent()
  let called = false
  const summarizer = () => {
    called = true
    return 'x'
  }
  const message = 'summarizer: is only called by the async functions (trimByPriorityAsync, trimWithPlaceholdersAsync, trimConversationAsync); a sync function never calls it'
  t.throws(() => ct.trimByPriority(messages, { targetTokens: 100, summarizeDropped: true, summarizer }), { instanceOf: TypeError, code: 'INVALID_OPTION', message })
  t.throws(() => ct.trimWithPlaceholders(messages, { targetTokens: 100, summarizeDropped: true, summarizer }), { code: 'INVALID_OPTION', message })
  t.throws(() => ct.trimConversation(messages, 100, { summarizeDropped: true, summarizer }), { code: 'INVALID_OPTION', message })
  t.false(called)
})

test('summary options are validated', async (t) => {
  const messages = agent()
  const cases: Array<[object, string]> = [
    [{ insertSummary: true }, 'insertSummary: needs summarizeDropped: true'],
    [{ summarizeDropped: true, maxSummaryTokens: 10 }, 'maxSummaryTokens: must be an integer of at least 64, got 10'],
    [{ summarizeDropped: true, maxSummaryTokens: NaN }, 'maxSummaryTokens: must be an integer of at least 64, got NaN'],
    [{ summarizeDropped: true, maxSummaryTokens: '500' }, 'maxSummaryTokens: must be a number, got string'],
    [{ summarizeDropped: true, summarizerTimeoutMs: 0 }, 'summarizerTimeoutMs: must be an integer of at least 1, got 0'],
    [{ summarizeDropped: true, summarizerTimeoutMs: 2 ** 31 }, 'summarizerTimeoutMs: must be at most 2147483647 (the longest setTimeout delay), got 2147483648'],
    [{ summarizeDropped: true, summarizer: 'gpt' }, 'summarizer: must be a function, got string'],
  ]
  for (const [extra, message] of cases) {
    const options = { targetTokens: 100, ...extra } as never
    await t.throwsAsync(async () => ct.trimByPriorityAsync(messages, options), { code: 'INVALID_OPTION', message })
  }
  t.throws(() => ct.trimConversation(messages, 100, { summarizeDropped: true, maxSummaryTokens: 1 }), { code: 'INVALID_OPTION', message: 'maxSummaryTokens: must be an integer of at least 64, got 1' })
})

// Every output is valid in every format.

const formats: Array<[MessageFormat, (m: Message[]) => AnyMessage[]]> = [
  ['openai', (m) => m],
  ['anthropic', toAnthropic],
  ['ai-sdk', toAiSdk],
]

test('outputs with an inserted summary pass validateConversation in every format', (t) => {
  for (const [name, original] of transcripts()) {
    for (const [format, convert] of formats) {
      const messages = convert(original) as Message[]
      const valid = ct.validateConversation(messages, { format }).length === 0
      const total = ct.estimateTokens(messages, { format })
      for (const share of [0.1, 0.25, 0.5, 0.75]) {
        const targetTokens = Math.floor(total * share)
        const options = { targetTokens, summarizeDropped: true, insertSummary: true }
        const outputs: Array<[string, AnyMessage[], boolean]> = [
          ['trimByPriority', ct.trimByPriority(messages, options).messages, true],
          ['trimWithPlaceholders', ct.trimWithPlaceholders(messages, options).messages, true],
          ['trimConversation', ct.trimConversation(messages, targetTokens, { summarizeDropped: true }), true],
          ['trimConversation age-based', ct.trimConversation(messages, targetTokens, { strategy: 'age-based', summarizeDropped: true }), true],
        ]
        for (const [fn, out] of outputs) {
          const label = `${name} ${format} ${share} ${fn}`
          if (valid) t.deepEqual(ct.validateConversation(out, { format }), [], label)
          const inserted = summaryMessages(out)
          t.true(inserted.length <= 1, label)
          if (inserted.length === 1) {
            const at = out.indexOf(inserted[0])
            t.is(inserted[0].role, 'user', label)
            t.true(out.slice(0, at).every((m) => m.role === 'system' || m.role === 'developer'), label)
          }
        }
      }
    }
  }
})

test('an earlier summary from a summarizer is folded as one item', async (t) => {
  const messages = agent()
  const first = await ct.trimByPriorityAsync(messages, { targetTokens: 8000, summarizeDropped: true, insertSummary: true, summarizer: () => 'The flag is in /flag, read through file.pl.' })
  t.is(first.summarySource, 'callback')
  const next = ct.trimByPriority([...first.messages, { role: 'user', content: 'Try once more.' }], { targetTokens: 4000, summarizeDropped: true, insertSummary: true })
  t.is(summaryMessages(next.messages).length, 1)
  t.deepEqual(sections(next.summary!).get('Earlier summary')?.items, ['The flag is in /flag, read through file.pl.'])
})

test('trimByPriority summarizes what it drops when asked', (t) => {
  const messages = transcript('openhands-sdk-hello-world.json')
  const result: TrimResult = ct.trimByPriority(messages, { targetTokens: 2500, summarizeDropped: true })
  t.true(result.droppedMessages.length > 0)
  t.true(result.summary!.startsWith(HEADER))
  t.is(result.summarySource, 'extractive')
  t.is(summaryMessages(result.messages).length, 0)
  t.false('summary' in ct.trimByPriority(messages, { targetTokens: 2500 }))
})

test('summarizePrefix labels a tool result Tool in every format: an Anthropic user message of tool_result blocks too', (t) => {
  const anthropic = [
    { role: 'user', content: 'U' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'R' }] },
    { role: 'user', content: 'last' },
  ]
  const want = 'Summary of earlier turns:\nUser: U\n\nAgent: \nCalled f({})\n\nTool: R'
  t.is(ct.summarizePrefix(anthropic as never, 100).summaryMessage.content, want)
  const aiSdk = [
    { role: 'user', content: 'U' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'f', input: {} }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'f', output: { type: 'text', value: 'R' } }] },
    { role: 'user', content: 'last' },
  ]
  t.is(ct.summarizePrefix(aiSdk as never, 100).summaryMessage.content, want)
  const openai = [
    { role: 'user', content: 'U' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'a', content: 'R' },
    { role: 'user', content: 'last' },
  ]
  t.is(ct.summarizePrefix(openai as never, 100).summaryMessage.content, want)
  // Results and text in one user message: each run of results a Tool entry, each run of text
  // a User entry, in the message's order.
  const mixed = [
    { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }, { type: 'tool_use', id: 'b', name: 'g', input: { x: 1 } }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'a', content: 'R1' },
        { type: 'tool_result', tool_use_id: 'b', content: [{ type: 'text', text: 'R2' }] },
        { type: 'text', text: 'thanks' },
      ],
    },
    { role: 'user', content: 'last' },
  ]
  const { summaryMessage, remainingMessages } = ct.summarizePrefix(mixed as never, 100)
  t.is(summaryMessage.content, 'Summary of earlier turns:\nAgent: \nCalled f({})\nCalled g({"x":1})\n\nTool: R1\nR2\n\nUser: thanks')
  t.is(remainingMessages[0], mixed[2] as never)
})
