/**
 * Seed 004's `truncateOldToolOutputs` in TypeScript, parameterised by a token counter, with the
 * rules the addon adopted for the seed's edge cases (`src/strategy/rolling.rs`), so that both
 * make the same decisions on the same data. Each tool result gets the first rule that applies:
 *
 * 1. error (flagged `is_error`/`isError`, or an error report: `src/analysis/detect.rs`): kept;
 * 2. small (under `smallOutputTokens` = 100 content tokens): kept;
 * 3. placeholder: older than `maxAge` steps and neither quoted nor consumed (below); the seed's
 *    placeholder with `_originalLength`/`_truncatedAt`;
 * 4. cut: longer than `maxTokensPerOutput` content tokens: head and tail around a marker;
 * 5. quoted: the latest tool result before a user message that shares a verbatim span of at
 *    least `minQuotedChars` = 40 characters with it: kept;
 * 6. consumed: the latest tool result, at a step before a recent call's (at most `maxAge` steps
 *    old), sharing such a span with the call's argument values, or whose own call named a file
 *    path the call names: kept;
 * 7. otherwise kept.
 *
 * Every call counts the content of every tool result afresh, as a TypeScript app would.
 */
import type { Message } from '../../index.js'
import { type Conversation, analyse, callArguments, contentText, isToolResult } from './conversation.js'
import { type Counter, contentTokens } from './counters.js'
import { isErrorOutput } from './detect.js'
import { firstAbove, insertSorted, SpanIndex } from './spanIndex.js'

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

/** A reference: a span-index window id (even) or a path id (odd). */
type Reference = number
const spanRef = (w: number): Reference => w * 2
const pathRef = (p: number): Reference => p * 2 + 1

/** What later messages refer to, each reference with the positions of the messages making it. */
class Referrers {
  spans: SpanIndex
  /** Each path named, with the positions naming it (ascending, no repeats). */
  paths: Array<[string, number[]]> = []
  /** file name -> indices into `paths` */
  byFileName = new Map<string, number[]>()

  constructor(minChars: number) {
    this.spans = new SpanIndex(minChars)
  }

  addPath(path: string, position: number): void {
    const name = fileName(path)
    let ids = this.byFileName.get(name)
    if (!ids) this.byFileName.set(name, (ids = []))
    let id = ids.find((k) => this.paths[k][0] === path)
    if (id === undefined) {
      id = this.paths.length
      ids.push(id)
      this.paths.push([path, []])
    }
    insertSorted(this.paths[id][1], position)
  }

  positions(r: Reference): number[] {
    return r % 2 === 0 ? this.spans.tags(r / 2) : (this.paths[(r - 1) / 2]?.[1] ?? [])
  }

  /** The references a tool result with this text, whose call named `paths`, can be the source of. */
  referencesIn(text: string, paths: string[]): Reference[] {
    const refs = new Set<Reference>(this.spans.sharedWindows(text).map(spanRef))
    for (const path of paths) {
      for (const id of this.byFileName.get(fileName(path)) ?? []) {
        if (samePath(path, this.paths[id][0])) refs.add(pathRef(id))
      }
    }
    return [...refs]
  }

  /**
   * The sources among `outputs` ([message index, position, references]): a tool result is the
   * source of a reference made at position p when it is the latest one before p to have it
   * (tool results at the same position share it). One flag per message.
   */
  sources(len: number, outputs: Array<[number, number, Reference[]]>): boolean[] {
    const marked = new Array<boolean>(len).fill(false)
    outputs.sort((a, b) => b[1] - a[1] || a[0] - b[0])
    const seenAt = new Map<Reference, number>()
    for (let g = 0; g < outputs.length; ) {
      let end = g
      while (end < outputs.length && outputs[end][1] === outputs[g][1]) end++
      const group = outputs.slice(g, end)
      for (const [i, position, refs] of group) {
        marked[i] = refs.some((r) => {
          const until = seenAt.get(r) ?? Infinity
          const p = firstAbove(this.positions(r), position)
          return p !== undefined && p <= until
        })
      }
      for (const [, position, refs] of group) for (const r of refs) seenAt.set(r, position)
      g = end
    }
    return marked
  }
}

