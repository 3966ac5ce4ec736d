import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'

import { ct, snapshot, transcript, transcripts } from './helpers.js'
import type { ConversationProblem, Message } from '../index.js'

function call(ids: string[], content: string | null = null): Message {
  return {
    role: 'assistant',
    content,
    tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'read_file', arguments: `{"path":"${id}.ts"}` } })),
  }
}

function result(id: string, content: string | null = `contents of ${id}.ts`): Message {
  return { role: 'tool', tool_call_id: id, content }
}

const user = (content: string): Message => ({ role: 'user', content })

/** [index, kind, related] of each problem. */
function kinds(problems: ConversationProblem[]): Array<[number, string, number | undefined]> {
  return problems.map((p) => [p.index, p.kind, p.related])
}

test('a well-formed conversation with parallel calls has no problem', (t) => {
  const messages = [{ role: 'system', content: 's' }, user('task'), call(['a', 'b'], 'reading both'), result('a'), result('b'), { role: 'assistant', content: 'done' }] as Message[]
  t.deepEqual(ct.validateConversation(messages), [])
})

test('an orphan tool result is reported with its index, kind and sentence', (t) => {
  t.deepEqual(ct.validateConversation([user('u'), result('x')]), [
    { index: 1, kind: 'orphan-result', message: 'tool result for call "x" answers no earlier tool call' },
  ])
  // A result before its call answers no earlier call either.
  t.deepEqual(kinds(ct.validateConversation([result('a'), call(['a']), result('a')])), [[0, 'orphan-result', undefined]])
})

test('a call without result is reported at the calling message, also at the very end', (t) => {
  const problems = ct.validateConversation([user('u'), call(['a', 'b']), result('a'), user('v'), call(['c'])])
  t.deepEqual(kinds(problems), [
    [1, 'call-without-result', undefined],
    [4, 'call-without-result', undefined],
  ])
  t.is(problems[0].message, 'tool call "b" (read_file) has no tool result')
})

test('a result separated from its call by another message is misplaced', (t) => {
  const problems = ct.validateConversation([user('u'), call(['a']), user('interrupting'), result('a')])
  t.deepEqual(kinds(problems), [[3, 'misplaced-result', 1]])
  t.is(problems[0].message, 'tool result for call "a" does not directly follow its call in message 1: message 2 comes between')
  t.deepEqual(kinds(ct.validateConversation([call(['a']), call(['b']), result('a'), result('b')])), [[2, 'misplaced-result', 0]])
})

test('a call id used twice in one message is a duplicate, reused by a later message it is not', (t) => {
  const problems = ct.validateConversation([user('u'), call(['a', 'a']), result('a'), result('a')])
  t.deepEqual(kinds(problems), [[1, 'duplicate-call-id', 1]])
  t.is(problems[0].message, 'tool call id "a" is used twice in this message')
  // OpenAI pairs results by position: SWE-agent replays reuse ids across steps.
  t.deepEqual(ct.validateConversation([user('u'), call(['a']), result('a'), call(['a']), result('a')]), [])
})

test('a second result for one call is a duplicate', (t) => {
  const problems = ct.validateConversation([user('u'), call(['a']), result('a'), result('a', 'again')])
  t.deepEqual(kinds(problems), [[3, 'duplicate-result', 2]])
  t.is(problems[0].message, 'call "a" is already answered by message 2')
})

test('a tool message without tool_call_id is reported', (t) => {
  const problems = ct.validateConversation([user('u'), { role: 'tool', content: 'output' }])
  t.deepEqual(kinds(problems), [[1, 'missing-tool-call-id', undefined]])
  t.is(problems[0].message, 'tool message has no tool_call_id, so it answers no call')
})

test('messages without content are empty; an empty string is content in OpenAI', (t) => {
  const problems = ct.validateConversation([
    { role: 'user', content: null },
    { role: 'assistant', content: [] },
    call(['a']),
    result('a', null),
    user(''),
    { role: 'assistant', content: '' },
  ])
  t.deepEqual(kinds(problems), [
    [0, 'empty-message', undefined],
    [1, 'empty-message', undefined],
    [3, 'empty-message', undefined],
  ])
  t.deepEqual(
    problems.map((p) => p.message),
    ['user message has no content', 'assistant message has neither content nor tool calls', 'tool message has no content'],
  )
})

test('every transcript validates clean', (t) => {
  for (const [name, messages] of transcripts()) {
    t.deepEqual(ct.validateConversation(messages), [], name)
    t.deepEqual(ct.validateConversation(messages, { format: 'openai' }), [], name)
  }
})

