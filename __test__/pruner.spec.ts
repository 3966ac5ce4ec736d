import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { join } from 'node:path'

import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { type CodedError, ct, snapshot, transcript, transcripts } from './helpers.js'
import type { ContextPrunerOptions, Message } from '../index.js'

const addonPath = createRequire(import.meta.url).resolve('../index.js')

const { ContextPruner } = ct

const made: string[] = []

/** A fresh directory for one test's archive, removed after the run. */
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'context-trim-pruner-'))
  made.push(d)
  return d
}

test.after.always(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true })
})

/** A clock that starts at 2026-02-12T14:30:00Z and advances one minute per call. */
function clock(): () => number {
  let t = Date.UTC(2026, 1, 12, 14, 30)
  return () => {
    const now = t
    t += 60_000
    return now
  }
}

function pruner(options: ContextPrunerOptions = {}): InstanceType<typeof ContextPruner> {
  return new ContextPruner({ archivePath: join(dir(), 'context-archive.md'), now: clock(), ...options })
}

const DEFAULTS = {
  threshold: 80,
  emergencyThreshold: 90,
  keepRecentMessages: 10,
  archivePath: 'context-archive.md',
  autoReconstruct: true,
  maxTokens: 128000,
  targetPercentage: 50,
  emergencyTargetPercentage: 30,
}

test('the defaults are the seed configuration plus the window and targets', (t) => {
  t.deepEqual({ ...new ContextPruner().config }, DEFAULTS)
  t.is(new ContextPruner().archiveDataPath, 'context-archive.jsonl')
})

test('fromConfigFile reads context-pruner.config.json; a missing file gives the defaults', (t) => {
  const d = dir()
  t.deepEqual({ ...ContextPruner.fromConfigFile(join(d, 'context-pruner.config.json')).config }, DEFAULTS)
  const file = join(d, 'context-pruner.config.json')
  writeFileSync(file, JSON.stringify({ threshold: 70, emergencyThreshold: 85, keepRecentMessages: 4, archivePath: 'logs/archive.md', autoReconstruct: false, maxTokens: 32000 }))
  t.deepEqual({ ...ContextPruner.fromConfigFile(file).config }, { ...DEFAULTS, threshold: 70, emergencyThreshold: 85, keepRecentMessages: 4, archivePath: 'logs/archive.md', autoReconstruct: false, maxTokens: 32000 })
  // Without a path: context-pruner.config.json in the working directory. A worker thread cannot
  // change its directory, so a child process started in `d` reads it.
  const script = `const { ContextPruner } = require(${JSON.stringify(addonPath)})
process.stdout.write(JSON.stringify([ContextPruner.fromConfigFile().config.threshold, ContextPruner.fromConfigFile(undefined, { now: () => 0 }).config.maxTokens]))`
  const child = spawnSync(process.execPath, ['-e', script], { cwd: d, encoding: 'utf8' })
  t.is(child.status, 0, child.stderr)
  t.deepEqual(JSON.parse(child.stdout), [70, 32000])
})

