// context-trim/ai-sdk against the AI SDK itself (ai@6): `trimPrepareStep` in generateText and
// streamText tool loops run by the SDK's own MockLanguageModelV3. What is checked is the prompt
// the mock model receives: within the budget by the library's own count (ai-sdk format),
// valid, trimmed, and with a stable prefix between trims when cache-aware.
import test from 'ava'
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { trimPrepareStep, type AdapterTrimReport } from '../adapters/ai-sdk.mjs'

import { ct, snapshot, type CodedError } from './helpers.js'
import type { AnyMessage } from '../index.js'

type Prompt = Array<{ role: string; content: unknown }>
type Report = AdapterTrimReport & { stepNumber: number }

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}
const SYSTEM = 'You are a coding agent.'

/** What a step asks for: reads of 12 files, a test run every fourth step, two calls every third. */
function calls(step: number) {
  return Array.from({ length: step % 3 === 0 ? 2 : 1 }, (_, k) => ({
    type: 'tool-call' as const,
    toolCallId: `call-${step}-${k}`,
    toolName: step % 4 === 0 ? 'run' : 'read_file',
    input: JSON.stringify(step % 4 === 0 ? { command: `make test-${step}` } : { path: `src/file-${step}-${k}.ts` }),
  }))
}

/** A mock model that calls tools for `steps` steps, then answers; it records every prompt. */
function mockModel(steps: number, prompts: Prompt[]) {
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown as Prompt)
      const step = prompts.length
      if (step > steps) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
      return { content: calls(step), finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] }
    },
    doStream: async (options) => {
      prompts.push(options.prompt as unknown as Prompt)
      const step = prompts.length
      const done = step > steps
      const parts = done
        ? [
            { type: 'text-start' as const, id: 't' },
            { type: 'text-delta' as const, id: 't', delta: 'done' },
            { type: 'text-end' as const, id: 't' },
          ]
        : calls(step)
      const finish = { type: 'finish' as const, finishReason: done ? { unified: 'stop' as const, raw: 'stop' } : { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage }
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of [...parts, finish]) controller.enqueue(part)
            controller.close()
          },
        }),
      }
    },
  })
}

const tools = {
  read_file: tool({
    description: 'read a file',
    inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    execute: async ({ path }) => `// ${path}\n` + `export const value = ${JSON.stringify(path)};\n`.repeat(100),
  }),
  run: tool({
    description: 'run a command',
    inputSchema: jsonSchema<{ command: string }>({ type: 'object', properties: { command: { type: 'string' } }, required: ['command'] }),
    execute: async ({ command }) => `$ ${command}\n` + 'ok all tests passed\n'.repeat(60),
  }),
}

/** The messages of a prompt, without the system prompt the SDK sends apart from them. */
function messagesOf(prompt: Prompt): AnyMessage[] {
  if (prompt[0].role !== 'system' || prompt[0].content !== SYSTEM) throw new Error('the prompt does not start with the system prompt')
  return prompt.slice(1) as unknown as AnyMessage[]
}

/** How many prompts do not start with every message of the prompt before them. */
function prefixBreaks(prompts: Prompt[]): number {
  let breaks = 0
  for (let k = 1; k < prompts.length; k++) {
    const before = prompts[k - 1].map((m) => JSON.stringify(m))
    const now = prompts[k].slice(0, before.length).map((m) => JSON.stringify(m))
    if (before.some((m, i) => m !== now[i])) breaks++
  }
  return breaks
}

const BUDGET = 6000
const STEPS = 14

async function run(options: Parameters<typeof trimPrepareStep>[0]) {
  const prompts: Prompt[] = []
  const reports: Report[] = []
  const result = await generateText({
    model: mockModel(STEPS, prompts),
    tools,
    system: SYSTEM,
    prompt: 'Fix the failing tests in src/.',
    stopWhen: stepCountIs(30),
    prepareStep: trimPrepareStep({ ...options, onTrim: (r) => reports.push(r) }),
  })
  return { prompts, reports, result }
}

