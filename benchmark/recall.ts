/**
 * Context recall on real agent runs (issue 18; method in docs/quality.md). Run with
 * `npm run bench:recall`; writes `benchmark/RECALL.md` when run on the default folders alone:
 * `../shared/transcripts`, `../shared/corpus` and `benchmark/heldout` (each where it exists).
 *
 *   npm run bench:recall -- [DIR ...] [--no-shared] [--no-write] [--out FILE] [--details FILE] [--only NAMES] [--family NAME]
 *
 * DIR: more folders of transcripts (OpenAI Chat Completions message arrays, `.json`), measured
 * together with the default ones (then nothing is written unless `--out` is given), or alone with
 * `--no-shared`. Every run is reported with its agent family (from its file name, else its
 * tools) and all together; `--family NAME` measures the runs of one family only.
 * `--details FILE` writes every turn's lost evidence as JSON, to see where a strategy loses.
 * `--only NAMES` measures only the strategies whose names are in the comma-separated list (to
 * try a rule quickly; nothing is written unless `--out` is given).
 *
 * For every assistant message i of a transcript, the history before i is trimmed to
 * B = f × the transcript's tokens (f = 0.2, 0.3, 0.5), unless it already fits. The evidence of
 * the turn is every line (trimmed, ≥ 24 characters) the agent wrote in message i and in the
 * next assistant message (text, or string values inside tool-call arguments) that appears
 * verbatim in an earlier tool result or user message and not in a system message. Recall is the
 * evidence characters still present verbatim in the trimmed history over all evidence
 * characters; a trimmed history over the budget (or empty), or with an unpaired tool call or
 * result, is refused by a provider and counts as nothing kept.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import type { Message } from '../index.js'
import { PEERS, type Trimmer } from './peers.js'

const require = createRequire(import.meta.url)
const ct: typeof import('../index.js') = require('../index.js')

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const sharedDir = join(root, '..', 'shared', 'transcripts')
const bundledDir = join(root, 'samples', 'transcripts')
const corpusDir = join(root, '..', 'shared', 'corpus')
const heldoutDir = join(here, 'heldout')

/** The budgets, as fractions of each transcript's tokens. */
export const FRACTIONS = [0.2, 0.3, 0.5] as const
/** The shortest line that counts as evidence. */
export const MIN_EVIDENCE_CHARS = 24

interface Run {
  name: string
  messages: Message[]
  /** The agent family that made the run (from the file name, else from its tools). */
  family: string
  /** The folder it comes from (shared, corpus, held out, or the folder's name). */
  set: string
}

/** Agent families by the prefix of a transcript's file name, with the name the report shows. */
const FAMILY_PREFIXES: [RegExp, string][] = [
  [/^openhands/i, 'OpenHands'],
  [/^(mini-?swe-?agent|minisweagent)/i, 'mini-swe-agent'],
  [/^swe-?agent/i, 'SWE-agent'],
  [/^claude-?code/i, 'Claude Code'],
  [/^codex/i, 'Codex CLI'],
  [/^opencode/i, 'opencode'],
  [/^crush/i, 'Crush'],
  [/^gemini/i, 'Gemini CLI'],
  [/^(cline|roo)/i, 'Cline'],
  [/^cursor/i, 'Cursor'],
  [/^aider/i, 'Aider'],
]

/** Tool names that only one family uses, for runs whose file name does not say. */
const FAMILY_TOOLS: [string[], string][] = [
  [['Read', 'Edit', 'MultiEdit', 'Write', 'Bash', 'BashOutput', 'TodoWrite'], 'Claude Code'],
  [['shell', 'shell_command', 'apply_patch', 'update_plan', 'exec_command'], 'Codex CLI'],
  [['view', 'multiedit', 'patch', 'sourcegraph'], 'opencode'],
  [['read_file', 'replace', 'write_file', 'run_shell_command'], 'Gemini CLI'],
  [['execute_bash', 'str_replace_editor', 'think', 'finish'], 'OpenHands'],
]

