/**
 * A long agent session for the cache-policy tests: the bundled transcripts replayed one after
 * another, by the rules of the benchmark's sessions (benchmark/data.ts on the wip/bench
 * branch): file-name order, over and over; one system message, the first transcript's; tool-call
 * ids renamed per replay (`<id>~<replay>`); from the second round on, string contents get a last
 * line `[replay <round>]` and tool-call arguments `<round>` trailing spaces, so that texts are
 * unique. Replace with an import of that module once it is on main.
 */
import type { ContentPart, Message } from '../index.js'
import { transcripts } from './helpers.js'

function mark(content: Message['content'], round: number): Message['content'] {
  const line = `\n[replay ${round}]`
  if (typeof content === 'string') return content === '' ? content : content + line
  if (!Array.isArray(content)) return content
  const parts: ContentPart[] = content.map((p) => ({ ...p }))
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i]
    if (p.type === 'text' && typeof p.text === 'string') {
      parts[i] = { ...p, type: 'text', text: p.text + line }
      break
    }
  }
  return parts
}

/** The first `size` messages of the replayed session. */
export function replayedSession(size: number): Message[] {
  const all = transcripts().map(([, messages]) => messages)
  const out: Message[] = []
  let replay = 0
  for (let round = 0; out.length < size; round++) {
    for (const transcript of all) {
      if (out.length >= size) break
      const keepSystem = out.length === 0
      for (const original of transcript) {
        if (original.role === 'system' && !keepSystem) continue
        const m = structuredClone(original)
        const rename = (id: string) => `${id}~${replay}`
        if (m.tool_calls) {
          m.tool_calls = m.tool_calls.map((c) => {
            const args = c.function.arguments
            const padded = round > 0 && typeof args === 'string' ? args + ' '.repeat(round) : args
            return { ...c, id: rename(c.id), function: { ...c.function, arguments: padded } }
          })
        }
        if (typeof m.tool_call_id === 'string') m.tool_call_id = rename(m.tool_call_id)
        if (round > 0 && m.role !== 'system') m.content = mark(m.content, round)
        out.push(m)
      }
      replay++
    }
  }
  return out.slice(0, size)
}

/** The request of every turn: the messages before each assistant message (none empty). */
export function requests(session: Message[]): Message[][] {
  return session.flatMap((m, i) => (i > 0 && m.role === 'assistant' ? [session.slice(0, i)] : []))
}
