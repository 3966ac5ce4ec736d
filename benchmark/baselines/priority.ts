/**
 * Seed 000's `trimByPriority` in TypeScript, parameterised by a token counter, with the rules the
 * addon had adopted until issue 18 where it deliberately differed from the seed. Since issue 18
 * the addon's rules go further (the last message's unit kept, superseded results stale, the
 * never-truncated tiers dropped last, cuts and backfill: docs/priority-trimming.md), so the
 * benchmark reports its decisions against these as differing by design, and the addon does
 * more work than this baseline:
 *
 * - tokens are the OpenAI cookbook's (3 per message, 1 per name, 1 per tool call, 3 of reply
 *   priming), counted afresh on every call, as the seed's `estimateMessageTokens` does;
 * - classification follows `src/analysis/classify.rs` before issue 18 (summaries, system, AGENTS.md injections, the
 *   current task as the user message that opens the current turn, files from the call's
 *   arguments and the result's headers via `src/analysis/file_ops.rs`, modified files from a tracker built
 *   from the messages where a failed edit counts as a read, and a tool call taking the highest
 *   priority of its results);
 * - removals go by tool-call unit (a call and all its results), lowest priority first, oldest
 *   first within a priority; a unit takes the highest priority of its messages;
 * - system, agent instructions, the current task and modified files are never dropped (the
 *   seed's "What to trim first" table); when the budget cannot be met without them the result
 *   says `overBudget: true`.
 *
 * The seed's helpers `getMessageStep`/`isCurrentTaskMessage` are written as one linear pass (the
 * seed leaves them undefined; a per-message scan would make the baseline quadratic).
 */
import type { Message } from '../../index.js'
import { type Conversation, analyse, contentText, isToolResult } from './conversation.js'
import type { Counter } from './counters.js'
import { REPLY_PRIMING } from './counters.js'
import { type FileOp, fileOperation, modifies } from './fileOps.js'
import { trimStart } from './text.js'

export const ContentPriority = {
  SYSTEM: 100,
  AGENT_INSTRUCTIONS: 90,
  CURRENT_TASK: 80,
  MODIFIED_FILES: 70,
  RECENT_TURNS: 60,
  RECENT_FILE_READS: 50,
  OLD_HISTORY: 40,
  STALE_TOOL_OUTPUTS: 30,
  SUMMARIZED: 20,
} as const

export interface TrimOptions {
  targetTokens: number
  preserveRecentTurns: number
}

export interface ClassifiedMessage {
  message: Message
  priority: number
  tokens: number
  step: number
  metadata: { filePath?: string; wasModified?: boolean; age?: number }
}

export interface TrimResult {
  messages: Message[]
  droppedMessages: ClassifiedMessage[]
  savedTokens: number
  overBudget: boolean
  /** The request's tokens after trimming. */
  tokens: number
}

const AGENT_INSTRUCTION_MARKERS = ['# AGENTS.md', '<agents_md>', '<agents.md>']
const SUMMARY_MARKER = '[context-trim summary]'

function isSummary(m: Message): boolean {
  return m._summary === true || m.isSummary === true || trimStart(contentText(m)).startsWith(SUMMARY_MARKER)
}

function isAgentInstruction(m: Message): boolean {
  if (m.role !== 'user' || isToolResult(m)) return false
  if (typeof m.name === 'string' && m.name.trim().toLowerCase() === 'agents.md') return true
  const start = trimStart(contentText(m))
  return AGENT_INSTRUCTION_MARKERS.some((marker) => start.slice(0, marker.length).toLowerCase() === marker.toLowerCase())
}

/** The user message that opens the current turn (src/model/conversation.rs `current_task`). */
function openingUser(conv: Conversation): number | undefined {
  let opens = true
  let task: number | undefined
  let lastUser: number | undefined
  conv.messages.forEach((m, i) => {
    if (m.role === 'user' && typeof m.tool_call_id !== 'string') {
      lastUser = i
      if (opens) task = i
    } else {
      const calls = Array.isArray(m.tool_calls) && m.tool_calls.length > 0
      opens = m.role === 'system' || m.role === 'developer' || (m.role === 'assistant' && !calls)
    }
  })
  return task ?? lastUser
}

