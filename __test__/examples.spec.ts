import test from 'ava'

import { ct, transcript, transcripts } from './helpers.js'
import { ReplayClient, recordedTools, runAgent as runOpenAiLoop, runAgentWithWindow } from '../examples/openai-sdk-loop.js'
import { runAgent as runAiSdkAgent, trimForStep } from '../examples/ai-sdk-prepare-step.js'
import { policies, replay } from '../examples/prompt-cache-budget.js'
import type { ModelMessage } from 'ai'

test('the OpenAI SDK loop replays a real run, every request within the budget and valid', async (t) => {
  const recorded = transcript('openhands-ponyc-4595.json')
  const start = recorded.slice(0, recorded.findIndex((m) => m.role === 'assistant'))
  const client = new ReplayClient(recorded)
  const { history, calls } = await runOpenAiLoop(client, [...start], recordedTools(recorded), { budget: 27_000 })
  // The app's own history is the whole run: trimming touched only what was sent.
  t.is(history.length, recorded.length)
  t.deepEqual(history.map((m) => [m.role, m.content]), recorded.map((m) => [m.role, m.content]))
  t.is(calls.length, recorded.filter((m) => m.role === 'assistant').length)
  for (const c of calls) {
    t.true(c.sentTokens <= 27_000)
    t.is(c.problems, 0)
  }
  t.true(calls.at(-1)!.historyTokens > 27_000, 'the run outgrew the budget')
  // What was sent is what trimWithPlaceholders gives for the history at that point.
  t.deepEqual(client.requests.at(-1), ct.trimWithPlaceholders(history.slice(0, -1), { targetTokens: 27_000, model: 'gpt-4o' }).messages)
})

test('the same loop on a ContextWindow sends exactly the same requests', async (t) => {
  const recorded = transcript('openhands-ponyc-4595.json')
  const start = recorded.slice(0, recorded.findIndex((m) => m.role === 'assistant'))
  const stateless = new ReplayClient(recorded)
  const windowed = new ReplayClient(recorded)
  const a = await runOpenAiLoop(stateless, [...start], recordedTools(recorded), { budget: 27_000 })
  const b = await runAgentWithWindow(windowed, start, recordedTools(recorded), { budget: 27_000 })
  t.deepEqual(windowed.requests, stateless.requests)
  t.deepEqual(b.calls, a.calls)
  t.deepEqual(b.history, a.history)
  t.is(b.calls.length, recorded.filter((m) => m.role === 'assistant').length)
})

test('the AI SDK prepareStep hook trims every step of a generateText tool loop', async (t) => {
  const files = ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/d.ts', 'src/e.ts']
  const { text, steps, modelCalls } = await runAiSdkAgent(files, 6_000)
  t.is(text, 'Read 5 files.')
  t.is(modelCalls, files.length + 1)
  t.deepEqual(steps.map((s) => s.step), [0, 1, 2, 3, 4, 5])
  for (const s of steps) {
    t.true(s.sentTokens <= 6_000, `step ${s.step}`)
    t.is(s.problems, 0)
  }
  t.true(steps.at(-1)!.fullTokens > 3 * 6_000, 'without trimming the last step would be far over the budget')
  t.true(steps.at(-1)!.sentTokens < steps.at(-1)!.fullTokens)
})

test('trimForStep keeps an AI SDK conversation as the SDK gave it when it is small', (t) => {
  const messages: ModelMessage[] = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
  ]
  const sent = trimForStep(messages, 1000)
  t.is(sent.length, 2)
  t.is(sent[0], messages[0])
  t.is(sent[1], messages[1])
})

test('the prompt-cache replay: high/low-water marks keep the cache that trimming every call loses', (t) => {
  const messages = transcript('sweagent-marshmallow-1867-fc.json')
  const budget = Math.floor(ct.estimateTokens(messages) / 2)
  const costs = Object.fromEntries(Object.entries(policies(budget)).map(([name, policy]) => [name, replay(messages, policy)]))
  const none = costs['no trimming']
  const every = costs['trim every call to the budget']
  const marks = costs['high/low-water marks (100% / 70%)']
  t.is(none.requests, messages.filter((m, i) => m.role === 'assistant' && i > 0).length)
  for (const c of Object.values(costs)) t.is(c.requests, none.requests)
  t.true(every.sent < none.sent)
  t.true(every.cost > none.cost, 'trimming every call costs more than sending everything')
  t.true(marks.cost < every.cost)
  t.true(marks.cached / marks.sent > every.cached / every.sent)
  t.true(marks.largest <= budget)
  // Re-plan points (issue 44): trimming every call costs at most 1.5× sending everything.
  const replan = costs['trim every call, replanEvery budget/4']
  t.true(replan.cost <= 1.5 * none.cost, `${replan.cost} against ${none.cost}`)
  t.true(replan.largest <= budget)
  // The figures of docs/prompt-caching.md for this transcript.
  t.deepEqual([none, every, replan, marks].map((c) => Math.round(c.cost)), [15440, 36642, 17228, 16023])
})

test('the prompt-cache replay: with replanEvery, trimming every call costs at most 1.5× sending everything on every bundled transcript (issue 44)', (t) => {
  for (const [file, messages] of transcripts()) {
    const budget = Math.floor(ct.estimateTokens(messages) / 2)
    const costs = Object.fromEntries(Object.entries(policies(budget)).map(([name, policy]) => [name, replay(messages, policy)]))
    const none = costs['no trimming']
    const replan = costs['trim every call, replanEvery budget/4']
    t.true(replan.cost <= 1.5 * none.cost, `${file}: ${(replan.cost / none.cost).toFixed(2)}×`)
    t.true(replan.largest <= budget, `${file}: every request within the budget`)
    t.true(replan.cost < costs['trim every call to the budget'].cost, `${file}: cheaper than re-planning every call`)
  }
})