/** The family of a run: named in its file name, else the family whose tools it calls most. */
export function familyOf(name: string, messages: Message[]): string {
  for (const [re, family] of FAMILY_PREFIXES) if (re.test(name)) return family
  const counts = new Map<string, number>()
  for (const m of messages) {
    for (const c of m.tool_calls ?? []) {
      const hit = FAMILY_TOOLS.find(([tools]) => tools.includes(c.function?.name ?? ''))
      if (hit) counts.set(hit[1], (counts.get(hit[1]) ?? 0) + 1)
    }
  }
  const best = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]
  return best ? best[0] : 'other'
}

/** The library's budget strategies, each as one trimmer per run and budget. */
const LIBRARY: Trimmer[] = [
  { name: 'trimByPriority', make: (b) => (h) => ct.trimByPriority(h, { targetTokens: b }).messages },
  { name: 'trimWithPlaceholders', make: (b) => (h) => ct.trimWithPlaceholders(h, { targetTokens: b }).messages },
  // For a call before every model call: re-plan points a quarter of the budget apart, which
  // keeps the prompt cache (docs/prompt-caching.md) and sends less between two points.
  {
    name: 'trimByPriority replanEvery ¼ budget',
    make: (b) => (h) => ct.trimByPriority(h, { targetTokens: b, replanEvery: Math.floor(b / 4) }).messages,
  },
  {
    name: 'trimWithPlaceholders replanEvery ¼ budget',
    make: (b) => (h) => ct.trimWithPlaceholders(h, { targetTokens: b, replanEvery: Math.floor(b / 4) }).messages,
  },
  { name: 'trimConversation', make: (b) => (h) => ct.trimConversation(h, b) },
  { name: "trimConversation 'age-based'", make: (b) => (h) => ct.trimConversation(h, b, { strategy: 'age-based' }) },
  { name: 'trimByAge', make: (b) => (h) => ct.trimByAge(h, b) },
  // Its default drops system messages like any other role (keepFirstSystem: false).
  { name: 'applyMaxContextTokens', make: (b) => (h) => ct.applyMaxContextTokens(h, b), dropsSystem: true },
  {
    name: "CacheAwareTrimmer 'priority'",
    make: (b) => {
      const trimmer = new ct.CacheAwareTrimmer({ contextWindow: b, strategy: 'priority' })
      return (h) => trimmer.trim(h).messages
    },
    everyTurn: true,
  },
  {
    name: "CacheAwareTrimmer 'placeholders'",
    make: (b) => {
      const trimmer = new ct.CacheAwareTrimmer({ contextWindow: b, strategy: 'placeholders' })
      return (h) => trimmer.trim(h).messages
    },
    everyTurn: true,
  },
]

// ---------------------------------------------------------------------------------------------
// Text of messages

/** The text of a message's content (string, or the text of its parts). */
export function contentText(m: Message): string {
  const c = m.content as unknown
  if (typeof c === 'string') return c
  if (!Array.isArray(c)) return ''
  return c
    .map((p: { text?: unknown; content?: unknown }) =>
      typeof p?.text === 'string' ? p.text : typeof p?.content === 'string' ? p.content : '',
    )
    .join('\n')
}

/** Every string value inside a tool call's arguments (JSON text or object). */
function argumentStrings(args: unknown, out: string[]): void {
  if (typeof args === 'string') {
    let parsed: unknown
    try {
      parsed = JSON.parse(args)
    } catch {
      out.push(args)
      return
    }
    collectStrings(parsed, out)
  } else collectStrings(args, out)
}

function collectStrings(v: unknown, out: string[]): void {
  if (typeof v === 'string') out.push(v)
  else if (Array.isArray(v)) for (const x of v) collectStrings(x, out)
  else if (v && typeof v === 'object') for (const x of Object.values(v)) collectStrings(x, out)
}

/** What an assistant message wrote: its text and the string values of its calls' arguments. */
function written(m: Message): string[] {
  const out = [contentText(m)]
  for (const c of m.tool_calls ?? []) argumentStrings(c.function?.arguments, out)
  return out
}