test('every prompt the mock model receives is within the budget, valid, and trimmed once the history outgrows it', async (t) => {
  const { prompts, reports, result } = await run({ budget: BUDGET })
  t.is(result.text, 'done')
  t.is(prompts.length, STEPS + 1)
  t.deepEqual(
    reports.map((r) => r.stepNumber),
    prompts.map((_, k) => k),
  )
  for (const [step, prompt] of prompts.entries()) {
    const sent = messagesOf(prompt)
    const tokens = ct.estimateTokens(sent, { format: 'ai-sdk' })
    t.true(tokens <= BUDGET, `step ${step}: ${tokens} tokens`)
    t.is(tokens, reports[step].totalTokens, `step ${step}: the library's count of what the model received`)
    t.deepEqual(ct.validateConversation(sent, { format: 'ai-sdk' }), [], `step ${step}`)
  }
  // The whole history is far over the budget, and the last prompt is not.
  const history = [{ role: 'user', content: 'Fix the failing tests in src/.' }, ...result.response.messages] as AnyMessage[]
  const full = ct.estimateTokens(history, { format: 'ai-sdk' })
  t.true(full > 3 * BUDGET, `${full} tokens untrimmed`)
  t.true(reports.some((r) => r.decision === 'trimmed'))
  t.is(reports[STEPS].inputTokens, ct.estimateTokens(history.slice(0, -1), { format: 'ai-sdk' }))
  // The task and the latest call with its result are what the model still sees.
  const last = messagesOf(prompts[STEPS])
  t.deepEqual(last[0], { role: 'user', content: [{ type: 'text', text: 'Fix the failing tests in src/.' }], providerOptions: undefined })
  t.like(last.at(-1), { role: 'tool' })
})

test('onTrim reports which messages of the step went and which were shortened, by index', async (t) => {
  const { prompts, reports } = await run({ budget: BUDGET, strategy: 'placeholders' })
  const trimmed = reports.filter((r) => r.dropped.length + r.shortened.length > 0)
  t.true(trimmed.length > 0)
  for (const r of reports) {
    // Step k's messages are the prompt and an assistant and a tool message per earlier step:
    // less the dropped ones, they are what the model received.
    const given = 1 + 2 * r.stepNumber
    t.is(messagesOf(prompts[r.stepNumber]).length + r.dropped.length, given, `step ${r.stepNumber}`)
    t.true([...r.dropped, ...r.shortened].every((i) => Number.isInteger(i) && i >= 0 && i < given))
    t.true(r.shortened.every((i) => !r.dropped.includes(i)))
  }
})

test('reserve leaves room for the rest of the request: the messages are trimmed to budget - reserve', async (t) => {
  const reserve = 1_500
  const { prompts, reports } = await run({ budget: BUDGET, reserve })
  t.true(reports.some((r) => r.decision === 'trimmed'))
  for (const [step, prompt] of prompts.entries()) {
    const tokens = ct.estimateTokens(messagesOf(prompt), { format: 'ai-sdk' })
    t.true(tokens <= BUDGET - reserve, `step ${step}: ${tokens} tokens`)
  }
  // Without it the same run sends more than that.
  const without = await run({ budget: BUDGET })
  t.true(without.prompts.some((p) => ct.estimateTokens(messagesOf(p), { format: 'ai-sdk' }) > BUDGET - reserve))
})

test('the task is in every prompt, for every strategy, cache-aware or not (keepTask: false lets the oldest-first ones drop it)', async (t) => {
  const hasTask = (prompt: Prompt) => messagesOf(prompt).some((m) => m.role === 'user' && JSON.stringify(m.content).includes('Fix the failing tests'))
  for (const strategy of ['priority', 'placeholders', 'truncate', 'roles', 'age'] as const) {
    for (const cacheAware of [true, false]) {
      const { prompts, reports } = await run({ budget: BUDGET, strategy, cacheAware })
      t.true(reports.some((r) => r.decision === 'trimmed'), `${strategy}: trimmed`)
      const without = prompts.filter((p) => !hasTask(p)).length
      t.is(without, 0, `${strategy}, cacheAware ${cacheAware}: ${without} of ${prompts.length} prompts without the task`)
    }
  }
  const { prompts } = await run({ budget: BUDGET, strategy: 'age', keepTask: false })
  t.true(prompts.some((p) => !hasTask(p)), 'keepTask: false')
})

test('cache-aware by default: one trimmer per call keeps the prompt prefix between trims, unlike trimming afresh each step', async (t) => {
  const aware = await run({ budget: BUDGET })
  const fresh = await run({ budget: BUDGET, cacheAware: false })
  const trims = aware.reports.filter((r) => r.decision === 'trimmed' || r.decision === 'forced').length
  t.is(prefixBreaks(aware.prompts), trims, 'the prefix changes only at a re-plan')
  t.true(aware.reports.some((r) => r.decision === 'kept' && r.inputTokens > BUDGET), 'kept the previous decisions over the budget')
  t.false(aware.reports.some((r) => r.reset), 'the history only grew')
  // Trimming afresh to the budget cuts at a new place almost every step once the budget is reached.
  t.true(prefixBreaks(fresh.prompts) > prefixBreaks(aware.prompts), `${prefixBreaks(fresh.prompts)} against ${prefixBreaks(aware.prompts)}`)
  for (const prompt of fresh.prompts) t.true(ct.estimateTokens(messagesOf(prompt), { format: 'ai-sdk' }) <= BUDGET)
})

