/**
 * Seed 004's `truncateOldToolOutputs` in TypeScript, parameterised by a token counter, with the
 * rules the addon adopted for the seed's edge cases (`src/strategy/rolling.rs`), so that both
 * make the same decisions on the same data. Each tool result gets the first rule that applies:
 *
 * 1. error (flagged `is_error`/`isError`, or an error report: `src/detect.rs`): kept;
 * 2. small (under `smallOutputTokens` = 100 content tokens): kept;
 * 3. quoted (a later user message shares a verbatim span of ≥ `minQuotedChars` = 40 characters): kept;
 * 4. consumed (a recent call, at most `maxAge` steps old and made at a later step, has an
 *    argument value sharing such a span, or names the same file path): kept;
 * 5. older than `maxAge` steps: the seed's placeholder, with `_originalLength`/`_truncatedAt`;
 * 6. longer than `maxTokensPerOutput` content tokens: head and tail around a marker;
 * 7. otherwise kept.
 *
 * Every call counts the content of every tool result afresh, as a TypeScript app would.
 */
import type { Message } from '../../index.js'
import { type Conversation, analyse, callArguments, contentText, isToolResult } from './conversation.js'
import { type Counter, contentTokens } from './counters.js'
import { isErrorOutput } from './detect.js'
import { SpanIndex } from './spanIndex.js'

export interface TruncationConfig {
  maxAge: number
  maxTokensPerOutput: number
  placeholder: string
  smallOutputTokens: number
  minQuotedChars: number
}

export const DEFAULT_CONFIG: TruncationConfig = {
  maxAge: 5,
  maxTokensPerOutput: 2000,
  placeholder: '[content truncated - {age} steps ago]',
  smallOutputTokens: 100,
  minQuotedChars: 40,
}

export type Rule = 'not-tool-result' | 'error' | 'small' | 'quoted' | 'consumed' | 'placeholder' | 'cut' | 'recent'

const PATH_FIELDS = ['path', 'file', 'file_path', 'filePath', 'filename', 'file_name']
const COMMAND_FIELD = 'command'
const CUT_MARKER = '\n\n[... {tokens} tokens cut ...]\n\n'

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

function forEachString(v: unknown, f: (s: string) => void): void {
  if (typeof v === 'string') f(v)
  else if (Array.isArray(v)) v.forEach((item) => forEachString(item, f))
  else if (v !== null && typeof v === 'object') Object.values(v).forEach((item) => forEachString(item, f))
}

const WS = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/
const COMMAND_SPLIT = new RegExp(`(?:${WS.source}|['"\`;|&<>(){}=,@])`)

function normalizePath(path: string): string {
  let p = path.replace(new RegExp(`^${WS.source}+|${WS.source}+$`, 'g'), '').replace(/\/+$/, '')
  while (p.startsWith('./')) p = p.slice(2)
  return p
}

function fileName(path: string): string {
  const at = path.lastIndexOf('/')
  return at < 0 ? path : path.slice(at + 1)
}

function isFileName(name: string): boolean {
  const dot = name.lastIndexOf('.')
  if (dot < 0) return false
  const stem = name.slice(0, dot)
  const ext = name.slice(dot + 1)
  return stem !== '' && ext.length >= 1 && ext.length <= 10 && /^[A-Za-z][A-Za-z0-9]*$/.test(ext)
}

/** The words of a shell command that look like file paths. */
export function commandPaths(command: string): string[] {
  return command
    .split(COMMAND_SPLIT)
    .map((w) => w.replace(/[:,.]+$/, ''))
    .map((w) => w.split(':')[0])
    .filter((w) => !w.startsWith('-') && !w.includes('://') && !/[*?[\]$]/.test(w))
    .filter((w) => isFileName(fileName(w)))
    .map(normalizePath)
}

/** The file paths a call's arguments name. */
export function argumentPaths(args: unknown): string[] {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return []
  const map = args as Record<string, unknown>
  const paths: string[] = []
  for (const f of PATH_FIELDS) {
    const v = Object.hasOwn(map, f) ? map[f] : undefined
    if (typeof v === 'string') {
      const p = normalizePath(v)
      if (p !== '') paths.push(p)
    }
  }
  const command = Object.hasOwn(map, COMMAND_FIELD) ? map[COMMAND_FIELD] : undefined
  if (typeof command === 'string') paths.push(...commandPaths(command))
  return paths
}

function samePath(a: string, b: string): boolean {
  const tailOf = (long: string, short: string) =>
    long.length > short.length && long.endsWith(short) && long[long.length - short.length - 1] === '/'
  return a === b || tailOf(a, b) || tailOf(b, a)
}

class References {
  userSpans: SpanIndex
  callSpans: SpanIndex
  /** file name -> [path, latest step naming it] */
  callPaths = new Map<string, Array<[string, number]>>()

