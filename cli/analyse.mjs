// What the CLI shows, computed with the addon: token counts, steps, priorities, files, and the
// decisions of a trim. Nothing here decides what to keep: the addon's functions do, and this
// module only reads their results (and the messages' own fields, to name tools and quote text).
import { CliError } from './input.mjs'
import { num } from './terminal.mjs'

/** The strategies of `context-trim trim`, each with the addon function(s) it runs. */
export const STRATEGIES = {
  priority: {
    functions: ['trimByPriority', 'trimWithPlaceholders'],
    rule: 'lowest priority tier first, oldest first within a tier, until the request fits: tool results are cut to head and tail, units dropped whole only when that is not enough; AGENT_INSTRUCTIONS, CURRENT_TASK and MODIFIED_FILES go last (shortened, then dropped); the system messages and the last message with its unit are never dropped (cut to head and tail only when they alone exceed the budget)',
    placeholderRule: 'lowest priority tier first, oldest first within a tier, until the request fits: tool results become placeholders in place (their calls stay; their head and tail instead where the budget has room for twice a placeholder), other units are dropped; AGENT_INSTRUCTIONS, CURRENT_TASK and MODIFIED_FILES go last; the system messages and the last message with its unit are never dropped',
  },
  age: {
    functions: ['trimByAge'],
    rule: 'units go oldest first until the request fits; system messages and the last message stay',
  },
  truncate: {
    functions: ['truncateOldToolOutputs'],
    rule: 'tool outputs older than 5 steps become placeholders and longer ones are cut to head and tail (the defaults of truncateOldToolOutputs); nothing is dropped and the budget is only checked',
  },
  roles: {
    functions: ['applyMaxContextTokens'],
    rule: 'units go by role in the drop order (first listed, first dropped), oldest first within a role, until the request fits; the first system message and the last message stay',
  },
}

export const DEFAULT_DROP_ORDER = ['assistant', 'user']

/** truncateOldToolOutputs' default maxTokensPerOutput: longer tool outputs are cut. */
const TRUNCATE_MAX_TOKENS = 2000

const INDEX = Symbol('context-trim.cli.index')

/** Throws the "not available in this build" error unless the addon exports `name`. */
export function requireFunction(ct, name, what) {
  if (typeof ct[name] !== 'function') {
    throw new CliError(`${what} is not available in this build (the addon has no ${name})`)
  }
}

/** Priority tier names by value, highest first, from the addon's `ContentPriority`. */
export function tiers(ct) {
  if (!ct.ContentPriority) return []
  return Object.entries(ct.ContentPriority)
    .filter(([, v]) => typeof v === 'number')
    .map(([name, value]) => ({ name, value }))
    .sort((a, b) => b.value - a.value)
}

/**
 * Makes the addon's message cache large enough for the whole input, `count` messages read from
 * `bytes` bytes of JSON. The CLI asks several questions about one conversation (tokens, tiers,
 * files, then the trim), and each call reads the messages; the cache keeps what one call read for
 * the next, within its bounds: a message seen once waits in probation, an eighth of the bounds,
 * in two generations of half of that each (4 MiB of parsed messages by default, about 3 MB of
 * JSON). A larger history would be read across the boundary again on every call, so the bounds
 * are raised to 16 times the input's (a parsed message weighs about 1.5 times its JSON, hence 32
 * times the bytes). A bound is not an allocation: the cache holds what was read, no more.
 */
export function holdInput(ct, count, bytes) {
  if (typeof ct.setMessageCacheCapacity !== 'function' || typeof ct.messageCacheStats !== 'function') return
  const { capacity, maxBytes } = ct.messageCacheStats()
  const share = 8 * 2
  if (capacity >= share * count && maxBytes >= share * 2 * bytes) return
  ct.setMessageCacheCapacity(Math.max(capacity, share * count), { maxBytes: Math.max(maxBytes, share * 2 * bytes) })
}

/**
 * Reads a conversation with the addon: per message its role, tokens, step, priority tier and
 * why, the tools it calls or answers, and a text preview. Throws the addon's error (with its
 * `code`) on invalid messages.
 */
