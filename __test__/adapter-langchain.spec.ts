// context-trim/langchain against LangChain.js itself (langchain 1.5, @langchain/core 1.4): the
// BaseMessage conversions, trimBaseMessages, and trimMiddleware in a createAgent tool loop run
// by @langchain/core's own fake chat model (`fakeModel`), whose recorded calls are the
// messages the model received.
import test from 'ava'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AIMessage, ChatMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { MemorySaver } from '@langchain/langgraph' // langchain's own dependency: its agents' checkpointer
import { createAgent, tool } from 'langchain'
import { z } from 'zod'

import { fromOpenAIMessages, toOpenAIMessages, trimBaseMessages, trimMiddleware, type AdapterTrimReport } from '../adapters/langchain.mjs'
import { ct, type CodedError } from './helpers.js'
import type { Message } from '../index.js'

/** A 1024×1024 PNG's header as a data URL: 765 tokens at OpenAI's high detail (4 tiles). */
const IMAGE = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAABAAAAAQACAYAAAAAAAAA'

const file = (path: string) => `// ${path}\n` + `export const value = ${JSON.stringify(path)};\n`.repeat(100)

/** A LangChain conversation and the same conversation written by hand in the OpenAI shape. */
function conversation(): [BaseMessage[], Message[]] {
  const lc = [
    new SystemMessage('You are a coding agent.'),
    new HumanMessage({ content: [{ type: 'text', text: 'Fix the test.' }, { type: 'image_url', image_url: { url: IMAGE } }] }),
    new AIMessage({ content: 'Reading.', tool_calls: [{ id: 'c1', name: 'read_file', args: { path: 'a.ts' } }, { id: 'c2', name: 'read_file', args: { path: 'b.ts' } }] }),
    new ToolMessage({ content: file('a.ts'), tool_call_id: 'c1', name: 'read_file' }),
    new ToolMessage({ content: 'ENOENT: b.ts', tool_call_id: 'c2', name: 'read_file', status: 'error' }),
    new ChatMessage({ content: 'Keep the API stable.', role: 'developer' }),
    new AIMessage({ content: [{ type: 'reasoning', reasoning: 'a.ts only' }, { type: 'text', text: 'Done.' }] }),
  ]
  const openai: Message[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: [{ type: 'text', text: 'Fix the test.' }, { type: 'image_url', image_url: { url: IMAGE } }] },
    {
      role: 'assistant',
      content: 'Reading.',
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'read_file', arguments: { path: 'a.ts' } } },
        { id: 'c2', type: 'function', function: { name: 'read_file', arguments: { path: 'b.ts' } } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: file('a.ts') },
    { role: 'tool', tool_call_id: 'c2', content: 'ENOENT: b.ts', is_error: true },
    { role: 'developer', content: 'Keep the API stable.' },
    { role: 'assistant', content: [{ type: 'text', text: JSON.stringify({ type: 'reasoning', reasoning: 'a.ts only' }) }, { type: 'text', text: 'Done.' }] },
  ]
  return [lc, openai]
}