test('the format option checks each provider\'s rules', (t) => {
  t.deepEqual(ct.validateConversation([user('u')], { format: 'auto' }), [])
  t.deepEqual(ct.repairConversation([user('u')], { format: 'openai' }).repairs, [])
  // Anthropic: the first message must be a user message, results must be in the next message,
  // and empty text is rejected.
  const anthropic = [
    { role: 'assistant' as const, content: 'hello' },
    { role: 'assistant' as const, content: [{ type: 'tool_use', id: 't1', name: 'ls', input: {} }] },
    { role: 'user' as const, content: 'not the result' },
    { role: 'user' as const, content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.ts' }] },
    { role: 'user' as const, content: '   ' },
  ]
  t.deepEqual(
    ct.validateConversation(anthropic, { format: 'anthropic' }).map((p) => [p.index, p.kind]),
    [
      [0, 'first-message-not-user'],
      [3, 'misplaced-result'],
      [4, 'empty-message'],
    ],
  )
  const repaired = ct.repairConversation(anthropic, { format: 'anthropic' })
  t.deepEqual(ct.validateConversation(repaired.messages, { format: 'anthropic' }).filter((p) => p.kind !== 'first-message-not-user'), [])
  // AI SDK: a tool-call without its tool-result.
  const aiSdk = [
    { role: 'user' as const, content: 'go' },
    { role: 'assistant' as const, content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'ls', input: {} }] },
    { role: 'user' as const, content: 'next' },
  ]
  t.deepEqual(ct.validateConversation(aiSdk).map((p) => [p.index, p.kind]), [[1, 'call-without-result']])
  t.throws(() => ct.validateConversation([], { format: 'OpenAI' as never }), {
    code: 'INVALID_OPTION',
    message: 'format: must be one of openai, anthropic, ai-sdk, auto, got "OpenAI"',
  })
  t.throws(() => ct.validateConversation([], 3 as never), { code: 'INVALID_OPTION', message: 'options: must be an object, got number' })
  t.throws(() => ct.repairConversation('x' as never), { code: 'INVALID_MESSAGES', message: 'messages: must be an array, got string' })
})

test('every transcript validates clean in all three formats', (t) => {
  for (const [name, messages] of transcripts()) {
    t.deepEqual(ct.validateConversation(toAnthropic(messages)), [], name)
    t.deepEqual(ct.validateConversation(toAiSdk(messages)), [], name)
  }
})

test('repair drops orphan and duplicate results alone and returns the caller’s own objects', (t) => {
  const messages = [user('u'), result('x'), call(['a']), result('a'), result('a', 'again'), user('v')]
  const before = snapshot(messages)
  const { messages: out, repairs } = ct.repairConversation(messages)
  t.deepEqual(repairs, [
    { index: 1, kind: 'orphan-result', action: 'drop', message: 'dropped: tool result for call "x" answers no earlier tool call' },
    { index: 4, kind: 'duplicate-result', action: 'drop', message: 'dropped: call "a" is already answered by message 3' },
  ])
  t.is(out.length, 4)
  for (const [j, i] of [0, 2, 3, 5].entries()) t.is(out[j], messages[i])
  t.deepEqual(ct.validateConversation(out), [])
  t.deepEqual(messages, before)
})

test('repair drops a call missing a result together with the results it has, text and all', (t) => {
  const messages = [user('u'), call(['a', 'b'], 'let me read both'), result('a'), user('v')]
  const { messages: out, repairs } = ct.repairConversation(messages)
  t.deepEqual(out, [messages[0], messages[3]])
  t.deepEqual(repairs, [
    { index: 1, kind: 'call-without-result', action: 'drop', message: 'dropped with its results: tool call "b" (read_file) has no tool result' },
    { index: 2, kind: 'call-without-result', action: 'drop', message: 'dropped with its call in message 1: tool call "b" (read_file) has no tool result' },
  ])
})

test('repair drops a misplaced result and the call it leaves unanswered; never reorders', (t) => {
  const messages = [user('u'), call(['a', 'b']), result('a'), user('hey'), result('b'), call(['c']), result('c')]
  const { messages: out, repairs } = ct.repairConversation(messages)
  t.deepEqual(out, [messages[0], messages[3], messages[5], messages[6]])
  t.deepEqual(
    repairs.map((r) => [r.index, r.kind]),
    [
      [1, 'misplaced-result'],
      [2, 'misplaced-result'],
      [4, 'misplaced-result'],
    ],
  )
  t.is(repairs[0].message, 'dropped with its results: its tool call is answered only by the misplaced result in message 4')
  t.deepEqual(ct.validateConversation(out), [])
})

