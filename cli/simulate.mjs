// `context-trim simulate <file>`: replays a session turn by turn under the trimming policies and
// prints what each costs with a provider's prompt cache (a table, terminal plots, and an HTML
// page with inline SVG charts). The addon's `simulate` does the work; this module reads
// arguments and renders.
import { CliError, displayName, inInputTerms, parseConversation, readInput, withSystemField, writeOutput } from './input.mjs'
import { num, pct } from './terminal.mjs'

export const SIMULATE_USAGE = `context-trim simulate <file> [--window N] [--high F] [--low F] [--clear-at-least N]
                   [--strategy priority|placeholders|truncate|roles|age] [--pricing anthropic|openai]
                   [--price-input X] [--price-cache-read X] [--price-cache-write X]
                   [--every-turn-budget N] [--policies none,every-turn,high-low,dedup]
                   [--model M] [--format F] [--turns] [--json] [--html FILE]`

export const SIMULATE_HELP = `  simulate  replays <file> turn by turn (each assistant message answers every message before
            it) under four policies: none (everything sent; turns over the window are marked),
            every-turn (the strategy trims to the window on every turn, the seeds' way),
            high-low (CacheAwareTrimmer: the same decisions until the request crosses the
            high-water mark, then a trim down to the low-water mark) and dedup (only
            deduplicateToolResults, from 75% of the window). Per turn: tokens sent,
            tokens read from the provider's cache (the leading messages the previous request
            sent identically), tokens written, and the cost. A policy that sends a request
            over the window (refused by the provider) is marked invalid, without a cost`

export const SIMULATE_OPTIONS = `simulate options:
  --window N            the context window in tokens (default 128000)
  --high F, --low F     the water marks, fractions of the window (default 0.85 and 0.6)
  --clear-at-least N    the fewest tokens a trim must free (default 5% of the window)
  --strategy S          priority (default), placeholders, truncate, roles or age
  --pricing P           anthropic (default: $3 input, cache read 0.1x, cache write 1.25x per
                        million tokens) or openai ($2.50 input, cache read 0.5x, no write charge)
  --price-input X, --price-cache-read X, --price-cache-write X
                        override one price of the table, in dollars per million tokens; the
                        cost is cache reads at the cache-read price plus the rest at the
                        cache-write price, and the input price gives only the cost without a
                        cache (the "without cache" column; costWithoutCache in --json)
  --every-turn-budget N the budget every-turn trims to (default: the window)
  --policies LIST       comma-separated, in order (default none,every-turn,high-low,dedup)
  --turns               also prints the table of every turn
  --json                prints the addon's result as JSON
  --html FILE           writes a self-contained HTML page with the table and SVG charts
  (--model and --format as above)`

const OPTIONS = {
  window: 'positive',
  high: 'number',
  low: 'number',
  'clear-at-least': 'integer',
  strategy: 'string',
  pricing: 'string',
  'price-input': 'number',
  'price-cache-read': 'number',
  'price-cache-write': 'number',
  'every-turn-budget': 'positive',
  policies: 'string',
  model: 'string',
  format: 'string',
  turns: 'flag',
  json: 'flag',
  html: 'string',
}

/** The shipped price tables, as the addon's `simulate` knows them (for `--price-*` overrides). */
const PRICINGS = {
  anthropic: { input: 3, cacheRead: 0.3, cacheWrite: 3.75 },
  openai: { input: 2.5, cacheRead: 1.25, cacheWrite: 2.5 },
}

/** The command-line flag of each addon option, to name the flag in the addon's errors. */
const FLAGS = {
  contextWindow: '--window',
  highWater: '--high',
  lowWater: '--low',
  clearAtLeast: '--clear-at-least',
  strategy: '--strategy',
  everyTurnBudget: '--every-turn-budget',
  policies: '--policies',
  model: '--model',
  encoding: '--model',
  format: '--format',
  'pricing.input': '--price-input',
  'pricing.cacheRead': '--price-cache-read',
  'pricing.cacheWrite': '--price-cache-write',
}

/** An addon message with the options it names (`highWater = 0.85`) named by their flags (`--high = 0.85`). */
function inFlagTerms(message) {
  return message.replace(/\b(contextWindow|highWater|lowWater|clearAtLeast|everyTurnBudget)\b/g, (name) => FLAGS[name])
}

/** A usage error: exit status 2. */
function usageError(message) {
  return new CliError(`${message} (see context-trim --help)`, 2)
}