/** Everything a message shows the model, as one text (content and call arguments). */
function shown(m: Message): string {
  return [...written(m), ...(m.tool_calls ?? []).map((c) => c.function?.name ?? '')].join('\n')
}

// ---------------------------------------------------------------------------------------------
// Evidence

interface Turn {
  /** The index of the assistant message; the history is `messages.slice(0, index)`. */
  index: number
  /** Distinct evidence lines. */
  evidence: string[]
}

/** The evidence of every assistant turn of a run (turns without evidence included). */
export function turns(messages: Message[]): Turn[] {
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map(contentText).join('\n')
  const assistants = messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []))
  const out: Turn[] = []
  for (let k = 0; k < assistants.length; k++) {
    const index = assistants[k]
    const sources = messages
      .slice(0, index)
      .filter((m) => m.role === 'tool' || m.role === 'user')
      .map(contentText)
      .join('\n\u0000\n')
    const lines = new Set<string>()
    for (const j of [index, assistants[k + 1]]) {
      if (j === undefined) continue
      for (const text of written(messages[j])) {
        for (const raw of text.split('\n')) {
          const line = raw.trim()
          if (line.length >= MIN_EVIDENCE_CHARS && sources.includes(line) && !system.includes(line)) lines.add(line)
        }
      }
    }
    out.push({ index, evidence: [...lines] })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// What a provider refuses

/** Whether every tool result answers a call of the assistant message before its run of results, and every call is answered. */
export function paired(messages: Message[]): boolean {
  let open = new Set<string>()
  for (const m of messages) {
    if (m.role === 'tool') {
      if (!open.delete(m.tool_call_id ?? '')) return false
      continue
    }
    if (open.size > 0) return false
    open = new Set((m.tool_calls ?? []).map((c) => c.id))
  }
  return open.size === 0
}

/** Whether `a` is `b` whole: the same role, text and calls. */
function sameMessage(a: Message | undefined, b: Message): boolean {
  return a !== undefined && a.role === b.role && contentText(a) === contentText(b) &&
    JSON.stringify(a.tool_calls ?? []) === JSON.stringify(b.tool_calls ?? [])
}

/** Whether `a` stands for `b`: `b` whole, or `b` with its content shortened (the same role, and for a tool result the same call). */
function standsFor(a: Message | undefined, b: Message): boolean {
  return a !== undefined && a.role === b.role && (a.tool_call_id ?? null) === (b.tool_call_id ?? null) &&
    JSON.stringify(a.tool_calls ?? []) === JSON.stringify(b.tool_calls ?? [])
}

// ---------------------------------------------------------------------------------------------
// The measure

interface Score {
  evidence: number
  kept: number
  /** Turns trimmed. */
  turns: number
  /** Turns with evidence, and those of them with every line kept. */
  withEvidence: number
  allKept: number
  lastKept: number
  lastWhole: number
  refused: number
  overBudget: number
  unpaired: number
}

const emptyScore = (): Score => ({ evidence: 0, kept: 0, turns: 0, withEvidence: 0, allKept: 0, lastKept: 0, lastWhole: 0, refused: 0, overBudget: 0, unpaired: 0 })

interface Loss {
  run: string
  turn: number
  fraction: number
  strategy: string
  refused: string | null
  lost: string[]
}

/** The score of one strategy at one budget on one run. */
type Scores = Map<string, Score>

const keyOf = (strategy: string, f: number, run: string) => `${strategy}\u0000${f}\u0000${run}`

async function measure(runs: Run[], trimmers: Trimmer[], details: Loss[] | null): Promise<Scores> {
  const scores: Scores = new Map()
  for (const run of runs) {
    const total = ct.estimateTokens(run.messages)
    const runTurns = turns(run.messages)
    for (const f of FRACTIONS) {
      const budget = Math.floor(total * f)
      for (const trimmer of trimmers) {
        const score = emptyScore()
        scores.set(keyOf(trimmer.name, f, run.name), score)
        const trim = trimmer.make(budget)
        for (const turn of runTurns) {
          const history = run.messages.slice(0, turn.index)
          const fits = ct.estimateTokens(history) <= budget
          if (fits && !trimmer.everyTurn) continue
          const out = await trim(history)
          if (fits) continue
          score.turns++
          // An empty request is refused by every provider, like one over the budget.
          const over = out.length === 0 || ct.estimateTokens(out) > budget
          const unpaired = !paired(out)
          if (standsFor(out.at(-1), history.at(-1)!)) score.lastKept++
          if (sameMessage(out.at(-1), history.at(-1)!)) score.lastWhole++
          if (over) score.overBudget++
          if (unpaired) score.unpaired++
          const refused = over || unpaired
          if (refused) score.refused++
          const chars = turn.evidence.reduce((s, l) => s + l.length, 0)
          score.evidence += chars
          if (turn.evidence.length === 0) continue
          score.withEvidence++
          const hay = refused ? '' : out.map(shown).join('\n\u0000\n')
          const lost = turn.evidence.filter((l) => !hay.includes(l))
          score.kept += chars - lost.reduce((s, l) => s + l.length, 0)
          if (lost.length === 0) score.allKept++
          else if (details) {
            details.push({ run: run.name, turn: turn.index, fraction: f, strategy: trimmer.name, refused: refused ? (over ? 'over budget' : 'unpaired') : null, lost })
          }
        }
      }
    }
  }
  return scores
}

/** The scores of one strategy at one budget, summed over `runs`. */
function sum(scores: Scores, strategy: string, f: number, runs: Run[]): Score {
  const out = emptyScore()
  for (const run of runs) {
    const s = scores.get(keyOf(strategy, f, run.name))
    if (!s) continue
    for (const k of Object.keys(out) as (keyof Score)[]) out[k] += s[k]
  }
  return out
}

function pct(a: number, b: number): string {
  return b === 0 ? '–' : `${((100 * a) / b).toFixed(1)}%`
}

const recallOf = (s: Score) => (s.evidence ? s.kept / s.evidence : 0)

/** The strategies whose figures the issue's criteria compare with: every other strategy but the
 * library's own variants of the priority ladder (`trimConversation`, the cache-aware trimmer
 * and re-plan points, which trade recall for nanocoder's placeholders or a cached prefix by
 * design). */
const PRIORITY = ['trimByPriority', 'trimWithPlaceholders']
const VARIANTS = [
  'trimConversation',
  "CacheAwareTrimmer 'priority'",
  "CacheAwareTrimmer 'placeholders'",
  'trimByPriority replanEvery ¼ budget',
  'trimWithPlaceholders replanEvery ¼ budget',
]

/** One group of runs: a table of every strategy at every budget, and the criteria. */
function groupReport(title: string, runs: Run[], trimmers: Trimmer[], scores: Scores, full: boolean, withCriteria = true): string[] {
  const lines: string[] = []
  const withEvidence = runs.reduce((s, r) => s + turns(r.messages).filter((t) => t.evidence.length > 0).length, 0)
  lines.push(`## ${title}`, '')
  lines.push(`Runs: ${runs.length} (${runs.map((r) => r.name).join(', ')}); ${withEvidence} assistant turns with evidence.`, '')
  if (full) {
    for (const f of FRACTIONS) {
      lines.push(`### Budget ${Math.round(f * 100)}% of each run's tokens`, '')
      lines.push('| strategy | recall | turns with all evidence kept | last message kept (whole) | refused (over budget / unpaired) |')
      lines.push('| --- | --- | --- | --- | --- |')
      for (const t of trimmers) {
        const s = sum(scores, t.name, f, runs)
        lines.push(
          `| ${t.name}${t.source ? ` (${t.source})` : ''} | ${pct(s.kept, s.evidence)} | ${s.allKept}/${s.withEvidence} | ${pct(s.lastKept, s.turns)} (${pct(s.lastWhole, s.turns)}) | ${pct(s.refused, s.turns)} (${s.overBudget} / ${s.unpaired} of ${s.turns}) |`,
        )
      }
      lines.push('')
    }
  } else {
    lines.push(`| strategy | ${FRACTIONS.map((f) => `recall ${Math.round(f * 100)}%`).join(' | ')} | refused (${FRACTIONS.map((f) => `${Math.round(f * 100)}%`).join(' / ')}) | last message kept |`)
    lines.push(`| --- | ${FRACTIONS.map(() => '---').join(' | ')} | --- | --- |`)
    for (const t of trimmers) {
      const ss = FRACTIONS.map((f) => sum(scores, t.name, f, runs))
      const turnsAll = ss.reduce((a, s) => a + s.turns, 0)
      lines.push(`| ${t.name} | ${ss.map((s) => pct(s.kept, s.evidence)).join(' | ')} | ${ss.map((s) => `${s.refused}/${s.turns}`).join(' / ')} | ${pct(ss.reduce((a, s) => a + s.lastKept, 0), turnsAll)} |`)
    }
    lines.push('')
  }
  const criteria = withCriteria ? criteriaRows(runs, trimmers, scores) : []
  if (criteria.length > 0) {
    lines.push(`Criteria (issue 41): recall at least the best other strategy's (the library's variants ${VARIANTS.join(', ')} aside), no turn refused, the last message kept in every turn.`, '')
    lines.push('| strategy | budget | recall | best other | refused | last message kept | met |')
    lines.push('| --- | --- | --- | --- | --- | --- | --- |')
    lines.push(...criteria, '')
  }
  return lines
}

function criteriaRows(runs: Run[], trimmers: Trimmer[], scores: Scores): string[] {
  const rows: string[] = []
  for (const name of PRIORITY) {
    const others = trimmers.filter((t) => !PRIORITY.includes(t.name) && !VARIANTS.includes(t.name))
    if (!trimmers.some((t) => t.name === name) || others.length === 0) continue
    for (const f of FRACTIONS) {
      const own = sum(scores, name, f, runs)
      const best = others.map((t) => ({ t, s: sum(scores, t.name, f, runs) })).reduce((a, b) => (recallOf(b.s) > recallOf(a.s) ? b : a))
      const met = recallOf(own) + 1e-9 >= recallOf(best.s) && own.refused === 0 && own.lastKept === own.turns
      rows.push(`| ${name} | ${Math.round(f * 100)}% | ${pct(own.kept, own.evidence)} | ${pct(best.s.kept, best.s.evidence)} (${best.t.name}) | ${own.refused} | ${pct(own.lastKept, own.turns)} | ${met ? 'yes' : '**no**'} |`)
    }
  }
  return rows
}

/** The families of `runs`, the most runs first. */
function families(runs: Run[]): [string, Run[]][] {
  const by = new Map<string, Run[]>()
  for (const r of runs) by.set(r.family, [...(by.get(r.family) ?? []), r])
  return [...by].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
}

/** The minimum number of runs for a family to get criteria of its own. */
const MIN_FAMILY_RUNS = 3

function report(runs: Run[], trimmers: Trimmer[], scores: Scores): string {
  const lines: string[] = []
  const fams = families(runs)
  lines.push('## Summary by family', '')
  lines.push(`Recall at ${FRACTIONS.map((f) => `${Math.round(f * 100)}%`).join(' / ')} of each run's tokens.`, '')
  const shown = trimmers.filter((t) => [...PRIORITY, 'applyMaxContextTokens', 'pair-safe drop-oldest'].includes(t.name))
  lines.push(`| family | runs | ${shown.map((t) => t.name).join(' | ')} |`)
  lines.push(`| --- | --- | ${shown.map(() => '---').join(' | ')} |`)
  const row = (label: string, group: Run[]) =>
    `| ${label} | ${group.length} | ${shown.map((t) => FRACTIONS.map((f) => pct(sum(scores, t.name, f, group).kept, sum(scores, t.name, f, group).evidence).replace('%', '')).join(' / ')).join(' | ')} |`
  for (const [family, group] of fams) lines.push(row(family, group))
  const sets = [...new Set(runs.map((r) => r.set))]
  if (sets.length > 1) for (const set of sets) lines.push(row(`all of ${set}`, runs.filter((r) => r.set === set)))
  lines.push(row('all', runs), '')
  lines.push(...groupReport('All runs', runs, trimmers, scores, true))
  for (const [family, group] of fams) {
    lines.push(...groupReport(`${family}${group.length < MIN_FAMILY_RUNS ? ` (fewer than ${MIN_FAMILY_RUNS} runs: no criteria)` : ''}`, group, trimmers, scores, false, group.length >= MIN_FAMILY_RUNS))
  }
  return lines.join('\n')
}

/** The transcripts of `dir`: every `.json` file holding an array (other JSON, such as a list of
 * sources, is skipped). */
function loadRuns(dir: string, set: string): Run[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ name: f.replace(/\.json$/, ''), messages: JSON.parse(readFileSync(join(dir, f), 'utf8')) as unknown }))
    .filter((r): r is { name: string; messages: Message[] } => Array.isArray(r.messages))
    .map((r) => ({ ...r, family: familyOf(r.name, r.messages), set }))
}

