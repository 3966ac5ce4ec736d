// The Vercel AI SDK (ai@6) running a many-step tool loop against its own mock model, with
// context-trim trimming the history before every step through `prepareStep`. The SDK's own
// prompt conversion must accept every trimmed history, and every prompt the model receives
// must still pair each tool call with its result.
import test from 'ava'
import { generateText, jsonSchema, stepCountIs, tool, type ModelMessage } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'

import { ct } from './helpers.js'
import type { AnyMessage } from '../index.js'

type Prompt = Array<{ role: string; content: unknown }>

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}

/** Every tool-call part of a prompt the model received, and whether a tool-result answers it. */
function unanswered(prompt: Prompt): string[] {
  const calls: string[] = []
  const results = new Set<string>()
  for (const m of prompt) {
    if (!Array.isArray(m.content)) continue
    for (const p of m.content as Array<{ type: string; toolCallId?: string }>) {
      if (p.type === 'tool-call' && p.toolCallId) calls.push(p.toolCallId)
      if (p.type === 'tool-result' && p.toolCallId) results.add(p.toolCallId)
    }
  }
  return calls.filter((id) => !results.has(id))
}

function model(steps: number, prompts: Prompt[]) {
  let step = 0
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown as Prompt)
      step++
      if (step > steps) {
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
      }
      // Two parallel calls every third step, one otherwise.
      const calls = step % 3 === 0 ? 2 : 1
      return {
        content: Array.from({ length: calls }, (_, k) => ({
          type: 'tool-call' as const,
          toolCallId: `call-${step}-${k}`,
          toolName: step % 4 === 0 ? 'run' : 'read_file',
          input: JSON.stringify(step % 4 === 0 ? { command: `make test-${step}` } : { path: `src/file-${step % 5}.ts` }),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      }
    },
  })
}

const tools = {
  read_file: tool({
    description: 'read a file',
    inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    execute: async ({ path }) => `// ${path}\n` + `export const value = ${JSON.stringify(path)};\n`.repeat(120),
  }),
  run: tool({
    description: 'run a command',
    inputSchema: jsonSchema<{ command: string }>({ type: 'object', properties: { command: { type: 'string' } }, required: ['command'] }),
    execute: async ({ command }) => `$ ${command}\n` + 'ok all tests passed\n'.repeat(80),
  }),
}

const strategies: Array<[string, (messages: ModelMessage[]) => ModelMessage[]]> = [
  ['applyMaxContextTokens', (m) => ct.applyMaxContextTokens(m as AnyMessage[], 3000) as ModelMessage[]],
  ['truncateOldToolOutputs', (m) => ct.truncateOldToolOutputs(m as AnyMessage[], { maxAge: 2, maxTokensPerOutput: 400 }) as ModelMessage[]],
  [
    'trimWithPlaceholders',
    (m) => ct.trimWithPlaceholders(m as never, { targetTokens: 3000, preserveRecentTurns: 1 }).messages as unknown as ModelMessage[],
  ],
  ['trimByPriority', (m) => ct.trimByPriority(m as never, { targetTokens: 3000, preserveRecentTurns: 1 }).messages as unknown as ModelMessage[]],
]

for (const [name, trim] of strategies) {
  test(`the AI SDK accepts every history ${name} returns in a 12-step tool loop`, async (t) => {
    const prompts: Prompt[] = []
    const trimmed: ModelMessage[][] = []
    const result = await generateText({
      model: model(12, prompts),
      tools,
      system: 'You are a coding agent.',
      prompt: 'Fix the failing tests in src/.',
      stopWhen: stepCountIs(20),
      prepareStep: ({ messages }) => {
        const out = trim(messages)
        trimmed.push(out)
        return { messages: out }
      },
    })
    t.is(result.text, 'done')
    t.is(prompts.length, 13)
    for (const [step, messages] of trimmed.entries()) {
      t.deepEqual(ct.validateConversation(messages as AnyMessage[], { format: 'ai-sdk' }), [], `step ${step}`)
    }
    for (const [step, prompt] of prompts.entries()) {
      t.deepEqual(unanswered(prompt), [], `step ${step}: every tool call reaches the model with its result`)
    }
    // The trimming did something: later prompts are smaller than the untrimmed history.
    const last = trimmed[trimmed.length - 1]
    t.true(ct.estimateTokens(last as AnyMessage[]) < ct.estimateTokens(result.response.messages as AnyMessage[]))
  })
}