for (const strategy of ['priority', 'placeholders', 'truncate', 'roles', 'age'] as const) {
  test(`strategy ${strategy}: every prompt is within the budget and valid`, async (t) => {
    const { prompts, reports } = await run({ budget: BUDGET, strategy, preserveRecentTurns: strategy === 'priority' || strategy === 'placeholders' ? 1 : undefined })
    t.is(prompts.length, STEPS + 1)
    for (const [step, prompt] of prompts.entries()) {
      const sent = messagesOf(prompt)
      t.true(ct.estimateTokens(sent, { format: 'ai-sdk' }) <= BUDGET, `step ${step}`)
      t.deepEqual(ct.validateConversation(sent, { format: 'ai-sdk' }), [], `step ${step}`)
    }
    t.true(reports.some((r) => r.freedTokens > 0))
  })
}

test('placeholders replace tool outputs in the SDK shape, and the SDK history keeps the full outputs', async (t) => {
  const { prompts, result } = await run({ budget: BUDGET, strategy: 'placeholders' })
  const before = snapshot(result.response.messages)
  const outputs = prompts.flat().flatMap((m) => (Array.isArray(m.content) ? (m.content as Array<{ type: string; output?: { type: string; value: string } }>) : []))
  // Every output the SDK made is 1,000 characters and more: in the prompts, a placeholder (a
  // file's has a 100-character preview) or, where the budget has room for twice as much, a
  // head-and-tail cut.
  const results = outputs.filter((p) => p.type === 'tool-result')
  const placeholders = results.filter((p) => /^\[(File: |Content truncated)/.test(p.output!.value))
  const cuts = results.filter((p) => /\n\[\.\.\. \d+ tokens cut \.\.\.\]\n/.test(p.output!.value))
  t.true(placeholders.length > 0)
  for (const p of placeholders) t.true(p.output!.value.length < 500)
  for (const p of [...placeholders, ...cuts]) t.is(p.output!.type, 'text')
  // Every tool result the SDK keeps in its own history is whole.
  for (const m of result.response.messages) {
    if (m.role !== 'tool') continue
    for (const p of m.content) if (p.type === 'tool-result') t.true(JSON.stringify(p.output).length > 1000)
  }
  t.deepEqual(result.response.messages, before)
})

test('streamText runs the same prepareStep: every streamed step is within the budget and valid', async (t) => {
  const prompts: Prompt[] = []
  const reports: Report[] = []
  const stream = streamText({
    model: mockModel(STEPS, prompts),
    tools,
    system: SYSTEM,
    prompt: 'Fix the failing tests in src/.',
    stopWhen: stepCountIs(30),
    prepareStep: trimPrepareStep({ budget: BUDGET, strategy: 'placeholders', onTrim: (r) => reports.push(r) }),
  })
  t.is(await stream.text, 'done')
  t.is(prompts.length, STEPS + 1)
  for (const prompt of prompts) {
    const sent = messagesOf(prompt)
    t.true(ct.estimateTokens(sent, { format: 'ai-sdk' }) <= BUDGET)
    t.deepEqual(ct.validateConversation(sent, { format: 'ai-sdk' }), [])
  }
  t.true(reports.some((r) => r.decision === 'trimmed'))
})

test('one prepareStep shared by concurrent calls keeps a trimmer per call', async (t) => {
  const reports: Report[] = []
  const prepareStep = trimPrepareStep({ budget: BUDGET, onTrim: (r) => reports.push(r) })
  const a: Prompt[] = []
  const b: Prompt[] = []
  const call = (prompts: Prompt[], task: string) =>
    generateText({ model: mockModel(STEPS, prompts), tools, system: SYSTEM, prompt: task, stopWhen: stepCountIs(30), prepareStep })
  await Promise.all([call(a, 'Fix the failing tests in src/.'), call(b, 'Rename value to total everywhere.')])
  t.is(reports.length, 2 * (STEPS + 1))
  t.false(reports.some((r) => r.reset), 'a trimmer shared by both calls would forget its decisions at every alternation')
  t.is(prefixBreaks(a), reports.filter((r, k) => k % 2 === 0 && r.decision === 'trimmed').length)
})

test('a bad option throws when the prepareStep is made, naming the option', (t) => {
  const error = (options: unknown) => {
    const e = t.throws(() => trimPrepareStep(options as never)) as CodedError
    t.is(e.name, 'TypeError')
    t.is(e.code, 'INVALID_OPTION')
    return e.message
  }
  t.is(error(undefined), 'options: must be an object, got undefined')
  t.is(error({}), 'budget: is required')
  t.is(error({ budget: '100' }), 'budget: must be a number, got string')
  t.is(error({ budget: 0 }), 'budget: must be an integer of at least 1, got 0')
  t.is(error({ budget: 1000, cacheAware: 'yes' }), 'cacheAware: must be a boolean, got string')
  t.is(error({ budget: 1000, reserve: '1' }), 'reserve: must be a number, got string')
  t.is(error({ budget: 1000, reserve: 1000 }), 'reserve: must be an integer from 0 to budget - 1 (999), got 1000')
  t.is(error({ budget: 1000, reserve: -1 }), 'reserve: must be an integer from 0 to budget - 1 (999), got -1')
  t.is(error({ budget: 1000, onTrim: 1 }), 'onTrim: must be a function, got number')
  t.is(error({ budget: 1000, format: 'openai' }), 'format: cannot be set here: the adapter reads ai-sdk messages')
  t.is(error({ budget: 1000, cacheAware: false, highWater: 0.9 }), 'highWater: applies with cacheAware only, cacheAware is false')
  // The others are the library's own checks.
  const library = t.throws(() => new ct.CacheAwareTrimmer({ contextWindow: 1000, strategy: 'newest' as never }))
  t.is(error({ budget: 1000, strategy: 'newest' }), library.message)
  t.is(error({ budget: 1000, lowWater: 0.9 }), 'lowWater: must be a fraction of the window in [0, highWater = 0.85], got 0.9')
})

test("an unknown option's error lists the adapter's options: budget, cacheAware and onTrim, not contextWindow or format", (t) => {
  const listed = (options: unknown) => {
    const e = t.throws(() => trimPrepareStep(options as never)) as CodedError
    t.is(e.code, 'INVALID_OPTION')
    const m = /^(\S+): is not an option; the options here are (.*)$/.exec(e.message)
    t.truthy(m, e.message)
    return m![2].split(', ')
  }
  const own = listed({ budget: 20000, maxAge: 2 })
  for (const name of ['budget', 'reserve', 'cacheAware', 'onTrim', 'strategy', 'truncation', 'keepTask', 'highWater', 'encoding', 'model']) t.true(own.includes(name), name)
  for (const name of ['contextWindow', 'format']) t.false(own.includes(name), name)
  t.deepEqual(own, [...own].sort())
  // A misspelt option the library would take for one the adapter sets itself.
  t.deepEqual(listed({ budget: 20000, contextWindw: 2 }), own)
  t.deepEqual(listed({ budget: 20000, formt: 'openai' }), own)
  // Without the cache, its options are refused, so not listed.
  const uncached = listed({ budget: 20000, cacheAware: false, maxAge: 2 })
  for (const name of ['highWater', 'lowWater', 'clearAtLeast']) t.false(uncached.includes(name), name)
  t.true(uncached.includes('cacheAware'))
  // A near miss of an option the adapter takes, and a nested option, are the library's words.
  t.is((t.throws(() => trimPrepareStep({ budget: 20000, stratgy: 'age' } as never)) as Error).message, 'stratgy: is not an option (did you mean strategy?)')
  t.is((t.throws(() => trimPrepareStep({ budget: 20000, strategy: 'truncate', truncation: { maxAg: 2 } } as never)) as Error).message, 'truncation.maxAg: is not an option (did you mean maxAge?)')
})

test('a message the library cannot read is an error naming its index, from the SDK call', async (t) => {
  const prompts: Prompt[] = []
  const messages = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: '', toolName: 'run', input: {} }] },
  ] as ModelMessage[]
  const e = (await t.throwsAsync(generateText({ model: mockModel(0, prompts), messages, prepareStep: trimPrepareStep({ budget: BUDGET }) }))) as CodedError
  t.is(e.code, 'INVALID_MESSAGE')
  t.regex(e.message, /^messages\[1\]\./)
  t.is(prompts.length, 0)
})