function toolResults(conv: Conversation): number[] {
  const out: number[] = []
  conv.messages.forEach((m, i) => {
    if (isToolResult(m)) out.push(i)
  })
  return out
}

/** Which tool results are quoted by a later user message. */
function quotedSources(conv: Conversation, config: TruncationConfig, texts: string[]): boolean[] {
  const referrers = new Referrers(config.minQuotedChars)
  conv.messages.forEach((m, i) => {
    if (m.role === 'user' && !isToolResult(m)) referrers.spans.add(contentText(m), i)
  })
  const outputs = toolResults(conv).map((i): [number, number, Reference[]] => [i, i, referrers.referencesIn(texts[i], [])])
  return referrers.sources(conv.messages.length, outputs)
}

function argumentsText(raw: unknown): string {
  return typeof raw === 'string' ? raw : raw == null ? '' : JSON.stringify(raw)
}

/** Which tool results are consumed by a recent call at a later step. */
function consumedSources(conv: Conversation, config: TruncationConfig, texts: string[]): boolean[] {
  const referrers = new Referrers(config.minQuotedChars)
  conv.messages.forEach((m, i) => {
    const calls = m.tool_calls ?? []
    if (calls.length === 0 || conv.currentStep - conv.steps[i] > config.maxAge) return
    const step = conv.steps[i]
    for (const call of calls) {
      const text = argumentsText(call.function.arguments)
      const parsed = parseJson(text)
      if (!parsed.ok) {
        referrers.spans.add(text, step)
        continue
      }
      forEachString(parsed.value, (s) => referrers.spans.add(s, step))
      for (const path of argumentPaths(parsed.value)) referrers.addPath(path, step)
    }
  })
  const outputs = toolResults(conv).map((i): [number, number, Reference[]] => {
    const args = callArguments(conv, i)
    const parsed = args === undefined ? undefined : parseJson(args)
    const paths = parsed?.ok ? argumentPaths(parsed.value) : []
    return [i, conv.steps[i], referrers.referencesIn(texts[i], paths)]
  })
  return referrers.sources(conv.messages.length, outputs)
}

/** The rule applied to every message, and the content tokens of the tool results it counted. */
export function rules(counter: Counter, conv: Conversation, config: TruncationConfig): { rules: Rule[]; tokens: Map<number, number> } {
  const texts = conv.messages.map((m) => (isToolResult(m) ? contentText(m) : ''))
  const out: Rule[] = []
  const pending: number[] = []
  const tokens = new Map<number, number>()
  conv.messages.forEach((m, i) => {
    if (!isToolResult(m)) return void out.push('not-tool-result')
    if (m.is_error === true || m.isError === true || isErrorOutput(texts[i])) return void out.push('error')
    const t = contentTokens(counter, m.content)
    if (t < config.smallOutputTokens) return void out.push('small')
    tokens.set(i, t)
    pending.push(i)
    out.push('recent')
  })
  if (pending.length === 0) return { rules: out, tokens }
  const quoted = quotedSources(conv, config, texts)
  const consumed = consumedSources(conv, config, texts)
  for (const i of pending) {
    const referenced: Rule | undefined = quoted[i] ? 'quoted' : consumed[i] ? 'consumed' : undefined
    if (referenced === undefined && conv.currentStep - conv.steps[i] > config.maxAge) out[i] = 'placeholder'
    else if (tokens.get(i)! > config.maxTokensPerOutput) out[i] = 'cut'
    else out[i] = referenced ?? 'recent'
  }
  return { rules: out, tokens }
}

/** Cuts the middle of `text` to at most `maxTokens` tokens, marker included (src/model/cut.rs, simplified). */
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