test('the AI SDK does not itself reject an orphaned tool result: validateConversation does', async (t) => {
  // ai@6 passes an orphaned tool result on to the model (a real provider would then answer
  // 400); this is why every strategy's output is checked with validateConversation above.
  const prompts: Prompt[] = []
  const orphan: ModelMessage[] = [
    { role: 'user', content: 'go' },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'gone', toolName: 'run', output: { type: 'text', value: 'x' } }] },
  ]
  t.deepEqual(ct.validateConversation(orphan as AnyMessage[]).map((p) => p.kind), ['orphan-result'])
  await generateText({ model: model(0, prompts), messages: orphan })
  const sent = prompts[0].flatMap((m) => (Array.isArray(m.content) ? (m.content as Array<{ type: string }>) : []))
  t.true(sent.some((p) => p.type === 'tool-result'), 'the orphan reached the model')
  t.deepEqual(ct.repairConversation(orphan as AnyMessage[]).messages, [orphan[0]])
})

test('a call awaiting its approval survives every strategy, and the SDK runs it from the trimmed history', async (t) => {
  // ai@6 `needsApproval`: the model's call comes back with a `tool-approval-request`; the app
  // adds the user's `tool-approval-response` and calls the SDK again, which runs the approved
  // call before the model sees the request. Trimming in between must keep the call, its
  // request and the response together, and count the call as awaiting the SDK, not unanswered.
  let deleted = 0
  const approvalTools = {
    ...tools,
    deleteFile: tool({
      description: 'delete a file',
      inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
      needsApproval: true,
      execute: async ({ path }) => {
        deleted++
        return `deleted ${path}`
      },
    }),
  }
  const asking = new MockLanguageModelV3({
    doGenerate: async () => ({
      content: [{ type: 'tool-call' as const, toolCallId: 'del-1', toolName: 'deleteFile', input: JSON.stringify({ path: 'tmp.txt' }) }],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    }),
  })
  // An earlier loop to trim, then the turn whose call needs approval.
  const earlier = await generateText({ model: model(6, []), tools, prompt: 'Fix the failing tests in src/.', stopWhen: stepCountIs(10) })
  const history: ModelMessage[] = [...earlier.response.messages, { role: 'user', content: 'Now delete tmp.txt.' }]
  const first = await generateText({ model: asking, tools: approvalTools, messages: history })
  const request = first.content.find((p) => p.type === 'tool-approval-request')
  if (!request || request.type !== 'tool-approval-request') return t.fail('the SDK asked for no approval')
  t.is(deleted, 0)
  const pending: ModelMessage[] = [
    { role: 'user', content: 'Fix the failing tests in src/.' },
    ...history,
    ...first.response.messages,
    { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] },
  ]
  const pendingAny = pending as AnyMessage[]
  t.deepEqual(ct.validateConversation(pendingAny), [])
  t.deepEqual(ct.repairConversation(pendingAny).repairs, [])
  for (const [name, trim] of strategies) {
    const out = trim(pending)
    t.deepEqual(ct.validateConversation(out as AnyMessage[], { format: 'ai-sdk' }), [], name)
    t.true(out.includes(pending.at(-1)!) && out.includes(pending.at(-2)!), `${name}: the call and its approval are kept`)
    const prompts: Prompt[] = []
    const before = deleted
    const second = await generateText({ model: model(0, prompts), tools: approvalTools, messages: out })
    t.is(second.text, 'done', name)
    t.is(deleted, before + 1, `${name}: the SDK ran the approved call`)
    t.deepEqual(unanswered(prompts[0]), [], `${name}: the model sees the call with its result`)
  }
  t.true(ct.estimateTokens(strategies[3][1](pending) as AnyMessage[]) < ct.estimateTokens(pendingAny), 'the history was trimmed')
})