/** The folders measured by default: the shared transcripts (or their bundled copy), the shared
 * corpus of longer sessions, and the held-out runs kept in the repo, each where it exists. */
export function defaultFolders(): [string, string][] {
  const out: [string, string][] = [[existsSync(sharedDir) ? sharedDir : bundledDir, 'shared']]
  if (existsSync(corpusDir)) out.push([corpusDir, 'corpus'])
  if (existsSync(heldoutDir)) out.push([heldoutDir, 'held out'])
  return out
}

async function main() {
  const args = process.argv.slice(2)
  const flag = (name: string) => {
    const k = args.indexOf(name)
    if (k < 0) return undefined
    const v = args[k + 1]
    args.splice(k, 2)
    return v
  }
  const option = (name: string) => {
    const k = args.indexOf(name)
    if (k >= 0) args.splice(k, 1)
    return k >= 0
  }
  const noWrite = option('--no-write')
  const noShared = option('--no-shared')
  const out = flag('--out')
  const detailsFile = flag('--details')
  const only = flag('--only')?.split(',')
  const family = flag('--family')
  if (noShared && args.length === 0) throw new Error('--no-shared needs at least one folder of transcripts')
  const folders: [string, string][] = [...(noShared ? [] : defaultFolders()), ...args.map((a): [string, string] => [a, relative(process.cwd(), a) || a])]
  const all = folders.flatMap(([dir, set]) => loadRuns(dir, set))
  const runs = all.filter((r) => !family || r.family === family)
  if (runs.length === 0) {
    const known = [...new Set(all.map((r) => r.family))].sort()
    throw new Error(
      family
        ? `--family: no run of the family "${family}"; the runs read are of ${known.map((f) => `"${f}"`).join(', ')}`
        : `no transcripts found in ${folders.map(([dir]) => dir).join(', ')} (give folders of .json message arrays)`,
    )
  }
  const trimmers = [...LIBRARY, ...PEERS].filter((t) => !only || only.includes(t.name))
  if (only && trimmers.length === 0) throw new Error(`--only: no strategy is named ${only.join(' or ')}`)
  const details: Loss[] | null = detailsFile ? [] : null
  const started = Date.now()
  const scores = await measure(runs, trimmers, details)
  const body = report(runs, trimmers, scores)
  console.log(body)
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
  if (details && detailsFile) writeFileSync(detailsFile, JSON.stringify(details, null, 1))
  const target = out ?? (args.length === 0 && !noShared && !noWrite && !only && !family ? join(here, 'RECALL.md') : undefined)
  if (target) {
    const header = [
      '# Context recall on real agent runs',
      '',
      `Written by \`npm run bench:recall\` (benchmark/recall.ts) in one run on ${folders.map(([f]) => relative(root, f) || f).join(', ')}. The method is in [docs/quality.md](../docs/quality.md).`,
      'Every strategy counts with the library\'s `estimateTokens` (o200k_base, OpenAI framing), so budgets are equal.',
      '',
    ].join('\n')
    writeFileSync(target, `${header}\n${body}`)
    console.log(`written to ${relative(process.cwd(), target)}`)
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main()
}