export function analyse(ct, messages, { model, format } = {}) {
  const tokenOptions = clean({ model, format })
  const totalTokens = ct.estimateTokens(messages, tokenOptions)
  const tools = toolsOf(messages)
  const tierNames = new Map(tiers(ct).map((t) => [t.value, t.name]))
  // One pass for every message's tier, tokens and step: classifyMessage with { messages, index }
  // analyses the whole conversation on each call, and a call per message (estimateMessageTokens)
  // costs a crossing of the boundary each.
  const classify = typeof ct.classifyMessages === 'function'
  const classes = classify ? ct.classifyMessages(messages, tokenOptions) : null
  const steps = classes ? null : ct.tagMessagesWithStep(messages).map((t) => t.step)
  const rows = messages.map((message, index) => {
    const c = classes?.[index]
    const row = {
      index,
      role: message.role,
      tokens: c ? c.tokens : ct.estimateMessageTokens(message, tokenOptions),
      step: c ? c.step : steps[index],
      calls: tools[index].calls,
      answers: tools[index].answers,
      answered: tools[index].answered,
    }
    if (c) {
      row.priority = c.priority
      row.tier = tierNames.get(c.priority) ?? String(c.priority)
      row.reason = reasonOf(c.metadata, row)
      if (c.metadata.supersededBy !== undefined) row.supersededBy = c.metadata.supersededBy
      if (c.metadata.filePath !== undefined) row.filePath = c.metadata.filePath
    }
    return row
  })
  return {
    messages: rows,
    totalTokens,
    steps: ct.countSteps(messages),
    classified: classify,
    files: filesOf(ct, messages),
  }
}

/** The files the session touched, as the addon's FileTracker sees them (null if unavailable). */
function filesOf(ct, messages) {
  if (typeof ct.FileTracker !== 'function') return null
  const tracker = ct.FileTracker.fromMessages(messages, { now: () => 0 })
  const current = ct.countSteps(messages)
  return tracker.getRecentFiles(current, current).map((f) => ({
    path: f.path,
    modified: f.wasModified,
    lastOperation: f.operation,
    lastAccessStep: f.lastAccessStep,
  }))
}

/** Why a message has its priority, in words, from the addon's classification metadata. */
function reasonOf(meta, row) {
  const tool = row.answers.length ? `${row.answers.join(', ')} result` : row.calls.length ? `calls ${unique(row.calls).join(', ')}` : ''
  const age = meta.age === undefined ? '' : `${num(meta.age)} step${meta.age === 1 ? '' : 's'} old`
  if (meta.isSummarized) return 'a summary'
  if (meta.isSystem) return 'system prompt'
  if (meta.isAgentInstruction) return 'agent instructions'
  if (meta.isCurrentTask) return 'the current task'
  if (meta.filePath && meta.wasModified) return join(tool, `file ${meta.filePath} was modified in this session`)
  if (meta.filePath) return join(tool, `file ${meta.filePath}, not modified`, age)
  return join(tool, age)
}

/**
 * Why a trim decided what it did for one message, naming the decision: `rows` are the
 * analysis rows, `decisions` what {@link runTrim} returned, `strategy` the strategy's name.
 * For the priority strategies: the system prompt and the last message's unit are always kept;
 * a result superseded by a newer one is stale ("dropped: stale result of src/a.ts, superseded by
 * #31"); a call goes with its results; anything else goes by its tier, lowest first.
 */
