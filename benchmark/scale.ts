/**
 * How the CLI and `classifyMessages` scale with the length of a history (issue 20, part 1).
 * Run with `npm run bench:scale`; replaces the "Scale" section of `benchmark/RESULTS.md`
 * (`--no-write` to only print, `--sizes 1000,4000` for other sessions, `--timeout S` for the
 * longest a CLI run may take, default 600, `--no-50mb` to skip the 50 MB run).
 *
 * - Sessions of 1,000, 4,000 and 25,000 messages replayed from the transcripts (benchmark/data.ts),
 *   and the 50 MB run: `openhands-ponyc-4595.json` replayed 556 times with fresh tool-call ids.
 * - Each CLI command (`stats --json`, `trim --budget 50% -o FILE --json`, `simulate --json`, and
 *   `simulate --json --policies none,high-low,dedup`: every policy but `every-turn`) runs
 *   in its own process, as a user runs it: the wall time, and the peak RSS and CPU time (user +
 *   system) that process reports on exit (benchmark/rss.cjs). On a shared machine the CPU time
 *   is the steadier figure: it does not count the time the process waited for a core. Its fixed cost (Node's start, loading the addon and the encoding)
 *   is measured by the same command on a 2-message file (the fastest of three runs) and taken off before dividing by the
 *   number of messages.
 * - `classifyMessages` in this process: cold (the addon's token and message caches emptied, so
 *   every message is read and tokenised; the fastest of three) and warm (the same objects again:
 *   the median of eleven calls, after the JavaScript side was warmed up on a small session), with the message cache's
 *   default bounds, and again with its bounds raised to hold the session as the CLI raises them
 *   for its input (`holdInput` in cli/analyse.mjs).
 *
 * A command that does not finish within the timeout is reported as such, with no figure.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import type { Message } from '../index.js'
import { holdInput } from '../cli/analyse.mjs'
import { buildMessages, buildReplayRun, mb } from './data.js'
import { duration, ratio, table } from './stats.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const require = createRequire(import.meta.url)
const ct: typeof import('../index.js') = require('../index.js')

/** Where the section goes in RESULTS.md, between these two lines. */
export const SCALE_START = '<!-- scale.ts: start -->'
export const SCALE_END = '<!-- scale.ts: end -->'

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const value = (name: string) => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}
const sizes = (value('--sizes') ?? '1000,4000,25000').split(',').map(Number)
const timeoutMs = Number(value('--timeout') ?? 600) * 1000
const log = (s: string) => process.stderr.write(`${s}\n`)

const COMMANDS: Array<{ name: string; args: (file: string, out: string) => string[] }> = [
  { name: 'stats', args: (file) => ['stats', file, '--json'] },
  { name: 'trim', args: (file, out) => ['trim', file, '--budget', '50%', '-o', out, '--json'] },
  { name: 'simulate', args: (file) => ['simulate', file, '--json'] },
  // The policies that carry their state from turn to turn; `every-turn` re-trims the whole
  // history on every turn (what it simulates), so it alone grows with turns × messages.
  { name: 'simulate without every-turn', args: (file) => ['simulate', file, '--json', '--policies', 'none,high-low,dedup'] },
]
const isSimulate = (name: string) => name.startsWith('simulate')
/** A `simulate` run shorter than this is run three times, and the fastest kept. */
const SIMULATE_RERUN_MS = 5_000

interface Run {
  ms: number
  rss: number
  /** CPU time, user + system, in ms. */
  cpu: number
  finished: boolean
}

const dir = mkdtempSync(join(os.tmpdir(), 'context-trim-scale-'))

