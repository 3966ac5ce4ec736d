import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { type CodedError, ct, snapshot, transcript, transcripts } from './helpers.js'
import type { AnyMessage, Message } from '../index.js'

const always = { deduplicationThreshold: 0 }
const CLI = '/workspace/ponylang__ponyc__0.1/packages/cli/cli.pony'

/** A conversation of (tool, arguments, result) exchanges after a task. */
function session(exchanges: Array<[string, Record<string, unknown>, string]>): Message[] {
  const messages: Message[] = [{ role: 'user', content: 'task' }]
  exchanges.forEach(([name, args, content], k) => {
    const id = `c${k}`
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] })
    messages.push({ role: 'tool', tool_call_id: id, content })
  })
  return messages
}

const big = (label: string) => `${label}\n${'some file content line\n'.repeat(40)}`

/** [superseded, supersededBy] pairs. */
function pairs(messages: Message[], options: Parameters<typeof ct.deduplicateToolResults>[1] = always): number[][] {
  return ct.deduplicateToolResults(messages, options).superseded.map((s) => [s.index, s.supersededBy])
}

test('the file viewed several times in openhands-ponyc-4593 keeps only its newest full view, each older view naming the one that superseded it', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const before = snapshot(messages)
  const result = ct.deduplicateToolResults(messages, always)
  // cli.pony is viewed whole at 25 and 28, from line 100 at 32, and with view_range [1, -1] at 34:
  // 25 is superseded by 28, and 28 and 32 by 34. Each placeholder keeps its text when the file
  // is read again later (a provider's prompt cache keeps it). The views of lines 100-102 and
  // 101-102 of command_parser.pony at 50 and 56 are superseded by the edit at 62, whose result
  // shows the edited lines around them as they are now.
  const parser = '/workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony'
  t.deepEqual(
    result.superseded.map((s) => [s.index, s.supersededBy, s.path, s.kind, s.step]),
    [
      [25, 28, CLI, 'read', 13],
      [28, 34, CLI, 'read', 16],
      [32, 34, CLI, 'read', 16],
      [50, 62, parser, 'edit', 30],
      [56, 62, parser, 'edit', 30],
    ],
  )
  const replaced = result.messages[25]
  t.is(replaced.content, `[superseded by a newer read of ${CLI} at step 13]`)
  t.is(result.messages[28].content, `[superseded by a newer read of ${CLI} at step 16]`)
  t.is(replaced.tool_call_id, messages[25].tool_call_id)
  t.is(replaced.role, 'tool')
  t.is(replaced._superseded, true)
  t.is(replaced._supersededBy, 28)
  t.is(replaced._originalTokens, ct.estimateMessageTokens(messages[25]))
  // Tokens saved: the request's estimate before minus after, and the sum per result.
  t.is(result.savedTokens, ct.estimateTokens(messages) - ct.estimateTokens(result.messages))
  t.is(result.savedTokens, 3128)
  t.is(result.savedTokens, result.superseded.reduce((sum, s) => sum + s.savedTokens, 0))
  t.is(result.totalTokens, ct.estimateTokens(result.messages))
  // The seed's `supersedes` metadata, on the newer result.
  t.deepEqual(result.supersedes, [
    {
      index: 28,
      toolCallId: messages[28].tool_call_id,
      supersedes: [25],
      supersedesToolCallIds: [messages[25].tool_call_id as string],
    },
    {
      index: 34,
      toolCallId: messages[34].tool_call_id,
      supersedes: [28, 32],
      supersedesToolCallIds: [28, 32].map((i) => messages[i].tool_call_id as string),
    },
    {
      index: 62,
      toolCallId: messages[62].tool_call_id,
      supersedes: [50, 56],
      supersedesToolCallIds: [50, 56].map((i) => messages[i].tool_call_id as string),
    },
  ])
  t.is(result.superseded[0].toolCallId, messages[25].tool_call_id)
  t.is(result.superseded[0].supersededByToolCallId, messages[28].tool_call_id)
  // Nothing moves, nothing is dropped; every other message is the caller's own object.
  t.is(result.messages.length, messages.length)
  result.messages.forEach((m, i) => {
    if (![25, 28, 32, 50, 56].includes(i)) t.is(m, messages[i])
  })
  t.deepEqual(ct.validateConversation(result.messages), [])
  t.deepEqual(messages, before, 'the input is not mutated')
  t.true(result.deduplicated)
  t.is(result.thresholdTokens, undefined)
})