test('a bad configuration file names the file and the setting (INVALID_CONFIG)', (t) => {
  const d = dir()
  const file = join(d, 'context-pruner.config.json')
  for (const [text, detail] of [
    ['{ "threshold": 80,', 'is not valid JSON: EOF while parsing a value at line 1 column 18'],
    ['[80]', 'must be a JSON object, got an array'],
    ['{"threshold": 120}', 'threshold: must be a number from 0 to 100, got 120'],
    ['{"threshold": "80"}', 'threshold: must be a number from 0 to 100, got "80"'],
    ['{"emergencyThreshold": 70}', 'emergencyThreshold: must be at least threshold (80), got 70'],
    ['{"keepRecentMessages": -1}', 'keepRecentMessages: must be an integer of at least 0, got -1'],
    ['{"keepRecentMessages": 2.5}', 'keepRecentMessages: must be an integer of at least 0, got 2.5'],
    ['{"archivePath": ""}', 'archivePath: must be a non-empty string, got ""'],
    ['{"archivePath": null}', 'archivePath: must be a non-empty string, got null'],
    ['{"autoReconstruct": "yes"}', 'autoReconstruct: must be a boolean, got "yes"'],
    ['{"maxTokens": 0}', 'maxTokens: must be an integer of at least 1, got 0'],
    ['{"targetPercentage": 90}', 'targetPercentage: must be at most threshold (80), got 90'],
    ['{"threshold": 40}', 'targetPercentage: must be at most threshold (40), got 50 (the default)'],
    ['{"emergencyTargetPercentage": [30]}', 'emergencyTargetPercentage: must be a number from 0 to 100, got an array'],
    ['{"emergencyTargetPercentage": 60}', 'emergencyTargetPercentage: must be at most targetPercentage (50), got 60'],
    ['{"treshold": 80}', 'treshold: is not a setting; the settings are threshold, emergencyThreshold, keepRecentMessages, archivePath, autoReconstruct, maxTokens, targetPercentage, emergencyTargetPercentage'],
  ] as const) {
    writeFileSync(file, text)
    const err = t.throws<CodedError>(() => ContextPruner.fromConfigFile(file), undefined, text)
    t.is(err?.code, 'INVALID_CONFIG', text)
    t.is(err?.message, `${file}: ${detail}`, text)
    t.false(err instanceof TypeError, text)
  }
  // A directory where the file should be: it cannot be read.
  const err = t.throws<CodedError>(() => ContextPruner.fromConfigFile(d))
  t.is(err?.code, 'IO_ERROR')
  t.true(err?.message.startsWith(`${d}: could not be read: `))
})

test('bad constructor options name the option (INVALID_OPTION)', (t) => {
  for (const [options, message] of [
    [{ threshold: NaN }, 'threshold: must be a number from 0 to 100, got NaN'],
    [{ threshold: -1 }, 'threshold: must be a number from 0 to 100, got -1'],
    [{ emergencyThreshold: Infinity }, 'emergencyThreshold: must be a number from 0 to 100, got Infinity'],
    [{ keepRecentMessages: '10' }, 'keepRecentMessages: must be an integer of at least 0, got "10"'],
    [{ archivePath: () => 'x' }, 'archivePath: must be a non-empty string, got a function'],
    [{ autoReconstruct: 1 }, 'autoReconstruct: must be a boolean, got 1'],
    [{ maxTokens: 1.5 }, 'maxTokens: must be an integer of at least 1, got 1.5'],
    [{ targetPercentage: {} }, 'targetPercentage: must be a number from 0 to 100, got an object'],
    [{ emergencyTargetPercentage: 51 }, 'emergencyTargetPercentage: must be at most targetPercentage (50), got 51'],
    [{ now: 5 }, 'now: must be a function, got number'],
    [{ encoding: 'x' }, 'encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got "x"'],
  ] as const) {
    const err = t.throws<CodedError>(() => new ContextPruner(options as never))
    t.is(err?.code, 'INVALID_OPTION')
    t.true(err instanceof TypeError)
    t.is(err?.message, message)
  }
  // null means "not given".
  t.is(new ContextPruner({ threshold: null } as never).config.threshold, 80)
})