test('repair drops empty messages first, so an empty message between a call and its result costs nothing else', (t) => {
  const messages = [user('u'), call(['a']), { role: 'assistant', content: null }, result('a'), { role: 'tool', content: 'x' }] as Message[]
  const { messages: out, repairs } = ct.repairConversation(messages)
  t.deepEqual(out, [messages[0], messages[1], messages[3]])
  t.deepEqual(repairs, [
    { index: 2, kind: 'empty-message', action: 'drop', message: 'dropped: assistant message has neither content nor tool calls' },
    { index: 4, kind: 'missing-tool-call-id', action: 'drop', message: 'dropped: tool message has no tool_call_id, so it answers no call' },
  ])
})

test('repair gives a null tool result an empty string on a copy that keeps every other field', (t) => {
  const nullResult = { role: 'tool', tool_call_id: 'a', content: null, extra: { kept: true } } as Message
  const messages = [user('u'), call(['a']), nullResult]
  const { messages: out, repairs } = ct.repairConversation(messages)
  t.deepEqual(repairs, [{ index: 2, kind: 'empty-message', action: 'replace', message: 'set the content to an empty string: tool message has no content' }])
  t.is(out[1], messages[1])
  t.not(out[2], nullResult)
  t.deepEqual(out[2], { role: 'tool', tool_call_id: 'a', content: '', extra: { kept: true } })
  t.is(nullResult.content, null)
  t.deepEqual(ct.validateConversation(out), [])
})

test('repair leaves a valid conversation whole: every transcript comes back as the same objects', (t) => {
  for (const [name, messages] of transcripts()) {
    const { messages: out, repairs } = ct.repairConversation(messages)
    t.deepEqual(repairs, [], name)
    t.is(out.length, messages.length, name)
    t.true(out.every((m, i) => m === messages[i]), name)
  }
})

test('transcripts broken by removing a message are caught and repaired into valid ones', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  let caught = 0
  for (let k = 0; k < messages.length; k++) {
    const cut = messages.filter((_, i) => i !== k)
    const problems = ct.validateConversation(cut)
    const breaksAPair = Boolean(messages[k].tool_calls?.length) || messages[k].role === 'tool'
    t.is(problems.length > 0, breaksAPair, `without message ${k}`)
    const { messages: out, repairs } = ct.repairConversation(cut)
    t.deepEqual(ct.validateConversation(out), [], `without message ${k}`)
    t.is(out.length + repairs.length, cut.length, `without message ${k}`)
    caught += Number(problems.length > 0)
  }
  t.is(caught, 64)
})

test('validation and repair are deterministic', (t) => {
  const messages = [user('u'), result('x'), call(['a', 'b']), result('b'), user('v'), result('a'), call(['c', 'c'])]
  t.deepEqual(ct.validateConversation(messages), ct.validateConversation(messages))
  const a = ct.repairConversation(messages)
  const b = ct.repairConversation(messages)
  t.deepEqual(a.repairs, b.repairs)
  t.true(a.messages.every((m, i) => m === b.messages[i]))
  t.deepEqual(ct.validateConversation(a.messages), [])
})

test('an empty conversation is a problem in every format; Anthropic also wants a message besides the instructions', (t) => {
  const empty = [{ index: 0, kind: 'empty-conversation', message: 'the conversation has no message, and every provider requires one' }]
  for (const format of ['auto', 'openai', 'anthropic', 'ai-sdk'] as const) {
    t.deepEqual(ct.validateConversation([], { format }), empty, format)
  }
  const system = [{ role: 'system' as const, content: 'be brief' }]
  t.deepEqual(ct.validateConversation(system, { format: 'anthropic' }).map((p) => p.kind), ['empty-conversation'])
  t.deepEqual(ct.validateConversation(system, { format: 'openai' }), [])
  t.deepEqual(ct.validateConversation(system, { format: 'ai-sdk' }), [])
})

test('a repair that would leave nothing throws EMPTY_CONVERSATION instead of returning []', (t) => {
  t.throws(() => ct.repairConversation([{ role: 'tool', tool_call_id: 'x', content: 'r' }]), {
    instanceOf: Error,
    code: 'EMPTY_CONVERSATION',
    message: 'messages: the repair drops every message (1 of 1), and every provider requires one',
  })
  t.throws(() => ct.repairConversation([]), {
    code: 'EMPTY_CONVERSATION',
    message: 'messages: the conversation has no message, and every provider requires one',
  })
  const anthropic = [
    { role: 'system' as const, content: 's' },
    { role: 'user' as const, content: [{ type: 'tool_result', tool_use_id: 'x', content: 'r' }] },
  ]
  t.throws(() => ct.repairConversation(anthropic, { format: 'anthropic' }), {
    code: 'EMPTY_CONVERSATION',
    message: 'messages: the repair leaves only the instructions (1 of 2 messages dropped), and the provider requires a message besides them',
  })
  // OpenAI takes a system message alone.
  const openai = ct.repairConversation([{ role: 'system', content: 's' }, result('x')])
  t.is(openai.messages.length, 1)
})

