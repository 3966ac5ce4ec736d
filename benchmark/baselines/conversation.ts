/**
 * The shared analysis of a conversation, as the addon's `Conversation` (src/model/conversation.rs)
 * makes it: token counts, steps and tool-call units, computed once per call.
 *
 * - A step is one assistant message with tool calls; a message's step is the number of such
 *   messages up to and including it, except that a tool result has the step of the call it
 *   answers. The current step is the number of steps; a message's age is `current - step`.
 * - A unit is an assistant message with tool calls plus every message answering one of its calls
 *   (parallel calls are one unit), or a single message. Removals happen by whole units, so a call
 *   never loses its result nor a result its call.
 */
import type { Message } from '../../index.js'
import { type Counter, messageTokens, REPLY_PRIMING } from './counters.js'

export interface Conversation {
  messages: Message[]
  /** Tokens of each message, framing included. */
  tokens: number[]
  steps: number[]
  currentStep: number
  /** Message indices of each unit, ascending. */
  units: number[][]
  unitOf: number[]
  /** For a message answering a known call: [calling message, call index]. */
  answeredCall: Array<[number, number] | undefined>
}

/** Whether a message is a tool result. */
export function isToolResult(m: Message): boolean {
  return m.role === 'tool' || typeof m.tool_call_id === 'string'
}

function hasToolCalls(m: Message): boolean {
  return Array.isArray(m.tool_calls) && m.tool_calls.length > 0
}

/** Analyses `messages`, counting every message with `counter` (no cache: every call counts all). */
export function analyse(messages: Message[], counter: Counter | null): Conversation {
  const n = messages.length
  const tokens = counter ? messages.map((m) => messageTokens(counter, m)) : new Array<number>(n).fill(0)
  const steps = new Array<number>(n)
  const unitOf = new Array<number>(n)
  const units: number[][] = []
  const answeredCall: Array<[number, number] | undefined> = new Array(n)
  // call id -> [calling message, call index, unit]; a repeated id pairs with its latest call.
  const calls = new Map<string, [number, number, number]>()
  let step = 0
  for (let i = 0; i < n; i++) {
    const m = messages[i]
    if (hasToolCalls(m)) {
      step++
      const u = units.length
      units.push([i])
      unitOf[i] = u
      m.tool_calls!.forEach((c, k) => calls.set(c.id, [i, k, u]))
      steps[i] = step
      continue
    }
    const call = typeof m.tool_call_id === 'string' ? calls.get(m.tool_call_id) : undefined
    if (call) {
      const [caller, k, u] = call
      units[u].push(i)
      unitOf[i] = u
      answeredCall[i] = [caller, k]
      steps[i] = steps[caller]
    } else {
      unitOf[i] = units.length
      units.push([i])
      steps[i] = step
    }
  }
  return { messages, tokens, steps, currentStep: step, units, unitOf, answeredCall }
}

/** The age of message `i` in steps. */
export function age(conv: Conversation, i: number): number {
  return conv.currentStep - conv.steps[i]
}

/** The tokens of the whole request, reply priming included (0 for no messages). */
export function totalTokens(conv: Conversation): number {
  if (conv.tokens.length === 0) return 0
  let n = REPLY_PRIMING
  for (const t of conv.tokens) n += t
  return n
}

/** The name of the tool whose result message `i` is: its call's name, or its `name` field. */
export function toolName(conv: Conversation, i: number): string | undefined {
  const call = conv.answeredCall[i]
  if (call) return conv.messages[call[0]].tool_calls![call[1]].function.name
  const name = conv.messages[i].name
  return typeof name === 'string' ? name : undefined
}

/** The arguments (JSON text) of the call that message `i` answers. */
export function callArguments(conv: Conversation, i: number): string | undefined {
  const call = conv.answeredCall[i]
  if (!call) return undefined
  const args = conv.messages[call[0]].tool_calls![call[1]].function.arguments
  return typeof args === 'string' ? args : args == null ? '' : JSON.stringify(args)
}

/** The text of a message's content: the string, or its text parts joined by newlines. */
export function contentText(m: Message): string {
  if (typeof m.content === 'string') return m.content
  if (!Array.isArray(m.content)) return ''
  const texts: string[] = []
  for (const p of m.content) {
    const part = p as { type: string; text?: unknown; refusal?: unknown }
    const text = part.type === 'refusal' ? part.refusal : part.text
    if (typeof text === 'string' && !['image_url', 'image', 'input_image'].includes(part.type)) texts.push(text)
  }
  return texts.join('\n')
}