/** Parses the arguments after `simulate`: the file and the options. */
export function parseSimulateArguments(argv) {
  const options = {}
  const positional = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '-' || !arg.startsWith('--')) {
      positional.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = arg.slice(2, eq === -1 ? undefined : eq)
    const kind = OPTIONS[name]
    if (kind === undefined) throw usageError(`unknown option ${arg} for simulate`)
    if (kind === 'flag') {
      if (eq !== -1) throw usageError(`--${name} takes no value`)
      options[name] = true
      continue
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1)
    if (value === undefined) throw usageError(`--${name} needs a value`)
    if (kind === 'integer' && !/^[0-9]+$/.test(value)) throw usageError(`--${name} must be a non-negative integer, got "${value}"`)
    // The addon's own rule and words for a window or a budget: 0 is refused too.
    if (kind === 'positive' && !/^0*[1-9][0-9]*$/.test(value)) throw usageError(`--${name} must be an integer of at least 1, got "${value}"`)
    if (kind === 'number' && !/^[0-9]*\.?[0-9]+$/.test(value)) throw usageError(`--${name} must be a non-negative number, got "${value}"`)
    options[name] = kind === 'string' ? value : Number(value)
  }
  if (positional.length !== 1) throw usageError(`simulate takes one file, got ${positional.length}`)
  return { file: positional[0], options }
}

