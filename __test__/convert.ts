// Converters from OpenAI Chat Completions messages to the Anthropic Messages and Vercel AI SDK
// ModelMessage formats, used to check that every strategy decides the same in every format.
import type { AiSdkMessage, AnthropicContentBlock, AnthropicMessage, Message } from '../index.js'

function text(content: Message['content']): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('\n')
}

function parseArgs(args: unknown): unknown {
  if (typeof args !== 'string') return args ?? {}
  try {
    return JSON.parse(args)
  } catch {
    return args
  }
}

/**
 * OpenAI → Anthropic: tool calls become `tool_use` blocks; consecutive tool results become
 * `tool_result` blocks of one user message (one message per OpenAI assistant turn's results).
 * Anthropic wants tool_use ids unique in a request, while OpenAI agents sometimes reuse one
 * (SWE-agent replays): a reused id gets a `~n` suffix, and its results follow it.
 */
export function toAnthropic(messages: Message[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = []
  const uses = new Map<string, number>()
  const current = new Map<string, string>()
  for (const m of messages) {
    if (m.role === 'tool') {
      const id = current.get(m.tool_call_id ?? '') ?? m.tool_call_id ?? ''
      const block: AnthropicContentBlock = { type: 'tool_result', tool_use_id: id, content: text(m.content) }
      const last = out[out.length - 1]
      if (last && last.role === 'user' && Array.isArray(last.content) && last.content.every((b) => b.type === 'tool_result')) {
        last.content.push(block)
      } else {
        out.push({ role: 'user', content: [block] })
      }
    } else if (m.role === 'assistant' && m.tool_calls?.length) {
      const blocks: AnthropicContentBlock[] = []
      const t = text(m.content)
      if (t) blocks.push({ type: 'text', text: t })
      for (const c of m.tool_calls) {
        const n = uses.get(c.id) ?? 0
        uses.set(c.id, n + 1)
        const id = n === 0 ? c.id : `${c.id}~${n}`
        current.set(c.id, id)
        blocks.push({ type: 'tool_use', id, name: c.function.name, input: parseArgs(c.function.arguments) })
      }
      out.push({ role: 'assistant', content: blocks })
    } else {
      out.push({ role: m.role === 'developer' ? 'system' : (m.role as AnthropicMessage['role']), content: text(m.content) })
    }
  }
  return out
}

/** OpenAI → AI SDK: tool calls become `tool-call` parts; each tool result a `tool` message. */
export function toAiSdk(messages: Message[]): AiSdkMessage[] {
  const names = new Map<string, string>()
  return messages.map((m): AiSdkMessage => {
    if (m.role === 'tool') {
      const id = m.tool_call_id ?? ''
      return {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: id, toolName: names.get(id) ?? m.name ?? 'tool', output: { type: 'text', value: text(m.content) } }],
      }
    }
    if (m.role === 'assistant' && m.tool_calls?.length) {
      const parts: AiSdkMessage['content'] = []
      const t = text(m.content)
      if (t) parts.push({ type: 'text', text: t })
      for (const c of m.tool_calls) {
        names.set(c.id, c.function.name)
        parts.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input: parseArgs(c.function.arguments) })
      }
      return { role: 'assistant', content: parts }
    }
    return { role: m.role === 'developer' ? 'system' : (m.role as AiSdkMessage['role']), content: text(m.content) }
  })
}