test('shouldPrune and isEmergency compare the percentage with the thresholds', (t) => {
  const p = new ContextPruner()
  for (const [metrics, should, emergency] of [
    [{ percentage: 79.9 }, false, false],
    [{ percentage: 80 }, true, false],
    [{ percentage: 89.99 }, true, false],
    [{ percentage: 90 }, true, true],
    [{ currentTokens: 102_400, maxTokens: 128_000 }, true, false],
    [{ currentTokens: 102_399 }, false, false],
    [{ currentTokens: 900, maxTokens: 1000, percentage: 10 }, false, false],
  ] as const) {
    t.is(p.shouldPrune(metrics), should, JSON.stringify(metrics))
    t.is(p.isEmergency(metrics), emergency, JSON.stringify(metrics))
  }
  for (const [metrics, message] of [
    [{}, 'metrics: must give percentage, or currentTokens (with maxTokens or the pruner\'s maxTokens)'],
    [{ percentage: NaN }, 'metrics.percentage: must be a non-negative number, got NaN'],
    [{ currentTokens: -5 }, 'metrics.currentTokens: must be an integer of at least 0, got -5'],
    [{ currentTokens: 5, maxTokens: 0 }, 'metrics.maxTokens: must be an integer of at least 1, got 0'],
  ] as const) {
    t.throws(() => p.shouldPrune(metrics), { code: 'INVALID_OPTION', message })
  }
})

/** For each tool result, the index of its call. */
function callOf(messages: Message[]): Map<number, number> {
  const latest = new Map<string, number>()
  const out = new Map<number, number>()
  messages.forEach((m, i) => {
    for (const c of m.tool_calls ?? []) latest.set(c.id, i)
    if (m.role === 'tool' && latest.has(m.tool_call_id as string)) out.set(i, latest.get(m.tool_call_id as string)!)
  })
  return out
}

test('prune keeps the system prompt, the task, the recent messages with their pairs, and fits the target', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const before = snapshot(messages)
  const p = pruner({ maxTokens: 19_000 })
  const total = ct.estimateTokens(messages)
  t.is(total, 15187)
  const result = p.prune(messages, { percentage: 85 })
  t.false(result.emergency)
  t.is(result.targetTokens, 9500)
  t.is(result.beforeTokens, total)
  t.is(result.afterTokens, ct.estimateTokens(result.messages))
  t.true(result.afterTokens <= 9500)
  t.false(result.overBudget)
  t.is(result.reduction, Math.round(((total - result.afterTokens) * 1000) / total) / 10)
  // Kept: the caller's own objects, in order; archived: the rest.
  const kept = messages.flatMap((m, i) => (result.messages.includes(m) ? [i] : []))
  t.is(kept.length, result.messages.length)
  t.deepEqual(kept.concat(result.archivedIndices).sort((a, b) => a - b), messages.map((_, i) => i))
  t.is(result.archivedItems.length, result.archivedIndices.length)
  t.is(result.keptItems.length, result.messages.length)
  // The system prompt and the task (messages[1]) stay; so do the last 10 messages and the
  // call of the first of them.
  t.true(kept.includes(0) && kept.includes(1))
  for (let i = messages.length - 10; i < messages.length; i++) t.true(kept.includes(i), `message ${i}`)
  const calls = callOf(messages)
  t.true(kept.includes(calls.get(messages.length - 10) ?? messages.length - 10))
  t.regex(result.keptItems[0], /^messages\[0\] system \([\d,]+ tokens, kept: system\): /)
  t.regex(result.keptItems[1], /^messages\[1\] user \([\d,]+ tokens, kept: current task\): /)
  t.regex(result.keptItems.at(-1) as string, /kept: recent/)
  // command_parser.pony was edited at message 62: that edit, its latest content, stays as a
  // modified file; the views read before it are recent reads, kept here within the target.
  for (let i = 37; i <= 66; i++) t.true(kept.includes(i), `message ${i}`)
  t.regex(result.keptItems[kept.indexOf(62)], /^messages\[62\] edit of \/workspace\/ponylang__ponyc__0\.1\/packages\/cli\/command_parser\.pony \(183 tokens, kept: modified file\)$/)
  t.regex(result.keptItems[kept.indexOf(38)], /^messages\[38\] read of \/workspace\/ponylang__ponyc__0\.1\/packages\/cli\/command_parser\.pony \(3,877 tokens, kept: within target\)$/)
  t.deepEqual(ct.validateConversation(result.messages), [])
  t.deepEqual(messages, before, 'the input is not mutated')
  t.is(result.timestamp.toISOString(), '2026-02-12T14:30:00.000Z')
  t.is(result.prune, 1)
})