/** The current task, skipping back over agent instructions and summaries (src/analysis/classify.rs). */
function currentTask(conv: Conversation): number | undefined {
  let i = openingUser(conv)
  while (i !== undefined && i >= 0) {
    const m = conv.messages[i]
    if (m.role !== 'user' || isToolResult(m)) return undefined
    if (!isSummary(m) && !isAgentInstruction(m)) return i
    i--
  }
  return undefined
}

/** Classifies every message (src/analysis/classify.rs `classify_conversation`). */
export function classify(conv: Conversation, preserveRecentTurns: number): ClassifiedMessage[] {
  const ops: Array<FileOp | undefined> = conv.messages.map((_, i) => fileOperation(conv, i))
  const modified = new Set<string>()
  for (const op of ops) if (op && !op.failed && modifies(op.kind)) modified.add(op.path)
  const task = currentTask(conv)
  const classes = conv.messages.map((message, i) => {
    const step = conv.steps[i]
    const age = Math.max(0, conv.currentStep - step)
    const tokens = conv.tokens[i]
    const of = (priority: number, metadata: ClassifiedMessage['metadata'] = {}) => ({ message, priority, tokens, step, metadata })
    if (isSummary(message)) return of(ContentPriority.SUMMARIZED, { age })
    if (message.role === 'system' || message.role === 'developer') return of(ContentPriority.SYSTEM)
    if (isAgentInstruction(message)) return of(ContentPriority.AGENT_INSTRUCTIONS)
    if (task === i) return of(ContentPriority.CURRENT_TASK)
    const recent = age <= preserveRecentTurns
    const op = ops[i]
    if (op) {
      if (modified.has(op.path)) return of(ContentPriority.MODIFIED_FILES, { filePath: op.path, wasModified: true })
      return of(recent ? ContentPriority.RECENT_FILE_READS : ContentPriority.STALE_TOOL_OUTPUTS, { filePath: op.path, age })
    }
    if (isToolResult(message)) return of(recent ? ContentPriority.RECENT_TURNS : ContentPriority.STALE_TOOL_OUTPUTS, { age })
    return of(recent ? ContentPriority.RECENT_TURNS : ContentPriority.OLD_HISTORY, { age })
  })
  // A call takes the highest priority of the results answering it (it is their request half).
  for (const [first, ...results] of conv.units) {
    const caller = conv.messages[first]
    if (results.length === 0 || !(caller.tool_calls?.length ?? 0) || isSummary(caller)) continue
    classes[first].priority = Math.max(...results.map((i) => classes[i].priority))
  }
  return classes
}

/** Trims `messages` to `targetTokens`, lowest priority first, by whole tool-call units. */
export function trimByPriority(counter: Counter, messages: Message[], options: TrimOptions): TrimResult {
  const conv = analyse(messages, counter)
  const classified = classify(conv, options.preserveRecentTurns)
  const units = conv.units.map((members, u) => ({
    u,
    members,
    priority: Math.max(...members.map((i) => classified[i].priority)),
  }))
  // Lowest priority first, oldest first within a priority.
  units.sort((a, b) => a.priority - b.priority || a.members[0] - b.members[0])
  let sum = 0
  for (const t of conv.tokens) sum += t
  let kept = messages.length
  const total = () => (kept === 0 ? 0 : sum + REPLY_PRIMING)
  const original = total()
  const dropped = new Array<boolean>(messages.length).fill(false)
  const droppedMessages: ClassifiedMessage[] = []
  for (const unit of units) {
    if (total() <= options.targetTokens) break
    if (unit.priority >= ContentPriority.MODIFIED_FILES) break // never dropped, and all that follow
    for (const i of unit.members) {
      dropped[i] = true
      sum -= conv.tokens[i]
      kept--
      droppedMessages.push(classified[i])
    }
  }
  const tokens = total()
  return {
    messages: messages.filter((_, i) => !dropped[i]),
    droppedMessages,
    savedTokens: original - tokens,
    overBudget: tokens > options.targetTokens,
    tokens,
  }
}