/** The addon options for parsed command-line options. */
export function simulateOptions(options) {
  const name = options.pricing ?? 'anthropic'
  const table = PRICINGS[name]
  if (!table) throw usageError(`--pricing must be one of ${Object.keys(PRICINGS).join(', ')}, got "${name}"`)
  const overrides = { input: options['price-input'], cacheRead: options['price-cache-read'], cacheWrite: options['price-cache-write'] }
  const pricing = Object.values(overrides).some((v) => v !== undefined)
    ? Object.fromEntries(Object.entries(table).map(([k, v]) => [k, overrides[k] ?? v]))
    : name
  return {
    contextWindow: options.window ?? 128_000,
    highWater: options.high,
    lowWater: options.low,
    clearAtLeast: options['clear-at-least'],
    strategy: options.strategy,
    pricing,
    everyTurnBudget: options['every-turn-budget'],
    policies: options.policies?.split(',').map((p) => p.trim()),
    model: options.model,
    format: options.format,
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering

const dollars = (n) => `$${n.toFixed(n < 10 ? 3 : 2)}`
const SPARKS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█']

/** One character per column: `values` bucketed into `width` columns (the bucket's `pick`). */
export function sparkline(values, max, width, pick = Math.max) {
  if (values.length === 0) return ''
  const columns = Math.min(width, values.length)
  let line = ''
  for (let c = 0; c < columns; c++) {
    const bucket = values.slice(Math.floor((c * values.length) / columns), Math.floor(((c + 1) * values.length) / columns))
    const v = pick(...bucket)
    line += max > 0 ? SPARKS[Math.min(SPARKS.length - 1, Math.floor((v / max) * SPARKS.length))] : SPARKS[0]
  }
  return line
}

/**
 * The summary rows (one per policy), as data. A policy that sends a request over the window is
 * not a way to run the conversation: the provider refuses that request. Its row is `valid:
 * false`, with `refusedTurns`, and its costs (what the requests would have cost had they been
 * accepted) are not compared: `vsEveryTurn` is null for it, and the reports print no cost.
 */
export function summaryRows(result) {
  const everyTurn = result.policies.find((p) => p.policy === 'every-turn')
  const comparable = everyTurn && everyTurn.totals.cost > 0 && everyTurn.totals.overWindowTurns === 0
  return result.policies.map((p) => ({
    policy: p.policy,
    valid: p.totals.overWindowTurns === 0,
    refusedTurns: p.totals.overWindowTurns,
    inputTokens: p.totals.inputTokens,
    cachedTokens: p.totals.cachedTokens,
    writtenTokens: p.totals.writtenTokens,
    cachedFraction: p.totals.cachedFraction,
    cost: p.totals.cost,
    costWithoutCache: p.totals.costWithoutCache,
    vsEveryTurn: comparable && p.totals.overWindowTurns === 0 ? p.totals.cost / everyTurn.totals.cost : null,
    overWindowTurns: p.totals.overWindowTurns,
    replans: p.totals.replans,
    maxInputTokens: p.totals.maxInputTokens,
  }))
}

/** The terminal report. */
export function renderText(result, { file, showTurns = false, width = 60 } = {}) {
  const lines = []
  const { pricing } = result
  lines.push(`context-trim simulate ${file}`)
  lines.push(`  ${num(result.turns)} turns · window ${num(result.contextWindow)} tokens · strategy ${result.strategy}`)
  lines.push(`  prices per million tokens: input $${pricing.input}, cache read $${pricing.cacheRead}, cache write $${pricing.cacheWrite}`)
  lines.push('')
  const header = ['policy', 'tokens sent', 'cached', 'written', 'cached %', 'cost', 'vs every-turn', 'over window', 'trims', 'largest', 'without cache']
  const summary = summaryRows(result)
  lines.push(...table(header, summary.map((r) => summaryCells(r, 'x'))))
  const refusal = refusalNote(summary, result.contextWindow)
  if (refusal) lines.push('', refusal)
  const label = (p) => p.policy.padEnd(11)
  const maxTokens = Math.max(result.contextWindow, ...result.policies.map((p) => p.totals.maxInputTokens))
  lines.push('', `Tokens sent per turn (▁ 0 … █ ${num(maxTokens)}; the window is ${num(result.contextWindow)}, ! marks turns over it)`)
  for (const p of result.policies) {
    const spark = sparkline(p.turns.map((t) => t.inputTokens), maxTokens, width)
    const over = sparkline(p.turns.map((t) => (t.overWindow ? 1 : 0)), 1, width)
    lines.push(`  ${label(p)} ${[...spark].map((ch, i) => (over[i] === '█' ? '!' : ch)).join('')}`)
  }
  lines.push('', `Share of each request read from the cache (▁ 0% … █ 100%)`)
  for (const p of result.policies) {
    lines.push(`  ${label(p)} ${sparkline(p.turns.map((t) => (t.inputTokens ? t.cachedTokens / t.inputTokens : 0)), 1, width, Math.min)}`)
  }
  const maxCost = Math.max(...result.policies.map((p) => p.totals.cost), 0)
  lines.push('', `Cumulative cost (▁ $0 … █ ${dollars(maxCost)})`)
  for (const p of result.policies) {
    const total = p.totals.overWindowTurns === 0 ? dollars(p.totals.cost) : `invalid (${num(p.totals.overWindowTurns)} refused)`
    lines.push(`  ${label(p)} ${sparkline(p.turns.map((t) => t.cumulativeCost), maxCost, width)} ${total}`)
  }
  if (showTurns) {
    lines.push('', 'Every turn')
    const head = ['turn', 'reply']
    for (const p of result.policies) head.push(`${p.policy} sent`, 'cached', 'cost')
    const body = []
    for (let i = 0; i < result.turns; i++) {
      const row = [String(i + 1), `#${result.policies[0]?.turns[i]?.replyIndex ?? ''}`]
      for (const p of result.policies) {
        const t = p.turns[i]
        row.push(`${num(t.inputTokens)}${t.overWindow ? '!' : ''}${t.decision && t.decision !== 'kept' ? ` ${t.decision}` : ''}`, num(t.cachedTokens), dollars(t.cost))
      }
      body.push(row)
    }
    lines.push(...table(head, body))
  }
  return lines.join('\n') + '\n'
}

/** The cells of a summary row, as the table and the page show them (`times` marks the ratio). */
function summaryCells(r, times) {
  return [
    r.policy,
    num(r.inputTokens),
    num(r.cachedTokens),
    num(r.writtenTokens),
    pct(r.cachedFraction, 1),
    r.valid ? dollars(r.cost) : 'invalid',
    r.vsEveryTurn === null ? '-' : `${r.vsEveryTurn.toFixed(2)}${times}`,
    r.valid ? 'never' : `${num(r.refusedTurns)} refused`,
    num(r.replans),
    num(r.maxInputTokens),
    r.valid ? dollars(r.costWithoutCache) : 'invalid',
  ]
}

/** Why some rows have no cost: the policies whose requests went over the window (null if none). */
export function refusalNote(rows, contextWindow) {
  const refused = rows.filter((r) => !r.valid)
  if (refused.length === 0) return null
  const which = refused.map((r) => `${r.policy} (${num(r.refusedTurns)} turn${r.refusedTurns === 1 ? '' : 's'})`).join(', ')
  return (
    `invalid: ${which} sent requests over the ${num(contextWindow)}-token window, which the provider refuses: ` +
    `such a policy cannot run this conversation, so its cost (what the requests would cost if they were accepted) is not shown or compared (--json has it, with overWindowTurns)`
  )
}

function table(header, rows) {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)))
  const line = (cells) => '  ' + cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)]
}

