#!/usr/bin/env node
// The context-trim command line: a thin layer over the addon. The addon counts, classifies and
// trims; this file reads arguments and files, and prints what the addon decided.
import { readFileSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import { DEFAULT_DROP_ORDER, STRATEGIES, analyse, clean, decisionReason, holdInput, runTrim, textOf, tiers, totalsBy } from './analyse.mjs'
import { renderHtmlReport } from './html.mjs'
import { CliError, displayName, formatConversation, inInputTerms, parseConversation, readInput, withSystemField, writeOutput } from './input.mjs'
import { unknownModelWarning } from './models.mjs'
import { DECISION_COLOURS, ROLE_COLOURS, TIER_COLOURS, bar, num, pad, palette, pct, preview, useColour } from './terminal.mjs'
import { SIMULATE_HELP, SIMULATE_OPTIONS, SIMULATE_USAGE, runSimulate } from './simulate.mjs'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const SAMPLE = join(root, 'samples', 'transcripts', 'openhands-ponyc-4595.json')
const FORMATS = ['openai', 'anthropic', 'ai-sdk', 'auto']
const ROLES = ['system', 'developer', 'user', 'assistant', 'tool']

const USAGE = `usage:
  context-trim stats <file> [--json] [--top N] [--model M] [--format F]
  context-trim trim <file> --budget N [--strategy priority|placeholders|age|truncate|roles]
                   [--placeholders] [--drop-order ROLES] [--model M] [--format F] [-o out.json]
                   [--html report.html] [--json] [--all-rows] [--fail-over-budget]
  context-trim demo [--html report.html]
  ${SIMULATE_USAGE}
  context-trim help [command] | --help | --version`

const HELP = `context-trim: keeps an LLM agent's conversation inside its context window without breaking it

${USAGE}

<file> is a JSON array of messages, a JSON object with a "messages" array, JSON Lines (one
message a line), or - for stdin. Messages are OpenAI Chat Completions, Anthropic Messages or
Vercel AI SDK messages (detected, or named with --format).

commands:
  stats     tokens by role, by priority tier and by tool, the largest messages, steps, and the
            files the session touched and modified
  trim      trims to a token budget, writes the result (-o) and reports, per message, whether it
            was kept, replaced by a placeholder, cut to head and tail or dropped, with its
            priority tier and why (the rows that changed; runs of kept rows are one line
            "… N kept …" unless --all-rows)
  demo      stats and a trim report for a bundled real agent transcript, and its HTML report
            (written to context-trim-demo-report.html in the temporary folder, or --html FILE)
${SIMULATE_HELP}

options:
  --budget N          the token budget of the whole request: N tokens, or N% of the input's
                      tokens (rounded down; a request body's system field counts too)
  --strategy S        priority (default): lowest priority tier first (trimByPriority)
                      placeholders: priority, tool results becoming placeholders instead of
                      being dropped (trimWithPlaceholders)
                      age: oldest first (trimByAge)
                      truncate: shortens old and long tool outputs (truncateOldToolOutputs)
                      whatever the budget, and never drops: a result over the budget stays
                      over it (reported; the adapters' and CacheAwareTrimmer's truncate also
                      drop the oldest units to reach the budget: use age for that)
                      roles: by role, the drop order first (applyMaxContextTokens)
  --placeholders      the same as --strategy placeholders
  --drop-order ROLES  roles only: comma-separated roles, first listed dropped first
                      (default: ${DEFAULT_DROP_ORDER.join(',')})
  --model M           the model whose tokenizer counts (default: o200k_base, as gpt-4o and later;
                      an unknown model counts with o200k_base, with a warning on stderr)
  --format F          ${FORMATS.join(', ')} (default: auto)
  -o, --output FILE   where to write the trimmed conversation, in the input's form (- for stdout,
                      the report then goes to stderr); without it nothing is written
  --html FILE         also writes a self-contained HTML report of the trim
  --fail-over-budget  trim: exit with status 3 when the result is still over the budget
  --all-rows          trim: prints a row for every message (by default, the rows that changed,
                      each run of kept rows as one line; --json always has every message)
  --top N             stats: how many of the largest messages to list (default: 5)
  --json              prints the report as JSON
  -h, --help          prints this help (as does context-trim help [command])
  -v, --version       prints the version

${SIMULATE_OPTIONS}

exit status: 0 on success, 1 when the input cannot be read or is invalid, 2 on a usage error,
3 when trim --fail-over-budget ends over the budget.`

/** The options each command takes: `flag` (no value), `string`, or `count` (an integer). */
const COMMANDS = {
  stats: { json: 'flag', top: 'count', model: 'string', format: 'string' },
  trim: {
    budget: 'string',
    strategy: 'string',
    placeholders: 'flag',
    'drop-order': 'string',
    model: 'string',
    format: 'string',
    output: 'string',
    html: 'string',
    json: 'flag',
    'fail-over-budget': 'flag',
    'all-rows': 'flag',
  },
  demo: { html: 'string' },
}
const SHORT = { o: 'output', h: 'help', v: 'version' }
/** The names `--strategy` takes: the strategies, and `placeholders` (priority with placeholders). */
const STRATEGY_NAMES = ['priority', 'placeholders', ...Object.keys(STRATEGIES).filter((s) => s !== 'priority')]

function usageError(message) {
  return new CliError(`${message} (see context-trim --help)`, 2)
}

/** Splits the arguments into the command, its positional arguments and its options. */
export function parseArguments(argv) {
  const options = {}
  const positional = []
  let command
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--') {
      positional.push(...argv.slice(i + 1))
      break
    }
    if (arg === '-' || !arg.startsWith('-')) {
      if (command === undefined && !options.help && !options.version) command = arg
      else positional.push(arg)
      continue
    }
    const long = arg.startsWith('--')
    const eq = arg.indexOf('=')
    const rawName = long ? arg.slice(2, eq === -1 ? undefined : eq) : arg.slice(1, eq === -1 ? undefined : eq)
    const name = long ? rawName : SHORT[rawName]
    if (name === 'help' || name === 'version') {
      options[name] = true
      continue
    }
    const kind = COMMANDS[command]?.[name]
    if (kind === undefined) {
      if (command === undefined || !COMMANDS[command]) throw usageError(`unknown option ${arg}`)
      throw usageError(`unknown option ${arg} for ${command}`)
    }
    if (kind === 'flag') {
      if (eq !== -1) throw usageError(`${arg.slice(0, eq)} takes no value`)
      options[name] = true
      continue
    }
    let value = eq === -1 ? argv[++i] : arg.slice(eq + 1)
    if (value === undefined) throw usageError(`${long ? '--' : '-'}${rawName} needs a value`)
    if (kind === 'count') {
      if (!/^[0-9]+$/.test(value)) throw usageError(`--${name} must be a non-negative integer, got "${value}"`)
      value = Number(value)
    }
    options[name] = value
  }
  return { command, positional, options }
}