test('an emergency prunes to the lower target', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const p = pruner({ maxTokens: 16_000 })
  // Without metrics, the messages' own count decides: 15,187 of 16,000 is 94.9%.
  t.true(p.isEmergency(p.measure(messages)))
  const emergency = p.prune(messages)
  t.true(emergency.emergency)
  t.is(emergency.targetTokens, 4800)
  // What is always kept (system, task, the modified file's latest content, recent) fits: the
  // views of command_parser.pony read before its edit are archived too (those of lines 100-102
  // are superseded by the edit's snippet).
  t.false(emergency.overBudget)
  t.is(emergency.afterTokens, 4794)
  t.deepEqual(ct.validateConversation(emergency.messages), [])
  const normal = pruner({ maxTokens: 19_000 }).prune(messages, { percentage: 85 })
  const alarm = pruner({ maxTokens: 19_000 }).prune(messages, { percentage: 90 })
  t.true(alarm.emergency && alarm.targetTokens === 5700)
  t.true(alarm.afterTokens < normal.afterTokens)
  // It archives what the normal prune keeps (the 3,877-token view at 38), and may keep smaller
  // units the normal prune archived where they fit.
  t.true(alarm.archivedIndices.includes(38) && !normal.archivedIndices.includes(38))
  // metrics.maxTokens wins over the configured window.
  t.is(pruner().prune(messages, { currentTokens: 95, maxTokens: 100 }).targetTokens, 30)
})

test('the archive round trip: prune twice, every archived message comes back byte for byte', (t) => {
  const d = dir()
  const archivePath = join(d, 'context-archive.md')
  const p = new ContextPruner({ archivePath, maxTokens: 16_000, keepRecentMessages: 6, now: clock() })
  const messages = transcript('openhands-ponyc-4593.json')
  // Fields the core never reads survive too: unicode, numbers, nested metadata.
  messages[3] = { ...messages[3], meta: { 'é': '😀\u2028', n: 1e21, list: [1.5, null, true] } }
  const first = p.prune(messages, { percentage: 85 })
  const call = (id: string, name: string, args: unknown): Message => ({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] })
  const more: Message[] = [
    call('x1', 'str_replace_editor', { command: 'view', path: '/w/a.pony' }),
    { role: 'tool', tool_call_id: 'x1', content: 'line\n'.repeat(3000) },
    ...[2, 3, 4, 5].flatMap((k) => [call(`x${k}`, 'execute_bash', { command: `echo ${k}` }), { role: 'tool', tool_call_id: `x${k}`, content: String(k) } as Message]),
    { role: 'assistant', content: 'Done.' },
  ]
  const grown = [...first.messages, ...more]
  const second = p.prune(grown, { percentage: 95 })
  t.is(second.prune, 2)
  t.true(second.emergency)
  const archived = [
    ...first.archivedIndices.map((i) => messages[i]),
    ...second.archivedIndices.map((i) => grown[i]),
  ]
  t.true(first.archivedIndices.length > 0 && second.archivedIndices.length > 0)
  t.deepEqual(
    p.reconstruct().map((m) => JSON.stringify(m)),
    archived.map((m) => JSON.stringify(m)),
  )
  const records = p.readArchive()
  t.deepEqual(
    records.map((r) => [r.prune, r.timestamp, r.index]),
    [
      ...first.archivedIndices.map((i) => [1, '2026-02-12T14:30:00.000Z', i]),
      ...second.archivedIndices.map((i) => [2, '2026-02-12T14:31:00.000Z', i]),
    ],
  )
  // The JSONL file holds exactly JSON.stringify of each original, one per line.
  const lines = readFileSync(join(d, 'context-archive.jsonl'), 'utf8').trimEnd().split('\n')
  t.is(lines.length, archived.length)
  lines.forEach((line, k) => t.true(line.endsWith(`,"message":${JSON.stringify(archived[k])}}`)))
  // The markdown keeps both prunes, in the seed's format.
  const md = readFileSync(archivePath, 'utf8')
  t.deepEqual(md.match(/^# Context Archive - .*$/gm), ['# Context Archive - 2026-02-12T14:30:00.000Z', '# Context Archive - 2026-02-12T14:31:00.000Z'])
  for (const heading of ['## Session Metrics', '## Archived Items', '### Tool Outputs', '#### execute_bash', '### File Reads', '### Conversation', '## Reconstruction Priority']) {
    t.true(md.includes(heading), heading)
  }
  t.true(md.includes(`- Before Prune: ${first.beforeTokens.toLocaleString('en-US')} tokens\n- After Prune: ${first.afterTokens.toLocaleString('en-US')} tokens\n- Archived Items: ${first.archivedIndices.length}\n- Kept Items: ${first.messages.length}\n- Reduction: ${first.reduction}%\n`))
  t.true(md.includes('1. Read: /workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony (modified in this session)\n'))
  // No temporary file is left behind.
  t.deepEqual(readdirSync(d).sort(), ['context-archive.jsonl', 'context-archive.md'])
})

test('the archive is deterministic with an injected clock', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const d = dir()
  const run = () => {
    for (const f of readdirSync(d)) rmSync(join(d, f))
    const p = new ContextPruner({ archivePath: join(d, 'a.md'), maxTokens: 16_000, now: () => new Date('2026-02-12T14:30:00Z') })
    const r = p.prune(messages)
    return [readFileSync(join(d, 'a.md'), 'utf8'), readFileSync(join(d, 'a.jsonl'), 'utf8'), JSON.stringify({ ...r, messages: undefined })]
  }
  const first = run()
  t.deepEqual(run(), first)
  t.true(first[0].startsWith('# Context Archive - 2026-02-12T14:30:00.000Z\n\n## Session Metrics\n- Before Prune: 15,187 tokens\n- After Prune: 4,794 tokens\n'))
})