const COLOURS = { none: '#9e9e9e', 'every-turn': '#d9534f', 'high-low': '#2e7d32', dedup: '#1565c0' }
const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c])

/**
 * The ticks of an axis from 0 to at least `max`: round steps (1, 2 or 5 times a power of ten),
 * about five of them, the last at or above `max`.
 */
export function roundTicks(max) {
  if (!(max > 0)) return [0, 1]
  const raw = max / 5
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw * (1 - 1e-9))
  const count = Math.ceil(max / step - 1e-9)
  // Each tick from its index, so that 0.1-steps do not accumulate 0.30000000000000004.
  return Array.from({ length: count + 1 }, (_, k) => Number((k * step).toPrecision(12)))
}

/** An SVG line chart: one polyline per series, an optional horizontal reference line; the y axis has round ticks. */
export function svgChart({ title, series, max: highest, format, reference }) {
  const w = 720
  const h = 260
  const left = 70
  const bottom = 30
  const top = 24
  const plotW = w - left - 10
  const plotH = h - top - bottom
  const ticks = roundTicks(highest)
  const max = ticks[ticks.length - 1]
  const n = Math.max(...series.map((s) => s.values.length), 1)
  const x = (i) => left + (n === 1 ? 0 : (i / (n - 1)) * plotW)
  const y = (v) => top + plotH - (max > 0 ? (v / max) * plotH : 0)
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${escape(title)}">`]
  parts.push(`<text x="${left}" y="16" font-size="13" font-weight="bold">${escape(title)}</text>`)
  for (const v of ticks) {
    parts.push(`<line x1="${left}" x2="${w - 10}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e0e0e0"/>`)
    parts.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" font-size="11" text-anchor="end">${escape(format(v))}</text>`)
  }
  parts.push(`<text x="${left + plotW / 2}" y="${h - 6}" font-size="11" text-anchor="middle">turn (1 … ${n})</text>`)
  if (reference) {
    parts.push(`<line x1="${left}" x2="${w - 10}" y1="${y(reference.value).toFixed(1)}" y2="${y(reference.value).toFixed(1)}" stroke="#000" stroke-dasharray="5 4"/>`)
    parts.push(`<text x="${w - 12}" y="${(y(reference.value) - 4).toFixed(1)}" font-size="11" text-anchor="end">${escape(reference.label)}</text>`)
  }
  for (const s of series) {
    const points = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ')
    parts.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="1.5" points="${points}"><title>${escape(s.name)}</title></polyline>`)
  }
  parts.push('</svg>')
  return parts.join('')
}

/** The HTML page: the summary table and three charts, self-contained. */
export function renderHtml(result, { file }) {
  const colour = (p) => COLOURS[p.policy] ?? '#1565c0'
  const maxTokens = Math.max(result.contextWindow, ...result.policies.map((p) => p.totals.maxInputTokens))
  const maxCost = Math.max(...result.policies.map((p) => p.totals.cost), 0)
  const tokens = svgChart({
    title: 'Tokens sent per turn',
    series: result.policies.map((p) => ({ name: p.policy, colour: colour(p), values: p.turns.map((t) => t.inputTokens) })),
    max: maxTokens,
    format: (v) => num(v),
    reference: { value: result.contextWindow, label: `window ${num(result.contextWindow)}` },
  })
  const cached = svgChart({
    title: 'Share of each request read from the cache',
    series: result.policies.map((p) => ({ name: p.policy, colour: colour(p), values: p.turns.map((t) => (t.inputTokens ? t.cachedTokens / t.inputTokens : 0)) })),
    max: 1,
    format: (v) => `${Math.round(100 * v)}%`,
  })
  const cost = svgChart({
    title: 'Cumulative cost',
    series: result.policies.map((p) => ({ name: p.policy, colour: colour(p), values: p.turns.map((t) => t.cumulativeCost) })),
    max: maxCost,
    // Cents, or as many decimals as the ticks' step needs ($0.005 steps for a cheap session).
    format: (v) => `$${v.toFixed(Math.max(2, -Math.floor(Math.log10(roundTicks(maxCost)[1]))))}`,
  })
  const summary = summaryRows(result)
  const rows = summary
    .map((r) => {
      const [policy, ...cells] = summaryCells(r, '×')
      return `<tr><td><span class="key" style="background:${COLOURS[r.policy] ?? '#1565c0'}"></span>${escape(policy)}</td>${cells.map((c) => `<td>${escape(c)}</td>`).join('')}</tr>`
    })
    .join('\n')
  const refusal = refusalNote(summary, result.contextWindow)
  const { pricing } = result
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>context-trim simulate ${escape(file)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222 }
table { border-collapse: collapse; margin: 12px 0 24px }
th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap }
th:first-child, td:first-child { text-align: left }
.key { display: inline-block; width: 10px; height: 10px; margin-right: 6px }
svg { display: block; margin: 8px 0 24px }
</style></head><body>
<h1>context-trim simulate</h1>
<p>${escape(file)}: ${num(result.turns)} turns, window ${num(result.contextWindow)} tokens, strategy <code>${escape(result.strategy)}</code>.
Prices per million tokens: input $${pricing.input}, cache read $${pricing.cacheRead}, cache write $${pricing.cacheWrite}.</p>
<table><thead><tr><th>policy</th><th>tokens sent</th><th>cached</th><th>written</th><th>cached %</th><th>cost</th><th>vs every-turn</th><th>over window</th><th>trims</th><th>largest</th><th>without cache</th></tr></thead>
<tbody>
${rows}
</tbody></table>
${refusal ? `<p class="invalid">${escape(refusal)}</p>` : ''}
${tokens}
${cached}
${cost}
<p>Cached tokens are the leading messages a request sends exactly as the previous request of the same policy did; see docs/prompt-caching-policy.md for the model and its limits.</p>
</body></html>
`
}

/**
 * When no policy changed anything and every request fit the window (the conversation never came
 * near it), the four rows are identical: says so, and suggests a window at half the largest
 * request, where they differ. A conversation over the window gets no hint: a smaller window
 * would not help, and the rows already show the turns over it.
 */
export function untrimmedHint(result) {
  const none = result.policies.find((p) => p.policy === 'none')
  const largest = Math.max(0, ...result.policies.map((p) => p.totals.maxInputTokens))
  const changed = result.policies.some((p) => p.totals.replans > 0 || p.totals.inputTokens !== none?.totals.inputTokens)
  if (changed || largest === 0 || largest > result.contextWindow) return null
  const suggestion = Math.max(1, Math.floor(largest / 2))
  return (
    `\nNothing was trimmed: the largest request (${num(largest)} tokens) is ${pct(largest, result.contextWindow)} of the ${num(result.contextWindow)}-token window, ` +
    `so every policy sent the whole conversation.\nTo compare the policies on this conversation, try a smaller window, e.g. --window ${suggestion} (half its largest request).\n`
  )
}

/**
 * Runs `simulate` with the arguments after the command name: `ct` is the addon, `out` the stream
 * the report goes to. Returns the exit status; throws a `CliError` (status 2 for bad arguments or
 * option values, 1 for unreadable or invalid input).
 */
export function runSimulate(argv, { ct, out = process.stdout }) {
  const { file, options } = parseSimulateArguments(argv)
  const name = displayName(file)
  // A request body's top-level system field is the first message of every request (#0).
  const parsed = withSystemField(parseConversation(readInput(file), name), name)
  const { messages } = parsed
  let result
  try {
    result = ct.simulate(messages, simulateOptions(options))
  } catch (e) {
    if (e.code === 'INVALID_OPTION') {
      // An option's value the addon refuses: a usage error naming the flag.
      const m = /^([A-Za-z.]+)(?:\[\d+\])?: (.*)$/s.exec(e.message)
      const flag = m && FLAGS[m[1]]
      throw usageError(flag ? `${flag} ${inFlagTerms(m[2])}` : inFlagTerms(e.message))
    }
    if (typeof e.code === 'string' && e.code.startsWith('INVALID_')) throw new CliError(`${name}: ${inInputTerms(parsed, e.message)}`)
    throw e
  }
  if (options.html) writeOutput(options.html, renderHtml(result, { file: name }))
  if (options.json) out.write(JSON.stringify(result, null, 2) + '\n')
  else {
    out.write(renderText(result, { file: name, showTurns: options.turns }))
    const hint = untrimmedHint(result)
    if (hint) out.write(hint)
    if (options.html) out.write(`wrote ${options.html}\n`)
  }
  return 0
}