/** The value of `--budget`, checked before any input is read: `N` tokens or `N%` of the input's. */
function parseBudget(text) {
  const m = /^([0-9]+)(%?)$/.exec(text)
  if (!m) throw usageError(`--budget must be a number of tokens or a percentage, got "${text}"`)
  const n = Number(m[1])
  if (!Number.isSafeInteger(n)) throw usageError(`--budget is too large: ${text}`)
  return { text, n, percent: m[2] === '%' }
}

/** The budget in tokens for an input of `total` tokens (a percentage is rounded down). */
function budgetOf(budget, total) {
  if (!budget.percent) return budget.n
  const tokens = (BigInt(total) * BigInt(budget.n)) / 100n
  if (tokens > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw usageError(`--budget is too large: ${budget.text} of ${num(total)} tokens is more than ${num(Number.MAX_SAFE_INTEGER)} tokens`)
  }
  return Number(tokens)
}

function checkCommonOptions(options) {
  if (options.format !== undefined && !FORMATS.includes(options.format)) {
    throw usageError(`--format must be one of ${FORMATS.join(', ')}, got "${options.format}"`)
  }
}

function addon() {
  try {
    return require('../index.js')
  } catch (e) {
    throw new CliError(`cannot load the context-trim addon: ${e.message.split('\n')[0]} (run npm run build)`)
  }
}

