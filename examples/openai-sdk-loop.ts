/**
 * A plain OpenAI SDK agent loop that trims what it sends before every model call, runnable
 * offline:
 *
 *   node --import @oxc-node/core/register examples/openai-sdk-loop.ts
 *
 * The client has the OpenAI SDK's shape (`client.chat.completions.create`) but is fake: it
 * replays the model turns of a real agent run (samples/transcripts/openhands-ponyc-4595.json),
 * and the tools answer with that run's recorded outputs. With the real SDK, pass
 * `new OpenAI()` instead: nothing else changes.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { ContextWindow, estimateTokens, trimWithPlaceholders, validateConversation } from '../index.js'
import type { Message, ToolCall } from '../index.js'

/** The part of the OpenAI SDK's client this loop uses. */
export interface ChatCompletionsClient {
  chat: {
    completions: {
      create(body: { model: string; messages: Message[]; tools?: unknown[] }): Promise<{
        choices: Array<{ message: Message; finish_reason: string }>
        usage: { prompt_tokens: number }
      }>
    }
  }
}

/** A client that sends nothing anywhere: it answers with the next model turn of a recorded run. */
export class ReplayClient implements ChatCompletionsClient {
  /** What each request sent: its messages. */
  readonly requests: Message[][] = []
  private readonly turns: Message[]

  constructor(transcript: Message[]) {
    this.turns = transcript.filter((m) => m.role === 'assistant')
  }

  chat = {
    completions: {
      create: async (body: { model: string; messages: Message[] }) => {
        this.requests.push(body.messages)
        const message = this.turns[this.requests.length - 1] ?? { role: 'assistant', content: 'Done.' }
        return {
          choices: [{ message, finish_reason: message.tool_calls?.length ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: estimateTokens(body.messages) },
        }
      },
    },
  }
}

/** The recorded output of each tool call of a run, by call id. */
function recordedTools(transcript: Message[]): (call: ToolCall) => Promise<string> {
  const outputs = new Map(transcript.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content as string]))
  return async (call) => outputs.get(call.id) ?? `no recorded output for ${call.id}`
}

/** What one model call sent. */
export interface CallReport {
  /** Tokens of the full history at that point. */
  historyTokens: number
  /** Tokens actually sent. */
  sentTokens: number
  /** Problems validateConversation finds in what was sent (always none). */
  problems: number
}

/**
 * The agent loop: the app keeps the whole history, and each request sends it trimmed to
 * `budget` tokens. Tool results become placeholders (their calls stay, so every call keeps
 * its result) before anything else is dropped.
 */
export async function runAgent(
  client: ChatCompletionsClient,
  history: Message[],
  runTool: (call: ToolCall) => Promise<string>,
  { budget, model = 'gpt-4o', maxSteps = 50 }: { budget: number; model?: string; maxSteps?: number },
): Promise<{ history: Message[]; calls: CallReport[] }> {
  const calls: CallReport[] = []
  for (let step = 0; step < maxSteps; step++) {
    // Before each model call: trim what is sent, never the history itself.
    const sent = trimWithPlaceholders(history, { targetTokens: budget, model }).messages
    calls.push({ historyTokens: estimateTokens(history, { model }), sentTokens: estimateTokens(sent, { model }), problems: validateConversation(sent).length })
    const completion = await client.chat.completions.create({ model, messages: sent })
    const reply = completion.choices[0].message
    history.push(reply)
    if (!reply.tool_calls?.length) break
    for (const call of reply.tool_calls) {
      history.push({ role: 'tool', tool_call_id: call.id, content: await runTool(call) })
    }
  }
  return { history, calls }
}

/**
 * The same loop with a {@link ContextWindow}: each message is appended once, as it happens, and
 * each request is trimmed from the window, which reads and counts nothing again. It sends
 * exactly what {@link runAgent} sends.
 */
export async function runAgentWithWindow(
  client: ChatCompletionsClient,
  start: Message[],
  runTool: (call: ToolCall) => Promise<string>,
  { budget, model = 'gpt-4o', maxSteps = 50 }: { budget: number; model?: string; maxSteps?: number },
): Promise<{ history: Message[]; calls: CallReport[] }> {
  const window = new ContextWindow({ model })
  window.append(start)
  const calls: CallReport[] = []
  for (let step = 0; step < maxSteps; step++) {
    const sent = window.trimWithPlaceholders({ targetTokens: budget }).messages
    calls.push({ historyTokens: window.totalTokens, sentTokens: estimateTokens(sent, { model }), problems: validateConversation(sent).length })
    const completion = await client.chat.completions.create({ model, messages: sent })
    const reply = completion.choices[0].message
    window.append([reply])
    if (!reply.tool_calls?.length) break
    for (const call of reply.tool_calls) {
      window.append([{ role: 'tool', tool_call_id: call.id, content: await runTool(call) }])
    }
  }
  return { history: window.messages() as Message[], calls }
}

export const transcriptPath = join(dirname(fileURLToPath(import.meta.url)), '..', 'samples', 'transcripts', 'openhands-ponyc-4595.json')

async function main(): Promise<void> {
  const transcript = JSON.parse(readFileSync(transcriptPath, 'utf8')) as Message[]
  // The run starts from its system prompt and task, as the recorded one did.
  const start = transcript.slice(0, transcript.findIndex((m) => m.role === 'assistant'))
  const { calls } = await runAgent(new ReplayClient(transcript), [...start], recordedTools(transcript), { budget: 27_000 })
  calls.forEach((c, i) => console.log(`call ${String(i + 1).padStart(2)}  history ${String(c.historyTokens).padStart(6)}  sent ${String(c.sentTokens).padStart(6)} tokens  problems ${c.problems}`))
}

export { recordedTools }

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main()
}
