/**
 * What a TypeScript agent would use instead of context-trim, for `benchmark/recall.ts`. Each
 * trims OpenAI Chat Completions messages to a budget counted with the library's own
 * `estimateMessageTokens` (plus 3 tokens of reply priming, as `estimateTokens` counts), so that
 * every strategy has the same budget.
 *
 * - LangChain JS `trimMessages` is the real package (`@langchain/core`).
 * - The others have no npm package that runs outside their own agent; their documented rules are
 *   ported here, each with its source.
 */
import { createRequire } from 'node:module'

import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages } from '@langchain/core/messages'

import type { Message } from '../index.js'

const require = createRequire(import.meta.url)
const ct: typeof import('../index.js') = require('../index.js')

/** One strategy: `make(budget)` gives the function that trims each turn's history. */
export interface Trimmer {
  name: string
  /** Where the rule comes from, for the report. */
  source?: string
  make: (budget: number) => (history: Message[]) => Message[] | Promise<Message[]>
  /** Called on every turn (it keeps state across turns), not only on those over the budget. */
  everyTurn?: boolean
  /** It may drop the system prompt (so its refusals are not compared with those that keep it). */
  dropsSystem?: boolean
}

const REPLY_PRIMING = 3

function tokensOf(messages: Message[]): number[] {
  return messages.map((m) => ct.estimateMessageTokens(m))
}

function total(tokens: number[]): number {
  return tokens.length === 0 ? 0 : tokens.reduce((a, b) => a + b, 0) + REPLY_PRIMING
}

/** Units: an assistant message with its tool results, or a single message. */
function units(messages: Message[]): number[][] {
  const out: number[][] = []
  let open: { unit: number[]; ids: Set<string> } | null = null
  messages.forEach((m, i) => {
    if (m.role === 'tool' && open && open.ids.has(m.tool_call_id ?? '')) {
      open.unit.push(i)
      return
    }
    const unit = [i]
    out.push(unit)
    open = m.tool_calls?.length ? { unit, ids: new Set(m.tool_calls.map((c) => c.id)) } : null
  })
  return out
}

/** Pair-safe drop-oldest: whole units, oldest first, system messages kept. */
const dropOldest: Trimmer = {
  name: 'pair-safe drop-oldest',
  make: (budget) => (history) => {
    const tokens = tokensOf(history)
    const dropped = new Set<number>()
    let sum = total(tokens)
    for (const unit of units(history)) {
      if (sum <= budget) break
      if (unit.every((i) => history[i].role === 'system' || history[i].role === 'developer')) continue
      for (const i of unit) {
        dropped.add(i)
        sum -= tokens[i]
      }
    }
    return history.filter((_, i) => !dropped.has(i))
  },
}

/** Replaces the content of tool result `i`. */
function cleared(m: Message, text: string): Message {
  return { ...m, content: text }
}

/**
 * Anthropic's `clear_tool_uses_20250919` with `keep: 3` and the trigger at the budget: tool
 * results are cleared oldest first, never the 3 most recent tool uses, until the request fits;
 * calls stay (`clear_tool_inputs` false). What still does not fit is refused.
 */
const clearToolUses: Trimmer = {
  name: 'Anthropic clear_tool_uses (keep 3)',
  source: 'ported from Anthropic\'s context-management docs',
  make: (budget) => (history) => {
    const out = history.slice()
    const tokens = tokensOf(history)
    let sum = total(tokens)
    const results = history.flatMap((m, i) => (m.role === 'tool' ? [i] : []))
    for (const i of results.slice(0, Math.max(0, results.length - 3))) {
      if (sum <= budget) break
      out[i] = cleared(history[i], '[tool result cleared]')
      const t = ct.estimateMessageTokens(out[i])
      sum += t - tokens[i]
    }
    return out
  },
}

/**
 * opencode's prune: walking back from the newest message, tool outputs are protected until
 * 40,000 tokens of them (and anything in the last 2 user turns); older outputs are cleared to
 * `[Old tool result content cleared]`, only if that frees at least 20,000 tokens. It does not
 * look at the budget.
 */
