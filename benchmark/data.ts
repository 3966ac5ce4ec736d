/**
 * Benchmark sessions: the real transcripts of `samples/transcripts/` replayed one after another
 * into one long agent session, cut to a number of messages. Deterministic: same files, same
 * sessions.
 *
 * - Transcripts are replayed in file-name order, over and over, until the session is long enough.
 * - One system message is kept, at the start (the first transcript's); the system messages of the
 *   following replays are left out.
 * - Tool-call ids are renamed per replay (`<id>~<replay>`), in the calls and in the results that
 *   answer them, so that no id repeats across replays (a transcript that repeats an id itself,
 *   as sweagent-marshmallow does, keeps its own repeats).
 * - From the second round of replays on, texts are made unique, so that the token cache of the
 *   addon gets no free hits from a text it already saw in an earlier round (a real session does
 *   not repeat itself 18 times): string contents get a last line `[replay <round>]`, and tool-call
 *   arguments (JSON text) get `<round>` trailing spaces, which JSON ignores.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import type { ContentPart, Message } from '../index.js'

const here = dirname(fileURLToPath(import.meta.url))
export const transcriptsDir = join(here, '..', 'samples', 'transcripts')

/** The session sizes the benchmark runs, in messages. */
export const SESSION_SIZES = [100, 1_000, 5_000] as const

/** A benchmark session. */
export interface Session {
  /** `"100"`, `"1,000"`, `"5,000"`. */
  label: string
  messages: Message[]
  /** UTF-8 bytes of every text the counters tokenise (contents, names, tool-call names and arguments). */
  contentBytes: number
  /** UTF-8 bytes of `JSON.stringify(messages)`. */
  jsonBytes: number
}

function loadTranscripts(): Message[][] {
  return readdirSync(transcriptsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(transcriptsDir, f), 'utf8')) as Message[])
}

function markText(text: string, round: number): string {
  return `${text}\n[replay ${round}]`
}

function markContent(content: Message['content'], round: number): Message['content'] {
  if (typeof content === 'string') return content === '' ? content : markText(content, round)
  if (!Array.isArray(content)) return content
  // Mark the last text part.
  const parts: ContentPart[] = content.map((p) => ({ ...p }))
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i] as { type: string; text?: unknown }
    if (p.type === 'text' && typeof p.text === 'string') {
      parts[i] = { ...p, type: 'text', text: markText(p.text, round) }
      break
    }
  }
  return parts
}

/** One replay of a transcript: a deep copy with renamed ids (and unique texts after round 0). */
function replay(transcript: Message[], replayIndex: number, round: number, keepSystem: boolean): Message[] {
  const out: Message[] = []
  const rename = (id: string) => `${id}~${replayIndex}`
  for (const original of transcript) {
    if (original.role === 'system' && !keepSystem) continue
    const m = structuredClone(original)
    if (m.tool_calls) {
      m.tool_calls = m.tool_calls.map((c) => {
        const args = c.function.arguments
        return {
          ...c,
          id: rename(c.id),
          function: {
            ...c.function,
            arguments: round > 0 && typeof args === 'string' ? args + ' '.repeat(round) : args,
          },
        }
      })
    }
    if (typeof m.tool_call_id === 'string') m.tool_call_id = rename(m.tool_call_id)
    if (round > 0 && m.role !== 'system') m.content = markContent(m.content, round)
    out.push(m)
  }
  return out
}

/** The first `size` messages of the replayed session. */
export function buildMessages(size: number): Message[] {
  const transcripts = loadTranscripts()
  if (transcripts.length === 0) throw new Error(`no transcripts in ${transcriptsDir}`)
  const out: Message[] = []
  let replayIndex = 0
  for (let round = 0; out.length < size; round++) {
    for (const t of transcripts) {
      if (out.length >= size) break
      const keepSystem = out.length === 0
      out.push(...replay(t, replayIndex++, round, keepSystem))
    }
  }
  return out.slice(0, size)
}

/** Every text the counters tokenise in a message (the per-message overheads aside). */
export function messageTexts(m: Message): string[] {
  const texts: string[] = []
  if (typeof m.content === 'string') texts.push(m.content)
  else if (Array.isArray(m.content)) {
    for (const p of m.content) {
      const part = p as { type: string; text?: unknown; refusal?: unknown }
      const text = part.type === 'refusal' ? part.refusal : part.text
      if (typeof text === 'string') texts.push(text)
    }
  }
  if (typeof m.name === 'string') texts.push(m.name)
  for (const c of m.tool_calls ?? []) {
    texts.push(c.function.name)
    const args = c.function.arguments
    texts.push(typeof args === 'string' ? args : args === undefined ? '' : JSON.stringify(args))
  }
  return texts.filter((t) => t !== '')
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8')

/** UTF-8 bytes of every text the counters tokenise. */
export function contentBytes(messages: Message[]): number {
  let n = 0
  for (const m of messages) for (const t of messageTexts(m)) n += utf8(t)
  return n
}

/** Builds the benchmark's sessions. */
export function buildSessions(sizes: readonly number[] = SESSION_SIZES): Session[] {
  return sizes.map((size) => {
    const messages = buildMessages(size)
    return {
      label: size.toLocaleString('en-US'),
      messages,
      contentBytes: contentBytes(messages),
      jsonBytes: utf8(JSON.stringify(messages)),
    }
  })
}

/** `1.23 MB` (decimal megabytes). */
export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e6 ? 3 : 2)} MB`
}

/**
 * A long run made of one transcript replayed `replays` times with fresh tool-call ids (the
 * texts repeat, as when an agent loops on the same task), one system message at the start: the
 * shape of issue 20's 50 MB run (`openhands-ponyc-4595.json` 556 times: 25,577 messages).
 */
export function buildReplayRun(file: string, replays: number): Message[] {
  const transcript = JSON.parse(readFileSync(join(transcriptsDir, file), 'utf8')) as Message[]
  const out: Message[] = []
  for (let k = 0; k < replays; k++) out.push(...replay(transcript, k, 0, k === 0))
  return out
}
