/**
 * The rolling-context chat-handler integration of the design (seed 004, "Integration"), in
 * TypeScript, runnable offline:
 *
 *   node --import @oxc-node/core/register examples/rolling-context-chat-handler.ts
 *
 * It replays a real agent run (samples/transcripts/openhands-ponyc-4595.json) one model call at
 * a time through a chat handler whose client is fake: instead of calling a model it reports how
 * many tokens it was sent. The user types `/rolling-context on` after a few calls, checks the
 * status, and turns it off again near the end.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { DEFAULT_CONFIG, RollingContext, estimateTokens, truncateOldToolOutputs } from '../index.js'
import type { Message, TruncationConfig } from '../index.js'

/** What the fake client answers. */
export interface ChatResponse {
  role: 'assistant'
  content: string
  /** The tokens of the request it received. */
  tokensSent: number
}

/** A model client that sends nothing anywhere: it counts the tokens of each request. */
export class FakeClient {
  readonly requests: number[] = []

  async chat(messages: Message[], _tools: unknown[], callbacks?: { onToken?: (token: string) => void }): Promise<ChatResponse> {
    const tokensSent = estimateTokens(messages)
    this.requests.push(tokensSent)
    const content = `(fake reply to ${messages.length} messages, ${tokensSent} tokens)`
    callbacks?.onToken?.(content)
    return { role: 'assistant', content, tokensSent }
  }
}

/** One line of the chat handler's output. */
export type HandlerEvent = { kind: 'status'; line: string } | { kind: 'reply'; enabled: boolean; tokensFull: number; tokensSent: number }

/**
 * The chat handler: slash commands go to the rolling-context toggle, anything else sends the
 * history to the model, truncated when rolling context is on.
 */
export function createChatHandler(client: FakeClient, contextConfig: TruncationConfig = DEFAULT_CONFIG) {
  // The app's preference, off by default as the design says (`getRollingContextEnabled()`).
  const rolling = new RollingContext({ config: contextConfig })
  return {
    rolling,
    async handle(input: string, messages: Message[]): Promise<HandlerEvent> {
      const command = /^\/rolling-context(?:\s+(.*))?$/.exec(input.trim())
      if (command) {
        return { kind: 'status', line: rolling.handleCommand(command[1]) }
      }
      // Before sending to the LLM (the design's line; `rolling.prepare(messages)` is the same).
      const processedMessages = rolling.enabled ? truncateOldToolOutputs(messages, contextConfig) : messages
      const response = await client.chat(processedMessages, [], {})
      return { kind: 'reply', enabled: rolling.enabled, tokensFull: estimateTokens(messages), tokensSent: response.tokensSent }
    },
  }
}

/**
 * Replays `transcript` one model call at a time: before the model call that produced assistant
 * message number `turn` (1-based), the inputs in `commands[turn]` are typed first.
 */
export async function replay(transcript: Message[], commands: Record<number, string[]>, config?: TruncationConfig): Promise<Array<HandlerEvent & { turn: number }>> {
  const handler = createChatHandler(new FakeClient(), config)
  const events: Array<HandlerEvent & { turn: number }> = []
  let turn = 0
  for (let i = 0; i < transcript.length; i++) {
    if (transcript[i].role !== 'assistant') continue
    turn++
    for (const input of commands[turn] ?? []) {
      events.push({ turn, ...(await handler.handle(input, transcript.slice(0, i))) })
    }
    events.push({ turn, ...(await handler.handle('(continue)', transcript.slice(0, i))) })
  }
  return events
}

export const transcriptPath = join(dirname(fileURLToPath(import.meta.url)), '..', 'samples', 'transcripts', 'openhands-ponyc-4595.json')

async function main(): Promise<void> {
  const transcript = JSON.parse(readFileSync(transcriptPath, 'utf8')) as Message[]
  const events = await replay(transcript, { 6: ['/rolling-context on', '/rolling-context status'], 21: ['/rolling-context'] })
  for (const e of events) {
    if (e.kind === 'status') console.log(`turn ${String(e.turn).padStart(2)}  > ${e.line}`)
    else console.log(`turn ${String(e.turn).padStart(2)}  sent ${String(e.tokensSent).padStart(6)} of ${String(e.tokensFull).padStart(6)} tokens${e.enabled ? ' (rolling context on)' : ''}`)
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main()
}