/**
 * Loads a conversation and checks it with the addon; invalid messages give the addon's message.
 * A request body's top-level `system` (`{system, messages}`, as Anthropic's API and the AI SDK
 * take it) is read as a first system message, #0, so that it is counted (`withSystemField`).
 */
function load(ct, path, options) {
  const name = displayName(path)
  const text = readInput(path)
  const parsed = withSystemField(parseConversation(text, name), name)
  holdInput(ct, parsed.messages.length + 1, Buffer.byteLength(text))
  let analysis
  try {
    analysis = analyse(ct, parsed.messages, options)
  } catch (e) {
    if (typeof e.code !== 'string' || !e.code.startsWith('INVALID_')) throw e
    throw new CliError(`${name}: ${inInputTerms(parsed, e.message)}${lineHint(parsed, e.message)}`)
  }
  analysis.systemField = Boolean(parsed.systemField)
  return { name, parsed, analysis }
}

/** For JSON Lines input, the line of the message an addon error names. */
function lineHint(parsed, message) {
  const m = /^messages\[(\d+)\]/.exec(message)
  return parsed.form === 'jsonl' && m && parsed.lines[Number(m[1])] ? ` (line ${parsed.lines[Number(m[1])]})` : ''
}

// ---------------------------------------------------------------------------------------------
// stats

/** The stats report as data (what `--json` prints). */
function statsReport(ct, name, analysis, top) {
  const rows = analysis.messages
  const files = analysis.files
  return {
    file: name,
    messages: rows.length,
    systemField: Boolean(analysis.systemField),
    steps: analysis.steps,
    tokens: analysis.totalTokens,
    byRole: totalsBy(rows, (r) => r.role).map(({ key, ...t }) => ({ role: key, ...t })),
    byPriority: analysis.classified
      ? tiers(ct)
          .map((t) => ({ tier: t.name, priority: t.value, ...sumOf(rows.filter((r) => r.priority === t.value)) }))
          .filter((t) => t.messages > 0)
      : null,
    byTool: totalsBy(rows, toolKey).map(({ key, messages, tokens }) => ({
      tool: key,
      results: messages,
      // The calls these results answer: each call is counted once, in the group of its result.
      calls: rows.reduce((n, r) => n + (toolKey(r) === key ? r.answered : 0), 0),
      tokens,
    })),
    largest: [...rows]
      .sort((a, b) => b.tokens - a.tokens || a.index - b.index)
      .slice(0, top)
      .map((r) => clean({ index: r.index, role: r.role, tokens: r.tokens, tier: r.tier, tool: r.answers.join(' + ') || undefined, reason: r.reason })),
    files,
    modifiedFiles: files ? files.filter((f) => f.modified).map((f) => f.path) : null,
  }
}

/** The group of a result in `byTool`: the tools it answers, joined with ` + `. */
function toolKey(row) {
  return row.answers.length ? row.answers.join(' + ') : undefined
}

function sumOf(rows) {
  return { messages: rows.length, tokens: rows.reduce((n, r) => n + r.tokens, 0) }
}