test('the reconstruction list and note follow autoReconstruct', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const on = pruner({ maxTokens: 16_000 }).prune(messages, { percentage: 85 })
  t.deepEqual(on.reconstruction, [{ path: '/workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony', modified: true }])
  t.is(on.reconstructionNote, `[Context pruned: ${on.archivedIndices.length} earlier messages were archived to ${on.archivePath}. Read these files again before relying on their content: /workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony (modified).]`)
  const off = pruner({ maxTokens: 16_000, autoReconstruct: false }).prune(messages, { percentage: 85 })
  t.deepEqual(off.reconstruction, [])
  t.is(off.reconstructionNote, undefined)
  t.deepEqual(off.archivedIndices, on.archivedIndices)
})

test('nothing is written when nothing is archived', (t) => {
  const d = dir()
  const p = new ContextPruner({ archivePath: join(d, 'a.md') })
  const messages: Message[] = [{ role: 'system', content: 's' }, { role: 'user', content: 'hi' }]
  const r = p.prune(messages, { percentage: 99 })
  t.deepEqual(r.archivedIndices, [])
  t.is(r.prune, undefined)
  r.messages.forEach((m, i) => t.is(m, messages[i]))
  t.deepEqual(readdirSync(d), [])
  t.deepEqual(p.readArchive(), [])
  t.deepEqual(p.reconstruct(), [])
})