test('every transcript deduplicates deterministically into a valid conversation, sync and async alike', async (t) => {
  const saved: Record<string, number> = {}
  for (const [name, messages] of transcripts()) {
    const a = ct.deduplicateToolResults(messages, always)
    const b = ct.deduplicateToolResults(snapshot(messages), always)
    t.is(JSON.stringify(a), JSON.stringify(b), name)
    t.deepEqual(ct.validateConversation(a.messages), [], name)
    t.is(a.savedTokens, ct.estimateTokens(messages) - ct.estimateTokens(a.messages), name)
    const async = await ct.deduplicateToolResultsAsync(messages, always)
    t.is(JSON.stringify(async), JSON.stringify(a), name)
    saved[name] = a.savedTokens
  }
  t.deepEqual(saved, {
    'openhands-ponyc-4593.json': 3128,
    'openhands-ponyc-4595.json': 14156,
    'openhands-resolver-dark-mode.json': 2513,
    'openhands-sdk-hello-world.json': 0,
    'sweagent-ctf-i-got-id.json': 74,
    'sweagent-ctf-katy.json': 895,
    'sweagent-marshmallow-1867-fc.json': 82,
  })
})

test('the same results are superseded in the Anthropic and AI SDK formats, inside their tool-result blocks', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const openai = pairs(messages)
  // The view of lines 690-697 at 27 is superseded by the edit at 29 showing them edited.
  t.deepEqual(openai, [
    [11, 15],
    [15, 19],
    [27, 29],
  ])
  const anthropic = toAnthropic(messages)
  const a = ct.deduplicateToolResults(anthropic, always)
  t.deepEqual(a.superseded.map((s) => [s.index, s.supersededBy]), openai)
  const block = (a.messages[11].content as Array<{ type: string; content?: unknown }>)[0]
  t.is(block.type, 'tool_result')
  t.is(block.content, '[superseded by a newer read of /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c at step 7]')
  t.deepEqual(ct.validateConversation(a.messages, { format: 'anthropic' }), [])
  const aiSdk = toAiSdk(messages)
  const s = ct.deduplicateToolResults(aiSdk, always)
  t.deepEqual(s.superseded.map((x) => [x.index, x.supersededBy]), openai)
  t.deepEqual(ct.validateConversation(s.messages, { format: 'ai-sdk' }), [])
})

test('below deduplicationThreshold of contextWindow the messages come back unchanged', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const total = ct.estimateTokens(messages) // 15187
  const small = ct.deduplicateToolResults(messages, { contextWindow: Math.ceil(total / 0.75) + 10 })
  t.false(small.deduplicated)
  t.is(small.savedTokens, 0)
  t.deepEqual(small.superseded, [])
  small.messages.forEach((m, i) => t.is(m, messages[i]))
  t.is(small.thresholdTokens, Math.ceil((Math.ceil(total / 0.75) + 10) * 0.75))
  // At the default 0.75: a window of total / 0.75 puts the request exactly at the threshold.
  const at = ct.deduplicateToolResults(messages, { contextWindow: Math.floor(total / 0.75) })
  t.true(at.deduplicated)
  t.is(at.savedTokens, 3128)
  // A custom fraction.
  t.true(ct.deduplicateToolResults(messages, { contextWindow: total, deduplicationThreshold: 1 }).deduplicated)
  t.false(ct.deduplicateToolResults(messages, { contextWindow: total + 1, deduplicationThreshold: 1 }).deduplicated)
})