/** Anthropic server tools: call and result blocks in one assistant turn (web search, web fetch, code execution). */
const serverTurn = {
  role: 'assistant' as const,
  content: [
    { type: 'text', text: 'let me look that up' },
    { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'rust 2024 edition' } },
    { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [{ type: 'web_search_result', url: 'https://doc.rust-lang.org/edition-guide', title: 'Rust 2024', encrypted_content: 'abc', page_age: null }] },
    { type: 'server_tool_use', id: 'srvtoolu_02', name: 'web_fetch', input: { url: 'https://doc.rust-lang.org/edition-guide' } },
    { type: 'web_fetch_tool_result', tool_use_id: 'srvtoolu_02', content: { type: 'web_fetch_result', url: 'https://doc.rust-lang.org/edition-guide', content: { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The 2024 edition' } } } },
    { type: 'server_tool_use', id: 'srvtoolu_03', name: 'code_execution', input: { code: 'print(2024)' } },
    { type: 'code_execution_tool_result', tool_use_id: 'srvtoolu_03', content: { type: 'code_execution_result', stdout: '2024\n', stderr: '', return_code: 0, content: [] } },
    { type: 'text', text: 'The 2024 edition is stable.' },
  ],
}

/** An AI SDK assistant message with a provider-executed tool call and its result. */
const providerTurn = {
  role: 'assistant' as const,
  content: [
    { type: 'tool-call', toolCallId: 'ws_1', toolName: 'web_search', input: { query: 'rust 2024 edition' }, providerExecuted: true },
    { type: 'tool-result', toolCallId: 'ws_1', toolName: 'web_search', output: { type: 'json', value: [{ url: 'https://doc.rust-lang.org', title: 'Rust' }] } },
    { type: 'text', text: 'The 2024 edition is stable.' },
  ],
}

test('server-side tools are valid: Anthropic server_tool_use with its results, AI SDK providerExecuted calls', (t) => {
  const anthropic = [{ role: 'user' as const, content: 'what is new?' }, serverTurn, { role: 'user' as const, content: 'thanks' }]
  t.deepEqual(ct.validateConversation(anthropic, { format: 'anthropic' }), [])
  t.deepEqual(ct.validateConversation(anthropic), [], 'detected as Anthropic')
  const repaired = ct.repairConversation(anthropic, { format: 'anthropic' })
  t.deepEqual(repaired.repairs, [])
  t.true(repaired.messages.every((m, i) => m === anthropic[i]), 'repair keeps the valid assistant message')
  const aiSdk = [{ role: 'user' as const, content: 'what is new?' }, providerTurn, { role: 'user' as const, content: 'thanks' }]
  t.deepEqual(ct.validateConversation(aiSdk, { format: 'ai-sdk' }), [])
  t.deepEqual(ct.repairConversation(aiSdk, { format: 'ai-sdk' }).messages.length, 3)
  // Their content counts towards the budget.
  t.true(ct.estimateMessageTokens(serverTurn) > ct.estimateMessageTokens({ role: 'assistant', content: 'let me look that up The 2024 edition is stable.' }))
  // A client tool in the same turn still needs its tool_result.
  const pending = { ...serverTurn, content: [...serverTurn.content, { type: 'tool_use', id: 'toolu_1', name: 'read', input: {} }] }
  t.deepEqual(ct.validateConversation([anthropic[0], pending], { format: 'anthropic' }).map((p) => p.kind), ['call-without-result'])
})

test('strategies keep server-side tool turns whole and valid', (t) => {
  const history = [
    { role: 'user' as const, content: 'research this '.repeat(50) },
    serverTurn,
    { role: 'user' as const, content: 'and more '.repeat(50) },
    serverTurn,
    { role: 'user' as const, content: 'summarise' },
  ]
  const target = Math.floor(ct.estimateTokens(history, { format: 'anthropic' }) * 0.7)
  const outputs = [
    ct.trimByAge(history, target, { format: 'anthropic' }),
    ct.applyMaxContextTokens(history, target, { format: 'anthropic', keepFirstSystem: true }),
    ct.trimWithPlaceholders(history, { targetTokens: target, format: 'anthropic' }).messages,
  ]
  for (const out of outputs) {
    t.deepEqual(ct.validateConversation(out, { format: 'anthropic' }), [])
    t.true(out.filter((m) => m.role === 'assistant').every((m) => history.includes(m)), 'the server turns are the caller’s objects, whole')
    // A plain user message may be cut to head and tail instead of dropped, and says so.
    t.true(out.every((m) => history.includes(m) || typeof (m as { _cutTokens?: unknown })._cutTokens === 'number'), 'the caller’s objects, or marked cuts')
  }
})