/** What a shortened tool result reads as: a placeholder, or the cut marker in its middle. */
const SHORTENED = /^\[(File: |Content truncated)|\n\[\.\.\. \d+ tokens cut \.\.\.\]\n/

/** A plain copy, without the converted messages' hidden index. */
const plain = (messages: Message[]) => JSON.parse(JSON.stringify(messages)) as Message[]

test('toOpenAIMessages converts every kind of BaseMessage to the OpenAI shape the library counts', (t) => {
  const [lc, expected] = conversation()
  const converted = toOpenAIMessages(lc)
  t.deepEqual(plain(converted), plain(expected))
  t.is(ct.estimateTokens(converted), ct.estimateTokens(expected))
  t.deepEqual(ct.validateConversation(converted), [])
  t.deepEqual(ct.classifyMessage(converted[4]).priority, ct.classifyMessage(expected[4]).priority)
})

test('fromOpenAIMessages gives back the original BaseMessages for kept messages', (t) => {
  const [lc] = conversation()
  const back = fromOpenAIMessages(toOpenAIMessages(lc), lc)
  t.is(back.length, lc.length)
  for (const [i, m] of back.entries()) t.is(m, lc[i])
  // What a library function keeps comes back as the originals, in order.
  const kept = ct.applyMaxContextTokens(toOpenAIMessages(lc), 10_000)
  t.deepEqual(fromOpenAIMessages(kept, lc), lc)
})

test('trimBaseMessages shortens with placeholders as new messages of the same class and keeps the others as they are', (t) => {
  const [lc] = conversation()
  const before = lc.map((m) => JSON.stringify(m))
  const result = trimBaseMessages(lc, { budget: 1000, strategy: 'placeholders', preserveRecentTurns: 0 })
  t.true(result.totalTokens <= 1000, `${result.totalTokens}`)
  t.is(result.decision, 'trimmed')
  t.is(result.messages.length, lc.length)
  const shortened = result.messages[3] as ToolMessage
  t.not(shortened, lc[3])
  t.true(shortened instanceof ToolMessage)
  t.like(shortened, { tool_call_id: 'c1', name: 'read_file', id: lc[3].id })
  // Its placeholder, or (where the budget has room for twice as much) its head and tail.
  const content = String(shortened.content)
  t.true(content.length < String(lc[3].content).length && SHORTENED.test(content), content)
  for (const i of [0, 1, 2, 4, 5, 6]) t.is(result.messages[i], lc[i], `message ${i}`)
  t.is(ct.estimateTokens(toOpenAIMessages(result.messages)), result.totalTokens)
  t.deepEqual(
    lc.map((m) => JSON.stringify(m)),
    before,
    'the input is not modified',
  )
})

test('trimBaseMessages keeps units whole or shortened with the priority strategy', (t) => {
  const [lc] = conversation()
  const result = trimBaseMessages(lc, { budget: 300, preserveRecentTurns: 0 })
  t.deepEqual(ct.validateConversation(toOpenAIMessages(result.messages)), [])
  t.false(result.messages.includes(lc[3]))
  // The old result is cut to head and tail or dropped; its call goes with it either way.
  const shortened = result.messages.find((m) => m instanceof ToolMessage && m.tool_call_id === (lc[3] as ToolMessage).tool_call_id)
  t.is(result.messages.includes(lc[2]), shortened !== undefined, 'the call goes with its result')
  t.is(result.messages.at(-1), lc.at(-1))
})

test("trimBaseMessages' and trimMiddleware's unknown-option errors list their own options", (t) => {
  const [lc] = conversation()
  const listed = (call: () => unknown) => {
    const e = t.throws(call) as CodedError
    t.is(e.code, 'INVALID_OPTION')
    return /^maxAge: is not an option; the options here are (.*)$/.exec(e.message)![1].split(', ')
  }
  const base = listed(() => trimBaseMessages(lc, { budget: 300, maxAge: 2 } as never))
  t.true(base.includes('budget') && base.includes('onTrim') && base.includes('strategy'))
  for (const name of ['contextWindow', 'format', 'cacheAware', 'highWater', 'lowWater', 'clearAtLeast']) t.false(base.includes(name), name)
  const middleware = listed(() => trimMiddleware({ budget: 300, maxAge: 2 } as never))
  for (const name of ['budget', 'cacheAware', 'onTrim', 'highWater', 'keepTask']) t.true(middleware.includes(name), name)
  for (const name of ['contextWindow', 'format']) t.false(middleware.includes(name), name)
})

test('a message the library cannot take is an error naming its index', (t) => {
  const [lc] = conversation()
  const error = (messages: unknown[]) => t.throws(() => toOpenAIMessages(messages as BaseMessage[])) as CodedError
  const removed = error([...lc, new RemoveMessage({ id: 'x' })])
  t.is(removed.code, 'INVALID_MESSAGE')
  t.is(removed.message, 'messages[7].type: must be human, ai, tool, system or generic, got "remove"')
  t.is(error([new ChatMessage({ content: 'x', role: 'narrator' })]).message, 'messages[0].role: a ChatMessage role must be one of user, human, assistant, ai, system, developer, tool, got "narrator"')
  t.is(error([null]).message, 'messages[0]: must be a BaseMessage, got null')
  // A call without an id is the library's own error, at the same index and field as in LangChain.
  const noId = new AIMessage({ content: '', tool_calls: [{ name: 'run', args: {} }] })
  const e = t.throws(() => trimBaseMessages([new HumanMessage('go'), noId], { budget: 100 })) as CodedError
  t.is(e.code, 'INVALID_MESSAGE')
  t.regex(e.message, /^messages\[1\]\.tool_calls\[0\]\.id: /)
  t.is((t.throws(() => trimBaseMessages(lc, { budget: 100, cacheAware: true } as never)) as CodedError).message, 'cacheAware: applies to trimMiddleware only: trimBaseMessages trims afresh on every call')
  t.is((t.throws(() => trimMiddleware({ budget: -1 })) as CodedError).message, 'budget: must be an integer of at least 1, got -1')
  const summary = { role: 'user', content: '[context-trim summary]', _summary: true } as Message
  const notConverted = 'was not converted from originals by toOpenAIMessages (an inserted message, such as a summary, has no BaseMessage to map back to)'
  t.is((t.throws(() => fromOpenAIMessages([summary], lc)) as CodedError).message, `trimmed[0]: ${notConverted}`)
  // Mapped back onto other BaseMessages than those converted: an error, not the wrong messages.
  const [other] = conversation()
  t.is((t.throws(() => fromOpenAIMessages(toOpenAIMessages(lc), other)) as CodedError).message, `trimmed[0]: ${notConverted}`)
  const notArray = t.throws(() => fromOpenAIMessages({} as never, lc)) as CodedError
  t.is(notArray.code, 'INVALID_MESSAGES')
  t.is(notArray.message, 'trimmed: must be an array, got object')
  t.is((t.throws(() => toOpenAIMessages('hi' as never)) as CodedError).message, 'messages: must be an array, got string')
})

const readFile = tool(async ({ path }) => file(path), {
  name: 'read_file',
  description: 'read a file',
  schema: z.object({ path: z.string() }),
})

const BUDGET = 12_000
const STEPS = 16

/** A createAgent run whose fake model reads two files a step for STEPS steps, then answers. */
async function agentRun(options: Parameters<typeof trimMiddleware>[0]) {
  const model = fakeModel()
  for (let step = 1; step <= STEPS; step++) {
    // respondWithTools would make the AI message's content the text of its whole input.
    const calls = [0, 1].map((k) => ({ name: 'read_file', args: { path: `src/file-${step}-${k}.ts` }, id: `call-${step}-${k}`, type: 'tool_call' as const }))
    model.respond(new AIMessage({ content: '', tool_calls: calls }))
  }
  model.respond(new AIMessage('done'))
  const reports: AdapterTrimReport[] = []
  const agent = createAgent({
    model,
    tools: [readFile],
    systemPrompt: 'You are a coding agent.',
    middleware: [trimMiddleware({ ...options, onTrim: (r) => reports.push(r) })],
  })
  const state = await agent.invoke({ messages: [new HumanMessage('Fix the failing tests in src/.')] }, { recursionLimit: 100 })
  /** What the model received, without the system prompt the agent sends apart from the messages. */
  const received = model.calls.map((c) => {
    if (!SystemMessage.isInstance(c.messages[0])) throw new Error('the system prompt is first')
    return c.messages.slice(1)
  })
  return { state, received, reports }
}

test('trimMiddleware: every call the fake model receives is within the budget, valid, and trimmed; the state keeps everything', async (t) => {
  const { state, received, reports } = await agentRun({ budget: BUDGET })
  t.is(received.length, STEPS + 1)
  t.is(reports.length, STEPS + 1)
  for (const [k, messages] of received.entries()) {
    const sent = toOpenAIMessages(messages)
    const tokens = ct.estimateTokens(sent)
    t.true(tokens <= BUDGET, `call ${k}: ${tokens}`)
    t.is(tokens, reports[k].totalTokens, `call ${k}`)
    t.deepEqual(ct.validateConversation(sent), [], `call ${k}`)
    // Every message the model received is one of the state's own objects, or a tool result
    // cut to head and tail (a unit is cut rather than dropped when that is enough).
    for (const m of messages) t.true(state.messages.includes(m) || (ToolMessage.isInstance(m) && String(m.content).includes(' tokens cut ...]')))
  }
  t.true(reports.some((r) => r.decision === 'trimmed'))
  t.is(state.messages.length, 2 + 3 * STEPS)
  t.true(ct.estimateTokens(toOpenAIMessages(state.messages)) > 3 * BUDGET)
  t.is(received.at(-1)![0], state.messages[0], 'the task is still sent')
})

test('trimMiddleware sends the task on every call, for every strategy, cache-aware or not', async (t) => {
  for (const strategy of ['priority', 'placeholders', 'truncate', 'roles', 'age'] as const) {
    for (const cacheAware of [true, false]) {
      const { state, received, reports } = await agentRun({ budget: BUDGET, strategy, cacheAware })
      t.true(reports.some((r) => r.decision === 'trimmed'), `${strategy}: trimmed`)
      const without = received.filter((messages) => messages[0] !== state.messages[0]).length
      t.is(without, 0, `${strategy}, cacheAware ${cacheAware}: ${without} of ${received.length} calls without the task first`)
    }
  }
})

test('trimMiddleware is cache-aware by default: the messages sent change only at a re-plan', async (t) => {
  // What the provider sees of a message (a cut copy is rebuilt on every call, with the same text).
  const seen = (m: BaseMessage | undefined) => (m === undefined ? '' : `${m.getType()}|${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`)
  const prefixBreaks = (calls: BaseMessage[][]) => calls.slice(1).filter((now, k) => calls[k].some((m, i) => seen(now[i]) !== seen(m))).length
  const aware = await agentRun({ budget: BUDGET })
  const fresh = await agentRun({ budget: BUDGET, cacheAware: false })
  const trims = aware.reports.filter((r) => r.decision === 'trimmed' || r.decision === 'forced').length
  t.is(prefixBreaks(aware.received), trims)
  t.false(aware.reports.some((r) => r.reset))
  t.true(prefixBreaks(fresh.received) > trims, `${prefixBreaks(fresh.received)} against ${trims}`)
})

test('trimMiddleware with placeholders sends shortened ToolMessages and leaves the state whole', async (t) => {
  const { state, received } = await agentRun({ budget: BUDGET, strategy: 'placeholders' })
  const last = received.at(-1)!
  const shortened = last.filter((m) => !state.messages.includes(m))
  t.true(shortened.length > 0)
  t.true(shortened.some((m) => String(m.content).startsWith('[File: ')), 'a placeholder among them')
  for (const m of shortened) {
    t.true(ToolMessage.isInstance(m))
    const whole = state.messages.find((w) => ToolMessage.isInstance(w) && w.tool_call_id === (m as ToolMessage).tool_call_id)!
    t.true(String(m.content).length < String(whole.content).length && SHORTENED.test(String(m.content)), String(m.content))
  }
  for (const m of state.messages) if (ToolMessage.isInstance(m)) t.true(String(m.content).length > 1000)
  t.deepEqual(ct.validateConversation(toOpenAIMessages(last)), [])
})

test('trimMiddleware keeps a trimmer per thread across the runs of an agent with a checkpointer', async (t) => {
  // Two threads, three runs each, interleaved; every run reads two files a step for 5 steps.
  const model = fakeModel()
  const threads = ['a', 'b']
  const runs = 3
  const steps = 5
  const order: string[] = []
  for (let run = 0; run < runs; run++) {
    for (const thread of threads) {
      for (let step = 1; step <= steps; step++) {
        const calls = [0, 1].map((k) => ({ name: 'read_file', args: { path: `src/${thread}-${run}-${step}-${k}.ts` }, id: `${thread}-${run}-${step}-${k}`, type: 'tool_call' as const }))
        model.respond(new AIMessage({ content: '', tool_calls: calls }))
        order.push(thread)
      }
      model.respond(new AIMessage(`done ${run}`))
      order.push(thread)
    }
  }
  const reports: AdapterTrimReport[] = []
  const agent = createAgent({
    model,
    tools: [readFile],
    middleware: [trimMiddleware({ budget: BUDGET, onTrim: (r) => reports.push(r) })],
    checkpointer: new MemorySaver(),
  })
  for (let run = 0; run < runs; run++) {
    for (const thread of threads) {
      await agent.invoke({ messages: [new HumanMessage(`task ${run}`)] }, { configurable: { thread_id: thread }, recursionLimit: 100 })
    }
  }
  t.is(reports.length, order.length)
  t.false(reports.some((r) => r.reset), 'a trimmer shared by the threads would forget its decisions at every alternation')
  const high = Math.floor(0.85 * BUDGET)
  for (const thread of threads) {
    const calls = order.flatMap((th, k) => (th === thread ? [k] : []))
    // The first call of every later run recalls the thread's decisions: its history (new
    // objects, from the checkpointer) is over the high-water mark, yet nothing is re-planned,
    // and the messages sent start with those of the run before.
    for (let run = 1; run < runs; run++) {
      const first = calls[run * (steps + 1)]
      const before = calls[run * (steps + 1) - 1]
      t.like(reports[first], { decision: 'kept' }, `thread ${thread}, run ${run}`)
      t.true(reports[first].inputTokens > high, `thread ${thread}, run ${run}: ${reports[first].inputTokens}`)
      const sent = JSON.stringify(toOpenAIMessages(model.calls[first].messages))
      const previous = JSON.stringify(toOpenAIMessages(model.calls[before].messages))
      t.true(sent.startsWith(previous.slice(0, -1)), `thread ${thread}, run ${run}`)
    }
  }
})

test('trimMiddleware keeps the trimmers of the 1,000 threads used last', async (t) => {
  const reports: AdapterTrimReport[] = []
  const middleware = trimMiddleware({ budget: 1500, onTrim: (r) => reports.push(r) })
  type Call = (request: { messages: BaseMessage[]; runtime: object }, handler: (request: { messages: BaseMessage[] }) => unknown) => unknown
  const wrap = middleware.wrapModelCall as unknown as Call
  const [history] = conversation()
  const call = async (thread: string, messages: BaseMessage[]) => {
    await wrap({ messages, runtime: { configurable: { thread_id: thread } } }, () => new AIMessage('ok'))
    return reports.at(-1)!.decision
  }
  const later = [...history, new HumanMessage('And the other test.')]
  t.is(await call('t0', history), 'trimmed')
  t.is(await call('t0', later), 'kept')
  for (let k = 1; k < 1000; k++) await call(`t${k}`, history)
  t.is(await call('t0', later), 'kept', 't0 is one of the 1,000 threads used last')
  await call('t1000', history)
  await call('t1', later)
  t.is(reports.at(-1)!.decision, 'trimmed', 't1 was the least recently used: its trimmer is gone')
  t.is(await call('t0', later), 'kept')
})

test('the CommonJS entry point makes a middleware the CommonJS build of langchain runs', async (t) => {
  const require = createRequire(import.meta.url)
  const cjs = require('../adapters/langchain.cjs') as typeof import('../adapters/langchain.mjs')
  const lc = require('langchain') as typeof import('langchain')
  const core = require('@langchain/core/testing') as typeof import('@langchain/core/testing')
  const messages = require('@langchain/core/messages') as typeof import('@langchain/core/messages')
  const model = core.fakeModel()
  for (let step = 1; step <= 6; step++) {
    model.respond(new messages.AIMessage({ content: '', tool_calls: [{ name: 'read_file', args: { path: `f${step}.ts` }, id: `c${step}`, type: 'tool_call' }] }))
  }
  model.respond(new messages.AIMessage('done'))
  const agent = lc.createAgent({ model, tools: [readFile], middleware: [cjs.trimMiddleware({ budget: 4000, strategy: 'placeholders' })] })
  const state = await agent.invoke({ messages: [new messages.HumanMessage('go')] }, { recursionLimit: 100 })
  t.is(state.messages.at(-1)!.content, 'done')
  for (const call of model.calls) t.true(ct.estimateTokens(cjs.toOpenAIMessages(call.messages)) <= 4000)
  t.true(model.calls.at(-1)!.messages.some((m) => !state.messages.includes(m)), 'something was shortened')
})

test('a file block counts as an attachment, never as its base64 text, and a shortened message does not carry that text', (t) => {
  const pdf = Buffer.alloc(60_000, 7).toString('base64')
  const history = [
    new SystemMessage('sys'),
    new HumanMessage({ content: [{ type: 'text', text: 'Summarise this PDF' }, { type: 'file', source_type: 'base64', data: pdf, mime_type: 'application/pdf' }] }),
    new AIMessage('ok'),
    new HumanMessage('continue'),
  ]
  const [converted] = toOpenAIMessages([history[1]])
  t.true(ct.estimateMessageTokens(converted) < 800, `${ct.estimateMessageTokens(converted)}`)
  for (const strategy of ['priority', 'placeholders'] as const) {
    for (const budget of [30, 8000]) {
      const { messages } = trimBaseMessages(history, { budget, strategy })
      for (const m of messages) t.true(history.includes(m) || !JSON.stringify(m.content).includes(pdf.slice(0, 64)), `${strategy} ${budget}`)
    }
  }
})

test('the conversions load without the langchain package; trimMiddleware then says what it needs', (t) => {
  // An app with context-trim installed and no langchain (only @langchain/core objects, or plain ones).
  const app = mkdtempSync(join(tmpdir(), 'context-trim-no-langchain-'))
  try {
    const pkg = join(app, 'node_modules', 'context-trim')
    mkdirSync(pkg, { recursive: true })
    const root = fileURLToPath(new URL('..', import.meta.url))
    for (const f of readdirSync(root).filter((f) => ['package.json', 'index.js', 'adapters'].includes(f) || f.endsWith('.node'))) symlinkSync(join(root, f), join(pkg, f))
    const check = `try { lc.trimMiddleware({ budget: 100 }); console.log('made') } catch (e) { console.log(e.code) } console.log(lc.toOpenAIMessages([{ type: 'human', content: 'hi' }]).length)`
    writeFileSync(join(app, 'cjs.cjs'), `const lc = require('context-trim/langchain'); ${check}`)
    writeFileSync(join(app, 'esm.mjs'), `import * as lc from 'context-trim/langchain'; ${check}`)
    for (const entry of ['cjs.cjs', 'esm.mjs']) {
      const run = spawnSync(process.execPath, ['--preserve-symlinks', entry], { cwd: app, encoding: 'utf8' })
      t.is(run.status, 0, run.stderr)
      t.deepEqual(run.stdout.trim().split('\n'), ['MISSING_DEPENDENCY', '1'], entry)
    }
  } finally {
    rmSync(app, { recursive: true, force: true })
  }
})