test('options are checked and named', (t) => {
  const m: Message[] = [{ role: 'user', content: 'x' }]
  const throws = (options: unknown, message: string) => {
    const err = t.throws<CodedError>(() => ct.deduplicateToolResults(m, options as never))
    t.is(err?.code, 'INVALID_OPTION')
    t.true(err instanceof TypeError)
    t.is(err?.message, message)
  }
  throws(undefined, 'contextWindow: is required: deduplication only runs once the request reaches deduplicationThreshold (0.75) of it; pass deduplicationThreshold: 0 to deduplicate at any size')
  throws({ deduplicationThreshold: 0.5 }, 'contextWindow: is required: deduplication only runs once the request reaches deduplicationThreshold (0.5) of it; pass deduplicationThreshold: 0 to deduplicate at any size')
  throws({ contextWindow: 1000, deduplicationThreshold: 1.5 }, 'deduplicationThreshold: must be a number from 0 to 1, got 1.5')
  throws({ contextWindow: 1000, deduplicationThreshold: NaN }, 'deduplicationThreshold: must be a number from 0 to 1, got NaN')
  throws({ contextWindow: 0 }, 'contextWindow: must be an integer of at least 1, got 0')
  throws({ contextWindow: Infinity }, 'contextWindow: must be an integer of at least 1, got Infinity')
  throws({ deduplicationThreshold: 0, deduplicators: ['io-content', 'files'] }, 'deduplicators[1]: must be one of io-content, survey-directory, got "files"')
  throws({ deduplicationThreshold: 0, encoding: 'nope' }, 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "nope"')
})

test('a newer read or full write supersedes older reads, writes and edits; a partial edit supersedes nothing', (t) => {
  const a = { path: 'src/a.ts' }
  t.deepEqual(
    pairs(session([
      ['read_file', a, big('v1')],
      ['edit_file', a, big('edited; snippet:')],
      ['read_file', { path: 'src/b.ts' }, big('other file')],
      ['write_file', a, big('written')],
    ])),
    [
      [2, 8],
      [4, 8],
    ],
  )
  t.deepEqual(pairs(session([['read_file', a, big('v1')], ['edit_file', a, big('edited; snippet:')]])), [])
  const result = ct.deduplicateToolResults(session([['read_file', a, big('v1')], ['read_file', a, big('v2')]]), always)
  t.is(result.messages[2].content, '[superseded by a newer read of src/a.ts at step 2]')
})

test('an edit supersedes only when its result returns the whole file', (t) => {
  const listing = (total: number, shown: number, after = '') =>
    `[File: /w/App.css (${total} lines total${after})]\n(this is the beginning of the file)\n${Array.from({ length: shown }, (_, k) => `${k + 1}|line ${k + 1}`).join('\n')}\n(this is the end of the file)`
  const ipy = 'execute_ipython_cell'
  t.deepEqual(pairs(session([[ipy, { code: "open_file('/w/App.css')" }, listing(40, 40)], [ipy, { code: 'edit_file_by_replace(...)' }, listing(40, 40, ' after edit')]])), [[2, 4]])
  t.deepEqual(pairs(session([[ipy, { code: "open_file('/w/App.css')" }, listing(40, 40)], [ipy, { code: 'edit_file_by_replace(...)' }, listing(140, 100, ' after edit')]])), [])
  // The OpenHands editor's snippet never says how long the file is: not the whole file.
  const snippet = `The file /w/a.c has been edited. Here's the result of running \`cat -n\` on a snippet of /w/a.c:\n${'     1\tx\n'.repeat(30)}`
  t.deepEqual(pairs(session([['str_replace_editor', { command: 'view', path: '/w/a.c' }, big('v1')], ['str_replace_editor', { command: 'str_replace', path: '/w/a.c', old_str: 'a', new_str: 'b' }, snippet]])), [])
})

test('a range supersedes only the ranges it contains', (t) => {
  const view = (view_range?: number[]) => ({ command: 'view', path: '/w/p.c', ...(view_range ? { view_range } : {}) })
  const out = big("Here's the result of running `cat -n` on /w/p.c:")
  t.deepEqual(
    pairs(session([
      ['str_replace_editor', view([100, 110]), out],
      ['str_replace_editor', view([90, 120]), out],
      ['str_replace_editor', view([100, 105]), out],
      ['str_replace_editor', view([100, -1]), out],
    ])),
    // [90, 120] contains [100, 110] and starts before line 100: nothing newer contains it.
    [
      [2, 4],
      [6, 8],
    ],
  )
  t.deepEqual(pairs(session([['str_replace_editor', view([100, -1]), out], ['str_replace_editor', view(), out]])), [[2, 4]])
})

test('failed operations neither supersede nor are superseded', (t) => {
  const a = { path: '/w/a' }
  t.deepEqual(
    pairs(session([
      ['read_file', a, big('v1')],
      ['read_file', a, `ERROR: ${big('permission denied')}`],
      ['read_file', a, big('v2')],
    ])),
    [[2, 6]],
  )
  const flagged = session([['read_file', a, big('v1')], ['read_file', a, big('v2')]])
  flagged[4] = { ...flagged[4], is_error: true }
  t.deepEqual(pairs(flagged), [])
})

test('a newer listing supersedes an older one when it is at least as inclusive', (t) => {
  t.deepEqual(
    pairs(session([
      ['list_dir', { path: 'src' }, big('entries')],
      ['list_dir', { path: 'src', ignore: ['*.log', 'dist'] }, big('entries')],
      ['list_dir', { path: 'src/', ignore: 'dist' }, big('entries')],
      ['list_dir', { path: 'lib', recursive: true }, big('entries')],
      ['list_dir', { path: 'lib' }, big('entries')],
    ])),
    // {dist} ⊆ {*.log, dist}; a non-recursive listing does not supersede a recursive one.
    [[4, 6]],
  )
  const ls = (command: string) => ['execute_bash', { command }, big('a  b  c\n[The command completed with exit code 0.]')] as [string, Record<string, unknown>, string]
  t.deepEqual(pairs(session([ls('ls /w'), ls('ls /w | head'), ls('ls -R /w')])), [[2, 6]], '`ls -R` supersedes `ls`')
  t.deepEqual(pairs(session([ls('ls /w'), ls('ls -la /w'), ls('ls /w | head'), ls('ls -R /w')])), [[2, 4]], '`ls -la` supersedes `ls`; `ls -R` does not supersede `ls -la`, which shows dot files')
  t.deepEqual(pairs(session([ls('ls -l /w'), ls('ls -a /w')])), [], '`ls -a` shows less than `ls -l`')
  const editor = (p: string) => ['str_replace_editor', { command: 'view', path: p }, big(`Here's the files and directories up to 2 levels deep in ${p}, excluding hidden items:`)] as [string, Record<string, unknown>, string]
  const result = ct.deduplicateToolResults(session([editor('/w'), editor('/w/')]), always)
  t.is(result.messages[2].content, '[superseded by a newer listing of /w at step 2]')
  t.is(result.superseded[0].kind, 'listing')
})

test('tool names and argument keys are configurable, and each deduplicator can be turned off', (t) => {
  const messages = session([
    ['fetch_source', { module: 'm.py' }, big('v1')],
    ['fetch_source', { module: 'm.py' }, big('v2')],
    ['tree', { root: '/w' }, big('t1')],
    ['tree', { root: '/w' }, big('t2')],
    ['sh', { script: 'ls /w' }, big('x')],
    ['sh', { script: 'ls /w' }, big('y')],
  ])
  t.deepEqual(pairs(messages), [])
  const options = { ...always, readTools: ['fetch_source'], pathKeys: ['module'], listTools: ['tree'], listPathKeys: ['root'], shellTools: ['sh'], shellCommandKeys: ['script'] }
  t.deepEqual(pairs(messages, options), [
    [2, 4],
    [6, 8],
    [10, 12],
  ])
  t.deepEqual(pairs(messages, { ...options, deduplicators: ['io-content'] }), [[2, 4]])
  t.deepEqual(pairs(messages, { ...options, deduplicators: ['survey-directory'] }), [
    [6, 8],
    [10, 12],
  ])
  t.deepEqual(pairs(messages, { ...options, deduplicators: [] }), [])
})

test('deduplicating a deduplicated history changes nothing: placeholders are left alone (every transcript, every format)', (t) => {
  let replaced = 0
  for (const [name, messages] of transcripts()) {
    for (const [format, input] of [
      ['openai', messages],
      ['anthropic', toAnthropic(messages)],
      ['ai-sdk', toAiSdk(messages)],
    ] as const) {
      const once = ct.deduplicateToolResults<AnyMessage>(input, always)
      replaced += once.superseded.length
      const again = ct.deduplicateToolResults(once.messages, always)
      t.deepEqual(again.superseded, [], `${name} (${format})`)
      t.true(
        again.messages.every((m, i) => m === once.messages[i]),
        `${name} (${format}): the second pass returns the first pass's objects`,
      )
    }
  }
  t.true(replaced > 0, 'the transcripts have superseded results')
})

test('a placeholder keeps its text as the history grows, so the prompt cache keeps the prefix before what a new read supersedes (every transcript, three formats)', (t) => {
  let checked = 0
  for (const [name, openai] of transcripts()) {
    for (const [format, messages] of [['openai', openai], ['anthropic', toAnthropic(openai)], ['ai-sdk', toAiSdk(openai)]] as const) {
      let before = new Map<number, string>()
      for (let n = 1; n <= messages.length; n++) {
        const out = ct.deduplicateToolResults(messages.slice(0, n) as AnyMessage[], { ...always, format })
        const now = new Map<number, string>()
        out.messages.forEach((m, i) => {
          if ((m as { _superseded?: boolean })._superseded) now.set(i, JSON.stringify(m.content))
        })
        for (const [i, text] of before) {
          t.is(now.get(i), text, `${name} (${format}): message ${i} at ${n} messages`)
          checked++
        }
        before = now
      }
    }
  }
  t.true(checked > 100, `${checked} placeholders checked`)
})