test('I/O failures and unserialisable messages are coded errors that write nothing', (t) => {
  const d = dir()
  mkdirSync(join(d, 'a.jsonl'))
  const messages = transcript('openhands-ponyc-4593.json')
  const p = new ContextPruner({ archivePath: join(d, 'a.md'), maxTokens: 16_000 })
  const err = t.throws<CodedError>(() => p.prune(messages))
  t.is(err?.code, 'IO_ERROR')
  t.false(err instanceof TypeError)
  t.true(err?.message.startsWith(`${join(d, 'a.jsonl')}: could not be opened for appending: `), err?.message)
  const e2 = dir()
  const q = new ContextPruner({ archivePath: join(e2, 'a.md'), maxTokens: 16_000 })
  const bad = [...messages]
  bad[3] = { ...bad[3], size: 10n } as never
  t.throws(() => q.prune(bad), { code: 'INVALID_MESSAGE', message: 'messages[3]: could not be serialized to JSON: TypeError: Do not know how to serialize a BigInt' })
  t.false(existsSync(join(e2, 'a.md')) || existsSync(join(e2, 'a.jsonl')))
  t.throws(() => new ContextPruner({ now: () => 'now' } as never).prune(messages), { code: 'INVALID_OPTION', message: 'now: must return a finite number or a valid Date, got string' })
  t.throws(() => new ContextPruner({ now: () => 1e20 }).prune(messages), { code: 'INVALID_OPTION', message: 'now: must return a time within the range of a Date, got 100000000000000000000' })
})

test('measure reports the usage and when the pruner last pruned', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  const p = pruner({ maxTokens: 20_000 })
  t.deepEqual({ ...p.measure(messages) }, { currentTokens: 15187, maxTokens: 20000, percentage: 75.935, lastPruneTime: null })
  p.prune(messages)
  t.is(p.measure(messages).lastPruneTime?.toISOString(), '2026-02-12T14:30:00.000Z')
})

test('every transcript prunes into a valid conversation in every format, at every fill level', (t) => {
  for (const [name, messages] of transcripts()) {
    for (const [format, converted] of [['openai', messages], ['anthropic', toAnthropic(messages)], ['ai-sdk', toAiSdk(messages)]] as const) {
      const total = ct.estimateTokens(converted)
      for (const percentage of [80, 95]) {
        const r = pruner({ maxTokens: Math.floor((total * 100) / percentage), keepRecentMessages: 4 }).prune(converted as never)
        t.is(r.emergency, percentage >= 90, `${name} ${format} ${percentage}`)
        t.deepEqual(ct.validateConversation(r.messages, { format }), [], `${name} ${format} ${percentage}`)
        t.is(r.afterTokens, ct.estimateTokens(r.messages), `${name} ${format} ${percentage}`)
      }
    }
  }
})

test('prune can summarise what it archives, into the result, the archive and the messages', (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const total = ct.estimateTokens(messages)
  const p = pruner({ maxTokens: total, keepRecentMessages: 4 })
  const plain = pruner({ maxTokens: total, keepRecentMessages: 4 }).prune(messages, { percentage: 95 })
  t.is(plain.summary, undefined)
  const result = p.prune(messages, { percentage: 95 }, { summarizeDropped: true, maxSummaryTokens: 300 })
  t.true(result.archivedItems.length > 0)
  t.true(result.summary!.startsWith('[context-trim summary]'))
  t.true(ct.countTokens(result.summary!) <= 300)
  t.true(readFileSync(p.config.archivePath, 'utf8').includes(`### Conversation Summary\n\n${result.summary}\n`))
  t.false(result.messages.some((m) => (m as Message)._summary === true))
  const inserted = pruner({ maxTokens: total, keepRecentMessages: 4 }).prune(messages, { percentage: 95 }, { summarizeDropped: true, insertSummary: true })
  const summaries = inserted.messages.filter((m) => (m as Message)._summary === true)
  t.is(summaries.length, 1)
  t.is((summaries[0] as Message).content, inserted.summary)
  t.is(ct.estimateTokens(inserted.messages), inserted.afterTokens)
  t.deepEqual(ct.validateConversation(inserted.messages), [])
  t.throws(() => pruner().prune(messages, null, { insertSummary: true }), {
    code: 'INVALID_OPTION',
    message: 'insertSummary: needs summarizeDropped: true',
  })
})