function cli(argv: string[]): Run {
  const rssFile = join(dir, 'rss')
  rmSync(rssFile, { force: true })
  const start = performance.now()
  const r = spawnSync(process.execPath, ['-r', join(here, 'rss.cjs'), join(root, 'cli', 'context-trim.mjs'), ...argv], {
    env: { ...process.env, CONTEXT_TRIM_RSS_FILE: rssFile, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: timeoutMs,
    maxBuffer: 1 << 26,
  })
  const ms = performance.now() - start
  if (r.error || r.signal) return { ms, rss: NaN, cpu: NaN, finished: false }
  if (r.status !== 0) throw new Error(`context-trim ${argv.join(' ')} exited with ${r.status}: ${r.stderr}`)
  const usage = JSON.parse(readFileSync(rssFile, 'utf8')) as { rss: number; cpu: number }
  return { ms, rss: usage.rss, cpu: usage.cpu, finished: true }
}

function write(name: string, messages: Message[]): { file: string; bytes: number } {
  const file = join(dir, `${name}.json`)
  const text = JSON.stringify(messages)
  writeFileSync(file, text)
  return { file, bytes: Buffer.byteLength(text) }
}

const cacheCapacity = ct.tokenCacheStats().capacity
const { capacity: messageCacheCapacity, maxBytes: messageCacheBytes } = ct.messageCacheStats()
/** Empties the token and message caches, with their default bounds. */
const emptyCaches = () => {
  ct.setTokenCacheCapacity(cacheCapacity)
  ct.setMessageCacheCapacity(messageCacheCapacity, { maxBytes: messageCacheBytes })
}

/** The result of `f`, its wall time and its CPU time (user + system of this process), in ms. */
function time<T>(f: () => T): [T, number, number] {
  const cpu = process.cpuUsage()
  const start = performance.now()
  const out = f()
  const wall = performance.now() - start
  const used = process.cpuUsage(cpu)
  return [out, wall, (used.user + used.system) / 1000]
}

/**
 * `classifyMessages` on objects it has seen: the median of eleven calls, wall and CPU (a garbage
 * collection of the results falls in some of them; five left the smallest size at the mercy of
 * two), and the messages the first of them read again (message cache misses).
 */
function warm(messages: Message[]): [number, number, number] {
  const before = ct.messageCacheStats().misses
  const calls = [time(() => ct.classifyMessages(messages))]
  const misses = ct.messageCacheStats().misses - before
  for (let k = 1; k < 11; k++) calls.push(time(() => ct.classifyMessages(messages)))
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
  return [median(calls.map((c) => c[1])), median(calls.map((c) => c[2])), misses]
}

const loadStart = os.loadavg()
const wallStart = performance.now()
ct.countTokens('load the encoding')
// The JavaScript side of classifyMessages (the identity checks, the result builder) runs
// unoptimised on the first calls of a process: warmed up here, so the first size measured does
// not carry V8's warm-up.
const warmUp = JSON.parse(JSON.stringify(buildMessages(200))) as Message[]
for (let k = 0; k < 30; k++) ct.classifyMessages(warmUp)

// Fixed cost of every command: the same command on a 2-message history, three times now and
// once more after each size. The fastest run counts: the others waited for the cores (three
// runs at the start alone, in a busy minute, once made the fixed cost of `stats` 232 ms
// against 147 ms, and its 1,000-message row 1.3 µs a message).
const tiny = write('tiny', buildMessages(2))
const tinyRuns = new Map(COMMANDS.map((c) => [c.name, [0, 1, 2].map(() => cli(c.args(tiny.file, join(dir, 'out.json'))))]))
const runTiny = () => COMMANDS.forEach((c) => tinyRuns.get(c.name)!.push(cli(c.args(tiny.file, join(dir, 'out.json')))))

interface Row {
  size: number
  bytes: number
  runs: Map<string, Run>
  classifyCold: number
  classifyWarm: number
  classifyColdCpu: number
  classifyWarmCpu: number
  /** Messages the first warm call read again (not found in the message cache). */
  classifyWarmMisses: number
  /** Warm, the message cache's bounds raised to hold the session. */
  classifyHeld: number
  classifyHeldCpu: number
  classifyHeldMisses: number
}
const rows: Row[] = []
for (const size of sizes) {
  const messages = buildMessages(size)
  const { file, bytes } = write(`session-${size}`, messages)
  const runs = new Map<string, Run>()
  for (const c of COMMANDS) {
    // `stats` and `trim` take seconds at most: the fastest of three runs, as for the fixed cost
    // (one run that waited for a core made a size look slower per message than the next).
    // `simulate` too, when its first run took under SIMULATE_RERUN_MS; else it runs once (it
    // takes ten seconds at 25,000 messages).
    const first = cli(c.args(file, join(dir, 'out.json')))
    const tries = !isSimulate(c.name) || (first.finished && first.ms < SIMULATE_RERUN_MS) ? 3 : 1
    const attempts = [first, ...Array.from({ length: tries - 1 }, () => cli(c.args(file, join(dir, 'out.json'))))]
    const run = attempts.reduce((best, r) => (!best.finished || (r.finished && r.ms < best.ms) ? r : best))
    runs.set(c.name, run)
    log(`${size} ${c.name}: ${run.finished ? duration(run.ms) : `not finished in ${duration(timeoutMs)}`}`)
  }
  // Cold: the fastest of three calls, each on a new copy with the caches emptied.
  const colds = [0, 1, 2].map(() => {
    const copy = JSON.parse(readFileSync(file, 'utf8')) as Message[]
    emptyCaches()
    return time(() => ct.classifyMessages(copy))
  })
  const [classes, classifyCold, classifyColdCpu] = colds.reduce((best, c) => (c[1] < best[1] ? c : best))
  if (classes.length !== size) throw new Error(`classifyMessages gave ${classes.length} entries for ${size} messages`)
  const fresh = JSON.parse(readFileSync(file, 'utf8')) as Message[]
  emptyCaches()
  ct.classifyMessages(fresh)
  const [classifyWarm, classifyWarmCpu, classifyWarmMisses] = warm(fresh)
  // As the CLI does for its input: bounds that hold the whole session (this empties the cache).
  holdInput(ct, fresh.length, bytes)
  ct.classifyMessages(fresh)
  const [classifyHeld, classifyHeldCpu, classifyHeldMisses] = warm(fresh)
  emptyCaches()
  log(`${size} classifyMessages: cold ${duration(classifyCold)}, warm ${duration(classifyWarm)} (${classifyWarmMisses} read again), input held ${duration(classifyHeld)} (${classifyHeldMisses} read again)`)
  rows.push({ size, bytes, runs, classifyCold, classifyWarm, classifyColdCpu, classifyWarmCpu, classifyWarmMisses, classifyHeld, classifyHeldCpu, classifyHeldMisses })
  runTiny()
}
const fixed = new Map(COMMANDS.map((c) => [c.name, Math.min(...tinyRuns.get(c.name)!.map((r) => r.ms))]))
const fixedCpu = new Map(COMMANDS.map((c) => [c.name, Math.min(...tinyRuns.get(c.name)!.map((r) => r.cpu))]))
log(`fixed cost: ${COMMANDS.map((c) => `${c.name} ${duration(fixed.get(c.name)!)} (CPU ${duration(fixedCpu.get(c.name)!)})`).join(', ')}`)

// The 50 MB run.
let big: { messages: number; bytes: number; runs: Map<string, Run> } | undefined
if (!flag('--no-50mb')) {
  const messages = buildReplayRun('openhands-ponyc-4595.json', 556)
  const { file, bytes } = write('run-50mb', messages)
  const runs = new Map<string, Run>()
  for (const c of COMMANDS.filter((c) => !isSimulate(c.name))) {
    const run = cli(c.args(file, join(dir, 'out.json')))
    runs.set(c.name, run)
    log(`50 MB ${c.name}: ${run.finished ? `${duration(run.ms)}, ${mb(run.rss)} RSS` : `not finished in ${duration(timeoutMs)}`}`)
  }
  big = { messages: messages.length, bytes, runs }
}
rmSync(dir, { recursive: true, force: true })

// ---------------------------------------------------------------------------------------------
// Report.

const perMessage = (run: Run, name: string, size: number) => (run.finished ? Math.max(run.ms - fixed.get(name)!, 0) / size : NaN)
const cpuPerMessage = (run: Run, name: string, size: number) => (run.finished ? Math.max(run.cpu - fixedCpu.get(name)!, 0) / size : NaN)
const spread = (values: number[]) => {
  const finite = values.filter(Number.isFinite)
  if (finite.length < values.length) return 'not every size finished'
  return ratio(Math.max(...finite) / Math.min(...finite))
}
const shown = (run: Run) => (run.finished ? duration(run.ms) : `not finished in ${duration(timeoutMs)}`)

const lines: string[] = [
  SCALE_START,
  '## Scale: the CLI and classifyMessages from 1,000 to 25,000 messages (issue 20)',
  '',
  `Written by \`npm run bench:scale\` (benchmark/scale.ts) in ${duration(performance.now() - wallStart)}; load average ${loadStart.map((l) => l.toFixed(2)).join(', ')} at the start and ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')} at the end (2 cores: a load above 2 means the runs shared them, so read the ratios). Method: [docs/benchmark.md](../docs/benchmark.md#scale-benchmarkscalets).`,
  '',
  `Each command runs in its own process; \`stats\` and \`trim\` the fastest of three runs (with its CPU time and peak RSS), \`simulate\` likewise where a run takes under ${SIMULATE_RERUN_MS / 1000} s, else once: with its four policies, and without \`every-turn\` (the policy that runs the strategy on the whole history every turn, so it grows with turns × messages by what it simulates; the others carry their plans from turn to turn). Fixed cost (the command on 2 messages: Node, the addon, the encoding; the fastest of three runs at the start and one after each size), wall and CPU: ${COMMANDS.map((c) => `${c.name} ${duration(fixed.get(c.name)!)} / ${duration(fixedCpu.get(c.name)!)}`).join(', ')}; it is taken off before dividing by the messages.`,
  '',
  table(
    ['messages', 'JSON', ...COMMANDS.map((c) => `${c.name}`), ...COMMANDS.map((c) => `${c.name} per message`)],
    rows.map((r) => [
      r.size.toLocaleString('en-US'),
      mb(r.bytes),
      ...COMMANDS.map((c) => shown(r.runs.get(c.name)!)),
      ...COMMANDS.map((c) => duration(perMessage(r.runs.get(c.name)!, c.name, r.size))),
    ]),
  ),
  '',
  '`classifyMessages` in the benchmark\'s process: cold (caches emptied; the fastest of three calls on new copies), then warm on the same objects (the median of eleven calls; the JavaScript side warmed up first on a 200-message session) with the message cache\'s default bounds (64 MiB; a message seen once waits in probation, an eighth of them), and warm with the bounds raised to hold the session as the CLI raises them for its input (`holdInput`). "Read again": the messages the first warm call did not find in the cache.',
  '',
  table(
    ['messages', 'cold', 'per message', 'warm', 'per message', 'read again', 'warm, input held', 'per message', 'read again'],
    rows.map((r) => [
      r.size.toLocaleString('en-US'),
      duration(r.classifyCold),
      duration(r.classifyCold / r.size),
      duration(r.classifyWarm),
      duration(r.classifyWarm / r.size),
      r.classifyWarmMisses.toLocaleString('en-US'),
      duration(r.classifyHeld),
      duration(r.classifyHeld / r.size),
      r.classifyHeldMisses.toLocaleString('en-US'),
    ]),
  ),
  '',
  'CPU time (user + system, fixed cost taken off) per message: the steadier figure when other processes share the cores.',
  '',
  table(
    ['messages', ...COMMANDS.map((c) => `${c.name} CPU per message`), 'classifyMessages cold CPU per message', 'warm', 'warm, input held'],
    rows.map((r) => [
      r.size.toLocaleString('en-US'),
      ...COMMANDS.map((c) => duration(cpuPerMessage(r.runs.get(c.name)!, c.name, r.size))),
      duration(r.classifyColdCpu / r.size),
      duration(r.classifyWarmCpu / r.size),
      duration(r.classifyHeldCpu / r.size),
    ]),
  ),
  '',
  'Largest over smallest time per message across the sizes (target: at most 2×):',
  '',
  table(
    ['measure', ...COMMANDS.map((c) => c.name), 'classifyMessages cold', 'classifyMessages warm', 'warm, input held'],
    [
      [
        'wall time',
        ...COMMANDS.map((c) => spread(rows.map((r) => perMessage(r.runs.get(c.name)!, c.name, r.size)))),
        spread(rows.map((r) => r.classifyCold / r.size)),
        spread(rows.map((r) => r.classifyWarm / r.size)),
        spread(rows.map((r) => r.classifyHeld / r.size)),
      ],
      [
        'CPU time',
        ...COMMANDS.map((c) => spread(rows.map((r) => cpuPerMessage(r.runs.get(c.name)!, c.name, r.size)))),
        spread(rows.map((r) => r.classifyColdCpu / r.size)),
        spread(rows.map((r) => r.classifyWarmCpu / r.size)),
        spread(rows.map((r) => r.classifyHeldCpu / r.size)),
      ],
    ],
  ),
  '',
  'Peak RSS of each command:',
  '',
  table(
    ['messages', ...COMMANDS.map((c) => c.name)],
    rows.map((r) => [r.size.toLocaleString('en-US'), ...COMMANDS.map((c) => (r.runs.get(c.name)!.finished ? mb(r.runs.get(c.name)!.rss) : '—'))]),
  ),
]
if (big) {
  lines.push(
    '',
    `The 50 MB run: \`openhands-ponyc-4595.json\` replayed 556 times with fresh tool-call ids, ${big.messages.toLocaleString('en-US')} messages, ${mb(big.bytes)} of JSON (targets: 10 s and 1.5 GB each).`,
    '',
    table(
      ['command', 'time', 'CPU time', 'peak RSS', 'within 10 s and 1.5 GB'],
      [...big.runs].map(([name, run]) => [name, shown(run), run.finished ? duration(run.cpu) : '—', run.finished ? mb(run.rss) : '—', run.finished && run.ms <= 10_000 && run.rss <= 1.5e9 ? 'yes' : 'no']),
    ),
  )
}
lines.push(SCALE_END)
const section = lines.join('\n')

if (flag('--no-write')) {
  console.log(section)
} else {
  const file = join(here, 'RESULTS.md')
  const current = readFileSync(file, 'utf8')
  const start = current.indexOf(SCALE_START)
  const end = current.indexOf(SCALE_END)
  const next = start !== -1 && end > start ? `${current.slice(0, start)}${section}${current.slice(end + SCALE_END.length)}` : `${current.trimEnd()}\n\n${section}\n`
  writeFileSync(file, next)
  log(`wrote benchmark/RESULTS.md (Scale section)`)
}