const opencodePrune: Trimmer = {
  name: 'opencode prune',
  source: 'ported from opencode session/compaction.ts (PRUNE_PROTECT 40k, PRUNE_MINIMUM 20k)',
  make: () => (history) => {
    const PROTECT = 40_000
    const MINIMUM = 20_000
    let userTurns = 0
    let seen = 0
    const toClear: number[] = []
    let freed = 0
    for (let i = history.length - 1; i >= 0; i--) {
      const m = history[i]
      if (m.role === 'user') userTurns++
      if (userTurns < 2 || m.role !== 'tool') continue
      const t = ct.estimateMessageTokens(m)
      seen += t
      if (seen > PROTECT) {
        toClear.push(i)
        freed += t
      }
    }
    if (freed < MINIMUM) return history
    const out = history.slice()
    for (const i of toClear) out[i] = cleared(history[i], '[Old tool result content cleared]')
    return out
  },
}

/**
 * The OpenAI Agents SDK's `ToolOutputTrimmer` (`recent_turns=2`, `max_output_chars=500`,
 * `preview_chars=200`): tool outputs older than the last 2 turns and longer than 500 characters
 * become `[Trimmed: {tool} output — N chars → 200 char preview]` and the preview. It does not
 * look at the budget.
 */
const toolOutputTrimmer: Trimmer = {
  name: 'OpenAI Agents ToolOutputTrimmer',
  source: 'ported from openai-agents-python extensions (recent_turns 2, 500 chars, 200 preview)',
  make: () => (history) => {
    const assistants = history.flatMap((m, i) => (m.role === 'assistant' ? [i] : []))
    const recentFrom = assistants.length >= 2 ? assistants[assistants.length - 2] : 0
    const names = new Map<string, string>()
    for (const m of history) for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name)
    return history.map((m, i) => {
      if (m.role !== 'tool' || i >= recentFrom) return m
      const text = typeof m.content === 'string' ? m.content : JSON.stringify(m.content)
      if (text.length <= 500) return m
      const tool = names.get(m.tool_call_id ?? '') ?? 'tool'
      return cleared(m, `[Trimmed: ${tool} output — ${text.length} chars → 200 char preview]\n${text.slice(0, 200)}`)
    })
  },
}

// ---------------------------------------------------------------------------------------------
// LangChain

function toLangChain(m: Message, i: number): BaseMessage {
  const id = String(i)
  const content = typeof m.content === 'string' ? m.content : (m.content ?? '')
  switch (m.role) {
    case 'system':
    case 'developer':
      return new SystemMessage({ id, content: content as string })
    case 'user':
      return new HumanMessage({ id, content: content as string })
    case 'tool':
      return new ToolMessage({ id, content: content as string, tool_call_id: m.tool_call_id ?? '' })
    default:
      return new AIMessage({
        id,
        content: content as string,
        tool_calls: (m.tool_calls ?? []).map((c) => ({
          id: c.id,
          name: c.function.name,
          args: typeof c.function.arguments === 'string' ? safeParse(c.function.arguments) : (c.function.arguments ?? {}),
          type: 'tool_call' as const,
        })),
      })
  }
}

function safeParse(s: string): Record<string, unknown> {
  try {
    const v = JSON.parse(s)
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v }
  } catch {
    return { raw: s }
  }
}

function langChain(startOn: boolean): Trimmer {
  return {
    name: `LangChain trimMessages 'last'${startOn ? " startOn 'human'" : ''}`,
    source: '@langchain/core',
    make: (budget) => async (history) => {
      const tokens = tokensOf(history)
      const lc = history.map(toLangChain)
      const counter = (ms: BaseMessage[]) => (ms.length === 0 ? 0 : ms.reduce((s, m) => s + tokens[Number(m.id)], 0) + REPLY_PRIMING)
      const kept = await trimMessages(lc, {
        maxTokens: budget,
        tokenCounter: counter,
        strategy: 'last',
        includeSystem: true,
        ...(startOn ? { startOn: 'human' as const } : {}),
      })
      // Kept messages are the originals (LangChain does not split them without allowPartial).
      return kept.filter((m) => m !== undefined).map((m) => history[Number(m.id)])
    },
  }
}

export const PEERS: Trimmer[] = [
  langChain(false),
  langChain(true),
  dropOldest,
  clearToolUses,
  opencodePrune,
  toolOutputTrimmer,
]
