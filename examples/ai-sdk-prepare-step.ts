/**
 * The Vercel AI SDK (`ai` 6) with context-trim in its `prepareStep` hook, runnable offline:
 *
 *   node --import @oxc-node/core/register examples/ai-sdk-prepare-step.ts
 *
 * `generateText` runs a multi-step tool loop; before every step, `prepareStep` gets the
 * messages the SDK is about to send (AI SDK `ModelMessage`s) and returns them trimmed:
 * old tool outputs become placeholders (`truncateOldToolOutputs`), then whole old units are
 * dropped if the request is still over the budget (`applyMaxContextTokens`). Both functions
 * read the AI SDK format directly and return the same message type. The model is the SDK's own
 * `MockLanguageModelV3`: it asks to read one file after another, then answers. With a real
 * provider (`openai('gpt-4o')`, `anthropic(...)`) nothing else changes.
 */
import { generateText, stepCountIs, tool } from 'ai'
import type { ModelMessage } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'

import { applyMaxContextTokens, estimateTokens, truncateOldToolOutputs, validateConversation } from '../index.js'
import type { AiSdkMessage } from '../index.js'

/** A fake source file of `lines` lines. */
export function fakeFile(path: string, lines: number): string {
  return Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(4)}  // ${path}: line ${i + 1} of a file the agent reads`).join('\n')
}

// context-trim's `AiSdkMessage` type gives every part an index signature, which the SDK's part
// interfaces (`TextPart`, `ToolCallPart`…) do not declare, so TypeScript wants a cast each way.
// The values are the same objects: kept messages come back as they were given.
const toContextTrim = (messages: ModelMessage[]) => messages as unknown as AiSdkMessage[]
const toAiSdk = (messages: AiSdkMessage[]) => messages as unknown as ModelMessage[]

/** Trims what one step sends: placeholders for old tool outputs, then the hard cap. */
export function trimForStep(messages: ModelMessage[], budget: number): ModelMessage[] {
  const shortened = truncateOldToolOutputs(toContextTrim(messages), { maxAge: 2, maxTokensPerOutput: 1500 })
  return toAiSdk(applyMaxContextTokens(shortened, budget, { keepFirstSystem: true, format: 'ai-sdk' }))
}

/** What one step sent. */
export interface StepReport {
  step: number
  /** Tokens of the messages the SDK wanted to send. */
  fullTokens: number
  /** Tokens of what prepareStep let through. */
  sentTokens: number
  /** Problems validateConversation finds in what was sent (always none). */
  problems: number
}

/** Runs the agent: `files` reads, then a final answer, each step trimmed to `budget` tokens. */
export async function runAgent(files: string[], budget: number): Promise<{ text: string; steps: StepReport[]; modelCalls: number }> {
  const steps: StepReport[] = []
  let call = 0
  const model = new MockLanguageModelV3({
    doGenerate: async () => {
      const path = files[call++]
      const usage = {
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      }
      if (path === undefined) {
        return { content: [{ type: 'text', text: `Read ${files.length} files.` }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
      }
      return {
        content: [{ type: 'tool-call', toolCallId: `call_${call}`, toolName: 'readFile', input: JSON.stringify({ path }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      }
    },
  })

  const result = await generateText({
    model,
    system: 'You are a coding agent. Read the files you need, then answer.',
    prompt: 'Summarise the modules of this project.',
    tools: {
      readFile: tool({
        description: 'Reads a file',
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => fakeFile(path, 400),
      }),
    },
    stopWhen: stepCountIs(files.length + 1),
    prepareStep: ({ messages, stepNumber }) => {
      const sent = trimForStep(messages, budget)
      steps.push({
        step: stepNumber,
        fullTokens: estimateTokens(toContextTrim(messages), { format: 'ai-sdk' }),
        sentTokens: estimateTokens(toContextTrim(sent), { format: 'ai-sdk' }),
        problems: validateConversation(toContextTrim(sent), { format: 'ai-sdk' }).length,
      })
      return { messages: sent }
    },
  })
  return { text: result.text, steps, modelCalls: model.doGenerateCalls.length }
}

async function main(): Promise<void> {
  const { text, steps } = await runAgent(['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/d.ts', 'src/e.ts', 'src/f.ts'], 12_000)
  for (const s of steps) console.log(`step ${s.step}  wanted ${String(s.fullTokens).padStart(6)}  sent ${String(s.sentTokens).padStart(6)} tokens  problems ${s.problems}`)
  console.log(text)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main()
}