export function decisionReason(rows, decisions, i, strategy) {
  const r = rows[i]
  const d = decisions[i]
  const last = rows.length - 1
  const unitOf = (k) => {
    // A result's unit starts at the nearest earlier message that calls tools.
    if (rows[k].answers.length === 0) return k
    for (let j = k - 1; j >= 0; j--) if (rows[j].calls.length > 0) return j
    return k
  }
  const inLastUnit = unitOf(i) === unitOf(last)
  if (d.decision === 'cut' && strategy === 'truncate') {
    return `cut: ${num(d.output._cutTokens)} tokens cut from the middle, as the output is longer than maxTokensPerOutput (${num(TRUNCATE_MAX_TOKENS)} tokens, the default of truncateOldToolOutputs; the budget plays no part)`
  }
  if (d.decision === 'cut') return `cut: ${num(d.output._cutTokens)} tokens cut from the middle, so that the unit fits`
  if (strategy !== 'priority') return [d.decision === 'kept' ? 'kept' : d.decision, r.reason, d.note].filter(Boolean).join(': ')
  if (d.decision === 'kept') {
    if (r.role === 'system' || r.role === 'developer') return 'kept: the system prompt is always kept'
    if (i === last) return 'kept: the last message is always kept'
    if (inLastUnit) return 'kept: part of the last message\'s tool call, always kept'
    return `kept: ${r.tier ?? 'kept'}${r.reason ? ` (${r.reason})` : ''}, within the budget`
  }
  const superseded = r.supersededBy !== undefined ? r.supersededBy : resultsOf(rows, i).map((k) => rows[k].supersededBy).find((s) => s !== undefined)
  const what = d.decision === 'dropped' ? 'dropped' : 'shortened to a placeholder'
  if (superseded !== undefined) {
    // The path from the classification itself: the reason's words end it with a comma.
    const path = r.filePath ?? resultsOf(rows, i).map((k) => rows[k].filePath).find(Boolean)
    return `${what}: stale ${r.calls.length ? 'call and result' : 'result'}${path ? ` of ${path}` : ''}, superseded by #${superseded}`
  }
  if (r.calls.length > 0 && d.decision === 'dropped') return `dropped with its result${resultsOf(rows, i).length === 1 ? '' : 's'}: ${r.tier ?? ''}${r.reason ? ` (${r.reason})` : ''}`
  return `${what} to fit the budget (lowest tier first, oldest first): ${r.tier ?? ''}${r.reason ? ` (${r.reason})` : ''}${d.note ? `; ${d.note}` : ''}`
}

/** The results answering the calls of message `i` (the messages after it that answer, up to the next non-result). */
function resultsOf(rows, i) {
  const out = []
  if (rows[i].calls.length === 0) return out
  for (let k = i + 1; k < rows.length && rows[k].answers.length > 0; k++) out.push(k)
  return out
}

/**
 * Runs a strategy of the addon and says, per input message, what happened to it: `kept` (the
 * very object came back), `cut` (a copy with its content cut to head and tail, `_cutTokens`,
 * came back in its place), `placeholder` (a copy with other new content: a placeholder) or
 * `dropped`. `tokens`, when given, are the input messages' tokens (the analysis rows'), which a
 * kept message still has; otherwise each returned message is counted on its own.
 */
export function runTrim(ct, messages, opts) {
  const { strategy, budget, placeholders, model, format, dropOrder, tokens } = opts
  const spec = STRATEGIES[strategy]
  const fn = strategy === 'priority' ? (placeholders ? 'trimWithPlaceholders' : 'trimByPriority') : spec.functions[0]
  requireFunction(ct, fn, `--strategy ${strategy}${placeholders ? ' --placeholders' : ''}`)
  // Tag every message with its index: kept objects come back as they are, and placeholders are
  // spread copies, which keep symbol keys; JSON.stringify writes neither the tag nor the copy's.
  messages.forEach((m, i) => {
    if (m !== null && typeof m === 'object') m[INDEX] = i
  })
  const tokenOptions = clean({ model, format })
  let out
  if (strategy === 'priority') out = ct[fn](messages, { targetTokens: budget, ...tokenOptions }).messages
  else if (strategy === 'age') out = ct.trimByAge(messages, budget, tokenOptions)
  else if (strategy === 'truncate') out = ct.truncateOldToolOutputs(messages, tokenOptions)
  else out = ct.applyMaxContextTokens(messages, budget, { dropOrder, keepFirstSystem: true, ...tokenOptions })
  const decisions = messages.map(() => ({ decision: 'dropped', tokensAfter: 0 }))
  for (const o of out) {
    const i = o[INDEX]
    const kept = o === messages[i]
    decisions[i] = {
      decision: kept ? 'kept' : typeof o._cutTokens === 'number' ? 'cut' : 'placeholder',
      tokensAfter: kept && tokens ? tokens[i] : ct.estimateMessageTokens(o, tokenOptions),
      output: o,
      note: kept ? undefined : placeholderNote(o),
    }
  }
  return {
    function: fn,
    messages: out,
    decisions,
    totalTokens: ct.estimateTokens(out, tokenOptions),
    problems: ct.validateConversation(out, clean({ format })),
  }
}