function printStats(report, analysis, messages, out, colour) {
  const s = palette(colour)
  const lines = []
  const total = report.tokens
  lines.push(s.bold(`context-trim stats ${report.file}`))
  lines.push(`  ${plural(report.messages, 'message')} · ${plural(report.steps, 'step')} · ${num(total)} tokens (with chat framing and reply priming)`)
  if (report.systemField) lines.push(`  #0 is the request's top-level system field, counted as a system message`)
  const chart = (title, entries, colourOf) => {
    lines.push('', s.bold(title))
    if (entries.length === 0) return void lines.push(`  ${s.dim('(none)')}`)
    const width = Math.max(...entries.map((e) => e.label.length), 4)
    const max = Math.max(...entries.map((e) => e.tokens), 1)
    for (const e of entries) {
      const paint = s[colourOf(e)] ?? String
      lines.push(`  ${pad(e.label, width)}  ${pad(e.count, 12)} ${pad(num(e.tokens), 8, true)}  ${pad(pct(e.tokens, total), 6, true)}  ${paint(bar(e.tokens, max, 30, colour))}`)
    }
  }
  chart('Tokens by role', report.byRole.map((r) => ({ label: r.role, count: plural(r.messages, 'message'), tokens: r.tokens })), (e) => ROLE_COLOURS[e.label])
  if (report.byPriority) {
    chart('Tokens by priority tier (classifyMessages)', report.byPriority.map((t) => ({ label: t.tier, count: plural(t.messages, 'message'), tokens: t.tokens })), (e) => TIER_COLOURS[e.label])
  } else {
    lines.push('', s.bold('Tokens by priority tier'), `  ${s.dim('not available in this build (the addon has no classifyMessages)')}`)
  }
  if (report.byTool.length) {
    chart('Tool output tokens by tool', report.byTool.map((t) => ({ label: t.tool, count: plural(t.results, 'result'), tokens: t.tokens })), () => 'yellow')
  }
  lines.push('', s.bold(`Largest messages (top ${report.largest.length})`))
  for (const r of report.largest) {
    const what = [r.role, r.tool].filter(Boolean).join(' ')
    const text = preview(textOf(messages[r.index]), 60)
    lines.push(`  ${pad(`#${r.index}`, 5, true)}  ${pad(what, 26)} ${pad(num(r.tokens), 7, true)}  ${r.tier ? pad(r.tier, 19) : ''}${s.dim(JSON.stringify(text))}`)
  }
  lines.push('', s.bold('Steps'))
  const calls = analysis.messages.reduce((n, r) => n + r.calls.length, 0)
  lines.push(`  ${plural(report.steps, 'step')} (assistant messages with tool calls), ${plural(calls, 'tool call')}`)
  if (report.files) {
    const modified = report.modifiedFiles.length
    lines.push('', s.bold(`Files: ${plural(report.files.length, 'file')} touched, ${num(modified)} modified (FileTracker)`))
    for (const f of report.files) {
      const mark = f.modified ? s.cyan('modified') : s.dim('read    ')
      lines.push(`  ${mark}  ${f.path}  ${s.dim(`last ${f.lastOperation} at step ${f.lastAccessStep}`)}`)
    }
  } else {
    lines.push('', s.bold('Files'), `  ${s.dim('not available in this build (the addon has no FileTracker)')}`)
  }
  out.write(lines.join('\n') + '\n')
}

function plural(n, word) {
  return `${num(n)} ${word}${n === 1 ? '' : 's'}`
}

function statsCommand(ct, positional, options, out) {
  const [path] = need(positional, 'stats', 1)
  checkCommonOptions(options)
  const { name, parsed, analysis } = load(ct, path, { model: options.model, format: options.format })
  const report = statsReport(ct, name, analysis, options.top ?? 5)
  if (options.json) out.write(JSON.stringify(report, null, 2) + '\n')
  else printStats(report, analysis, parsed.messages, out, useColour(out))
  return report
}

// ---------------------------------------------------------------------------------------------
// trim

function trimOptions(options) {
  checkCommonOptions(options)
  if (options.budget === undefined) throw usageError('trim needs --budget N')
  // `--strategy placeholders` is `priority` with placeholders, as simulate and the adapters name
  // it; `--placeholders` stays its alias.
  const named = options.strategy ?? 'priority'
  const strategy = named === 'placeholders' ? 'priority' : named
  if (!STRATEGIES[strategy]) throw usageError(`--strategy must be one of ${STRATEGY_NAMES.join(', ')}, got "${named}"`)
  if (options.placeholders && strategy !== 'priority') {
    throw usageError(`--placeholders works with --strategy priority only (${strategy} ${strategy === 'truncate' ? 'always shortens' : 'only drops'})`)
  }
  if (options['drop-order'] !== undefined && strategy !== 'roles') throw usageError('--drop-order works with --strategy roles only')
  const dropOrder = options['drop-order'] === undefined ? DEFAULT_DROP_ORDER : options['drop-order'].split(',').map((r) => r.trim())
  for (const role of dropOrder) {
    if (!ROLES.includes(role)) throw usageError(`--drop-order takes roles among ${ROLES.join(', ')}, got "${role}"`)
  }
  const budgetSpec = parseBudget(options.budget)
  const placeholders = Boolean(options.placeholders) || named === 'placeholders'
  return { strategy, budgetSpec, placeholders, dropOrder, model: options.model, format: options.format }
}

/** Runs a trim and builds its report (what `--json` prints). */
function trim(ct, path, options) {
  const opts = trimOptions(options)
  const { name, parsed, analysis } = load(ct, path, opts)
  const budget = budgetOf(opts.budgetSpec, analysis.totalTokens)
  // A request body's system field (#0) goes with every request as it is: it counts towards the
  // budget, and the strategy trims the body's messages to what it leaves them.
  const fixed = parsed.systemField ? 1 : 0
  const tokens = analysis.messages.map((r) => r.tokens)
  const system = parsed.messages.slice(0, fixed)
  const systemTokens = total(analysis.messages.slice(0, fixed), 'tokens')
  let trimmed
  try {
    trimmed = runTrim(ct, parsed.messages.slice(fixed), { ...opts, budget: Math.max(0, budget - systemTokens), tokens: tokens.slice(fixed) })
  } catch (e) {
    if (typeof e.code !== 'string' || !e.code.startsWith('INVALID_')) throw e
    throw new CliError(`${name}: ${e.message}`)
  }
  const result = fixed
    ? {
        ...trimmed,
        messages: [...system, ...trimmed.messages],
        decisions: [{ decision: 'kept', tokensAfter: systemTokens, output: system[0] }, ...trimmed.decisions],
        totalTokens: ct.estimateTokens([...system, ...trimmed.messages], clean({ model: opts.model, format: opts.format })),
      }
    : trimmed
  const rows = analysis.messages.map((r, i) => {
    const d = result.decisions[i]
    return clean({
      index: r.index,
      role: r.role,
      tier: r.tier,
      priority: r.priority,
      tool: r.answers.join(' + ') || undefined,
      step: r.step,
      tokensBefore: r.tokens,
      tokensAfter: d.tokensAfter,
      decision: d.decision,
      reason: i < fixed ? "kept: the request's top-level system field, sent as it is with every request" : decisionReason(analysis.messages, result.decisions, i, opts.strategy) || undefined,
    })
  })
  const count = (decision) => rows.filter((r) => r.decision === decision).length
  const spec = STRATEGIES[opts.strategy]
  const report = {
    file: name,
    strategy: opts.strategy,
    placeholders: opts.placeholders,
    function: result.function,
    rule: opts.placeholders ? spec.placeholderRule : spec.rule,
    ...(opts.strategy === 'roles' ? { dropOrder: opts.dropOrder } : {}),
    budget,
    model: opts.model ?? null,
    format: opts.format ?? 'auto',
    systemField: Boolean(parsed.systemField),
    before: { messages: rows.length, tokens: analysis.totalTokens },
    after: { messages: result.messages.length, tokens: result.totalTokens },
    savedTokens: analysis.totalTokens - result.totalTokens,
    overBudget: result.totalTokens > budget,
    counts: { kept: count('kept'), placeholder: count('placeholder'), cut: count('cut'), dropped: count('dropped') },
    byPriority: analysis.classified
      ? tiers(ct)
          .map((t) => {
            const inTier = rows.filter((r) => r.priority === t.value)
            return { tier: t.name, priority: t.value, messages: inTier.length, before: total(inTier, 'tokensBefore'), after: total(inTier, 'tokensAfter') }
          })
          .filter((t) => t.messages > 0)
      : null,
    valid: result.problems.length === 0,
    problems: result.problems,
    output: null,
    html: null,
    messages: rows,
  }
  // What -o writes: the body's messages (its system field stays in the body), and the input
  // index of each, in input order.
  const written = { messages: trimmed.messages, inputIndex: trimmed.decisions.flatMap((d, i) => (d.decision === 'dropped' ? [] : [i])) }
  return { report, parsed, result, analysis, written }
}

function total(rows, key) {
  return rows.reduce((n, r) => n + r[key], 0)
}

/**
 * The rows `trim` prints: every message with `allRows`, else the ones the trim changed, each run
 * of two or more kept messages as one `{ kept, first, last }` entry.
 */
export function notableRows(messages, allRows) {
  if (allRows) return messages
  const rows = []
  let run = []
  const flush = () => {
    if (run.length > 1) rows.push({ kept: run.length, first: run[0].index, last: run[run.length - 1].index })
    else rows.push(...run)
    run = []
  }
  for (const m of messages) {
    if (m.decision === 'kept') run.push(m)
    else {
      flush()
      rows.push(m)
    }
  }
  flush()
  return rows
}

function printTrim(report, out, colour, { allRows = false } = {}) {
  const s = palette(colour)
  const lines = []
  const strategy = `${report.strategy}${report.placeholders ? ' with placeholders' : ''}${report.dropOrder ? ` (drop order ${report.dropOrder.join(', ')})` : ''}`
  lines.push(s.bold(`context-trim trim ${report.file}`))
  if (report.systemField) lines.push(`  #0 is the request's top-level system field: counted as a system message, and sent as it is (never trimmed)`)
  lines.push(`  strategy  ${strategy}: ${report.function}`)
  lines.push(`  rule      ${s.dim(report.rule)}`)
  lines.push(`  budget    ${num(report.budget)} tokens`)
  lines.push(`  before    ${pad(plural(report.before.messages, 'message'), 14)} ${pad(num(report.before.tokens), 8, true)} tokens`)
  const fits = report.overBudget ? s.red(`over budget by ${num(report.after.tokens - report.budget)}`) : s.green('within budget')
  lines.push(`  after     ${pad(plural(report.after.messages, 'message'), 14)} ${pad(num(report.after.tokens), 8, true)} tokens  saved ${num(report.savedTokens)} (${pct(report.savedTokens, report.before.tokens)}), ${fits}`)
  const { kept, placeholder, cut, dropped } = report.counts
  lines.push(`  result    ${s.green(`${num(kept)} kept`)} · ${s.yellow(`${num(placeholder)} placeholder${placeholder === 1 ? '' : 's'}`)} · ${s.yellow(`${num(cut)} cut`)} · ${s.red(`${num(dropped)} dropped`)}`)
  if (report.strategy === 'truncate' && report.overBudget) {
    lines.push(`  ${s.red('note')}      truncate never drops: it shortens old and long tool outputs whatever the budget, so the result stays over it (the adapters' and CacheAwareTrimmer's truncate also drop the oldest units; --strategy age drops them here)`)
  }
  if (report.byPriority) {
    lines.push('', s.bold('Tokens by priority tier, before → after'))
    if (report.byPriority.length === 0) lines.push(`  ${s.dim('(none)')}`)
    const max = Math.max(...report.byPriority.map((t) => t.before), 1)
    for (const t of report.byPriority) {
      const paint = s[TIER_COLOURS[t.tier]] ?? String
      const kept = bar(t.after, max, 30, colour)
      const gone = bar(t.before, max, 30, colour).slice(kept.length)
      lines.push(`  ${pad(t.tier, 19)} ${pad(num(t.before), 7, true)} → ${pad(num(t.after), 7, true)}  ${paint(kept)}${s.dim(colour ? gone.replace(/./gu, '░') : gone.replace(/#/g, '.'))}`)
    }
  }
  const rows = notableRows(report.messages, allRows)
  lines.push('', s.bold(rows === report.messages ? 'Messages' : 'Messages (each run of kept messages in one line; --all-rows prints every message)'))
  lines.push(s.dim(`  ${pad('#', 4, true)}  ${pad('role', 9)} ${pad('tier', 19)} ${pad('before', 7, true)} ${pad('after', 7, true)}  ${pad('decision', 11)} why`))
  for (const m of rows) {
    if (m.kept !== undefined) {
      lines.push(s.dim(`  ${pad('…', 4, true)}  ${num(m.kept)} kept (#${m.first}–#${m.last}) …`))
      continue
    }
    const decision = s[DECISION_COLOURS[m.decision]](pad(m.decision, 11))
    const after = m.decision === 'dropped' ? '-' : num(m.tokensAfter)
    lines.push(`  ${pad(m.index, 4, true)}  ${pad(m.role, 9)} ${pad(m.tier ?? '-', 19)} ${pad(num(m.tokensBefore), 7, true)} ${pad(after, 7, true)}  ${decision} ${s.dim(m.reason ?? '')}`)
  }
  lines.push('')
  if (report.valid) lines.push(`${s.green('valid')}: validateConversation finds no problem in the trimmed conversation`)
  else {
    lines.push(`${s.red('invalid')}: validateConversation finds ${plural(report.problems.length, 'problem')} in the trimmed conversation`)
    for (const p of report.problems) lines.push(`  messages[${p.index}] ${p.kind}: ${p.message}`)
  }
  if (report.output) lines.push(`wrote ${report.output}`)
  else lines.push(s.dim('nothing written (use -o out.json to write the trimmed conversation)'))
  if (report.html) lines.push(`wrote ${report.html}`)
  out.write(lines.join('\n') + '\n')
}

function trimCommand(ct, positional, options, out, err) {
  const [path] = need(positional, 'trim', 1)
  const { report, parsed, result, analysis, written } = trim(ct, path, options)
  const toStdout = options.output === '-'
  const reportStream = toStdout ? err : out
  if (options.output !== undefined) {
    const text = formatConversation(parsed, written.messages, { name: report.file, inputIndex: (i) => written.inputIndex[i] })
    if (toStdout) out.write(text)
    else writeOutput(options.output, text)
    report.output = toStdout ? '<stdout>' : options.output
  }
  if (options.html !== undefined) {
    writeOutput(options.html, renderHtmlReport(report, parsed.messages, result, analysis))
    report.html = options.html
  }
  if (options.json) reportStream.write(JSON.stringify(report, null, 2) + '\n')
  else printTrim(report, reportStream, useColour(reportStream), { allRows: options['all-rows'] })
  return report
}

// ---------------------------------------------------------------------------------------------
// demo

function demoCommand(ct, positional, options, out) {
  need(positional, 'demo', 0)
  const colour = useColour(out)
  const s = palette(colour)
  const sample = relative(process.cwd(), SAMPLE) || SAMPLE
  const { parsed, analysis } = load(ct, SAMPLE, {})
  const html = options.html ?? join(tmpdir(), 'context-trim-demo-report.html')
  const budget = '27000'
  const priority = typeof ct.trimWithPlaceholders === 'function'
  const trimArgs = priority ? { budget, strategy: 'priority', placeholders: true } : { budget, strategy: 'roles' }
  const { report, result } = trim(ct, SAMPLE, trimArgs)
  report.file = sample
  // The report is written before anything is printed, so that an unwritable --html fails alone.
  writeOutput(html, renderHtmlReport(report, parsed.messages, result, analysis))
  printStats(statsReport(ct, sample, analysis, 5), analysis, parsed.messages, out, colour)
  out.write('\n')
  printTrim(report, out, colour)
  const command = `context-trim trim ${sample} --budget ${budget}${priority ? ' --placeholders' : ' --strategy roles'}`
  out.write(
    [
      '',
      s.dim(`(the trim above is: ${command})`),
      s.dim(`Sample: ${sample}, a real OpenHands agent run (All-Hands-AI/OpenHands, MIT licence);`),
      s.dim(`its licence notice is in samples/transcripts/LICENSE-NOTICES.md.`),
      '',
      `${s.bold('HTML report of this trim:')} ${html}`,
      s.dim(`  open it in a browser${options.html === undefined ? '; npm run demo -- --html FILE writes it elsewhere' : ''}`),
      '',
    ].join('\n'),
  )
}

// ---------------------------------------------------------------------------------------------

function need(positional, command, n) {
  if (positional.length < n) throw usageError(`${command} needs a file (a path, or - for stdin)`)
  if (positional.length > n) throw usageError(`unexpected argument "${positional[n]}"`)
  return positional
}

/** The value of `--model` in raw arguments (simulate parses its own). */
function modelArgument(argv) {
  const i = argv.findIndex((a) => a === '--model' || a.startsWith('--model='))
  if (i === -1) return undefined
  return argv[i] === '--model' ? argv[i + 1] : argv[i].slice('--model='.length)
}

function warnOnModel(model, err) {
  const warning = model === undefined ? null : unknownModelWarning(model)
  if (warning) err.write(`context-trim: ${warning}\n`)
}

function version() {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
}

/** Runs the CLI on `argv`; returns the exit code. */
export function main(argv, { out = process.stdout, err = process.stderr } = {}) {
  try {
    // simulate parses its own options (cli/simulate.mjs).
    if (argv[0] === 'simulate' && !argv.includes('--help') && !argv.includes('-h')) {
      warnOnModel(modelArgument(argv), err)
      return runSimulate(argv.slice(1), { ct: addon(), out })
    }
    const { command, positional, options } = parseArguments(argv)
    // `context-trim help [command]`: the help covers every command.
    if (command === 'help') {
      if (positional.length > 1) throw usageError(`unexpected argument "${positional[1]}"`)
      const [topic] = positional
      if (topic !== undefined && !COMMANDS[topic] && topic !== 'simulate' && topic !== 'help') throw usageError(`unknown command "${topic}"`)
      out.write(HELP + '\n')
      return 0
    }
    if (options.help || (command === undefined && !options.version)) {
      ;(command === undefined && !options.help ? err : out).write((options.help ? HELP : USAGE) + '\n')
      return options.help ? 0 : 2
    }
    if (options.version) {
      out.write(`context-trim ${version()}\n`)
      return 0
    }
    if (!COMMANDS[command]) throw usageError(`unknown command "${command}"`)
    const ct = addon()
    warnOnModel(options.model, err)
    if (command === 'stats') statsCommand(ct, positional, options, out)
    else if (command === 'trim') {
      const report = trimCommand(ct, positional, options, out, err)
      if (options['fail-over-budget'] && report.overBudget) {
        err.write(`context-trim: over budget: ${num(report.after.tokens)} tokens after trimming, budget ${num(report.budget)} (--fail-over-budget)\n`)
        return 3
      }
    } else demoCommand(ct, positional, options, out)
    return 0
  } catch (e) {
    if (!(e instanceof CliError)) {
      err.write(`context-trim: internal error: ${e?.stack ?? e}\n`)
      return 1
    }
    err.write(`context-trim: ${e.message}\n`)
    return e.exitCode
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  // The CLI warns of an unknown --model in its own words (warnOnModel); the addon's
  // process warning for it would say it again.
  const emitWarning = process.emitWarning
  process.emitWarning = function (warning, options, ...rest) {
    if (options?.code === 'CONTEXT_TRIM_UNKNOWN_MODEL') return
    return emitWarning.call(this, warning, options, ...rest)
  }
  // `context-trim stats run.json | head`: the reader went away, which is not an error.
  process.stdout.on('error', (e) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0)
    throw e
  })
  process.exitCode = main(process.argv.slice(2))
}