  constructor(conv: Conversation, config: TruncationConfig) {
    this.userSpans = new SpanIndex(config.minQuotedChars)
    this.callSpans = new SpanIndex(config.minQuotedChars)
    conv.messages.forEach((m, i) => {
      if (m.role === 'user' && !isToolResult(m)) this.userSpans.add(contentText(m), i)
      const calls = m.tool_calls ?? []
      if (calls.length === 0 || conv.currentStep - conv.steps[i] > config.maxAge) return
      const step = conv.steps[i]
      for (const call of calls) {
        const raw = call.function.arguments
        const text = typeof raw === 'string' ? raw : raw == null ? '' : JSON.stringify(raw)
        const parsed = parseJson(text)
        if (!parsed.ok) {
          this.callSpans.add(text, step)
          continue
        }
        forEachString(parsed.value, (s) => this.callSpans.add(s, step))
        for (const path of argumentPaths(parsed.value)) {
          const name = fileName(path)
          let entry = this.callPaths.get(name)
          if (!entry) this.callPaths.set(name, (entry = []))
          const same = entry.find(([p]) => p === path)
          if (same) same[1] = Math.max(same[1], step)
          else entry.push([path, step])
        }
      }
    })
  }

  quoted(text: string, i: number): boolean {
    return this.userSpans.sharesSpanAbove(text, i)
  }

  consumed(conv: Conversation, text: string, i: number): boolean {
    const step = conv.steps[i]
    if (this.callSpans.sharesSpanAbove(text, step)) return true
    const args = callArguments(conv, i)
    if (args === undefined) return false
    const parsed = parseJson(args)
    if (!parsed.ok) return false
    return argumentPaths(parsed.value).some((path) =>
      (this.callPaths.get(fileName(path)) ?? []).some(([other, latest]) => latest > step && samePath(path, other)),
    )
  }
}

/** The rule applied to every message, and the content tokens of the tool results it counted. */
export function rules(counter: Counter, conv: Conversation, config: TruncationConfig): { rules: Rule[]; tokens: Map<number, number> } {
  const out: Rule[] = []
  const pending: number[] = []
  const tokens = new Map<number, number>()
  conv.messages.forEach((m, i) => {
    if (!isToolResult(m)) return void out.push('not-tool-result')
    if (m.is_error === true || m.isError === true || isErrorOutput(contentText(m))) return void out.push('error')
    const t = contentTokens(counter, m.content)
    if (t < config.smallOutputTokens) return void out.push('small')
    tokens.set(i, t)
    pending.push(i)
    out.push('recent')
  })
  if (pending.length === 0) return { rules: out, tokens }
  const refs = new References(conv, config)
  for (const i of pending) {
    const text = contentText(conv.messages[i])
    if (refs.quoted(text, i)) out[i] = 'quoted'
    else if (refs.consumed(conv, text, i)) out[i] = 'consumed'
    else if (conv.currentStep - conv.steps[i] > config.maxAge) out[i] = 'placeholder'
    else if (tokens.get(i)! > config.maxTokensPerOutput) out[i] = 'cut'
  }
  return { rules: out, tokens }
}

/** Cuts the middle of `text` to at most `maxTokens` tokens, marker included (src/cut.rs, simplified). */
function cutMiddle(counter: Counter, text: string, maxTokens: number, original: number): { text: string; cutTokens: number } | undefined {
  if (original <= maxTokens) return undefined
  const marker = (n: number) => CUT_MARKER.replace('{tokens}', String(n))
  const ids = counter.encode(text)
  let budget = maxTokens - counter.count(marker(original))
  while (budget > 0) {
    const head = counter.decode(ids.slice(0, Math.ceil(budget / 2)))
    const tail = counter.decode(ids.slice(ids.length - Math.floor(budget / 2)))
    const kept = counter.count(head) + counter.count(tail)
    const cutTokens = Math.max(0, original - kept)
    const out = `${head}${marker(cutTokens)}${tail}`
    const n = counter.count(out)
    if (n <= maxTokens) return { text: out, cutTokens }
    budget -= n - maxTokens
  }
  return undefined
}

const utf16Length = (s: string) => s.length

/** Truncates old tool outputs and cuts long recent ones; nothing is dropped or moved. */
export function truncateOldToolOutputs(counter: Counter, messages: Message[], config: Partial<TruncationConfig> = {}): Message[] {
  const cfg: TruncationConfig = { ...DEFAULT_CONFIG, ...config }
  const conv = analyse(messages, null)
  const { rules: ruleOf, tokens } = rules(counter, conv, cfg)
  return messages.map((m, i) => {
    const rule = ruleOf[i]
    if (rule === 'placeholder') {
      const age = conv.currentStep - conv.steps[i]
      const text = contentText(m)
      const t = tokens.get(i)!
      const placeholder = cfg.placeholder
        .replaceAll('{age}', String(age))
        .replaceAll('{N}', String(age))
        .replaceAll('{tokens}', String(t))
      return { ...m, content: placeholder, _originalLength: utf16Length(text), _truncatedAt: age }
    }
    if (rule === 'cut') {
      const text = contentText(m)
      const cut = cutMiddle(counter, text, cfg.maxTokensPerOutput, tokens.get(i)!)
      if (cut === undefined) return m
      return { ...m, content: cut.text, _originalLength: utf16Length(text), _cutTokens: cut.cutTokens }
    }
    return m
  })
}