/** What the addon's metadata on a placeholder copy says about it. */
function placeholderNote(o) {
  if (typeof o._truncatedAt === 'number') return `${num(o._truncatedAt)} steps old, older than maxAge`
  if (typeof o._cutTokens === 'number') return `too long: ${num(o._cutTokens)} tokens cut from the middle`
  if (typeof o._originalTokens === 'number') return `was ${num(o._originalTokens)} tokens`
  return undefined
}

/**
 * The tools each message calls and answers, read from the fields of every supported format:
 * OpenAI `tool_calls`/`tool_call_id`, Anthropic `tool_use`/`tool_result` blocks, AI SDK
 * `tool-call`/`tool-result` parts. A result answers the latest earlier call with its id:
 * `answers` are the names of the tools a message answers, once each, and `answered` how many
 * calls it answers (a message may answer several calls in parallel, of one tool or several).
 */
function toolsOf(messages) {
  const names = new Map()
  return messages.map((m) => {
    const calls = []
    const answers = []
    const call = (id, name) => {
      if (typeof name !== 'string') return
      calls.push(name)
      if (typeof id === 'string') names.set(id, name)
    }
    const answer = (id, name) => {
      const n = typeof name === 'string' ? name : names.get(id)
      if (n !== undefined) answers.push(n)
    }
    if (m === null || typeof m !== 'object') return { calls, answers, answered: 0 }
    if (Array.isArray(m.tool_calls)) for (const c of m.tool_calls) call(c?.id, c?.function?.name)
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') answer(m.tool_call_id)
    if (Array.isArray(m.content)) {
      for (const p of m.content) {
        if (p?.type === 'tool_use') call(p.id, p.name)
        else if (p?.type === 'tool-call') call(p.toolCallId, p.toolName)
        else if (p?.type === 'tool_result') answer(p.tool_use_id)
        else if (p?.type === 'tool-result') answer(p.toolCallId, p.toolName)
      }
    }
    return { calls, answers: unique(answers), answered: answers.length }
  })
}

/** The readable text of a message (content and tool calls), for previews and the HTML report. */
export function textOf(m) {
  if (m === null || typeof m !== 'object') return ''
  const parts = []
  const add = (v) => {
    if (typeof v === 'string') parts.push(v)
    else if (Array.isArray(v)) v.forEach(part)
    else if (v !== undefined && v !== null) parts.push(JSON.stringify(v))
  }
  const part = (p) => {
    if (typeof p === 'string') return parts.push(p)
    if (p === null || typeof p !== 'object') return
    if (typeof p.text === 'string') parts.push(p.text)
    else if (typeof p.thinking === 'string') parts.push(p.thinking)
    else if (p.type === 'tool_use' || p.type === 'tool-call') parts.push(`→ ${p.name ?? p.toolName}(${JSON.stringify(p.input)})`)
    else if (p.type === 'tool_result') add(p.content)
    else if (p.type === 'tool-result') add(p.output?.value)
    else if (p.type) parts.push(`[${p.type}]`)
  }
  add(m.content)
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls) {
      const args = c?.function?.arguments
      parts.push(`→ ${c?.function?.name}(${typeof args === 'string' ? args : JSON.stringify(args ?? '')})`)
    }
  }
  return parts.join('\n')
}

/** Totals by a key of the rows: `[{ key, messages, tokens }]`, largest first. */
export function totalsBy(rows, keyOf, tokensOf = (r) => r.tokens) {
  const totals = new Map()
  for (const r of rows) {
    for (const key of [keyOf(r)].flat()) {
      if (key === undefined) continue
      const t = totals.get(key) ?? { key, messages: 0, tokens: 0 }
      t.messages++
      t.tokens += tokensOf(r)
      totals.set(key, t)
    }
  }
  return [...totals.values()].sort((a, b) => b.tokens - a.tokens || String(a.key).localeCompare(String(b.key)))
}

export function unique(list) {
  return [...new Set(list)]
}

function join(...parts) {
  return parts.filter(Boolean).join(', ')
}

/** Options without their undefined fields. */
export function clean(options) {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined))
}
