/**
 * context-trim against the JavaScript alternatives (issue 7). Run with `npm run bench`; writes
 * `benchmark/RESULTS.md` (`--out FILE` to write elsewhere, `--no-write` to only print,
 * `--sizes 100,1000` to run fewer sessions, `--no-rust` to skip the tiktoken-rs example,
 * `--check` to only compare the implementations' decisions, on whole sessions and on 8 turns of
 * each agent loop, without timing anything).
 *
 * Scenarios, on sessions replayed from the real transcripts (benchmark/data.ts):
 * 1. cold: the first call on a whole session (the addon's token and message caches emptied before each call);
 * 2. agent loop: the session grows one message at a time and the trimmer runs at every step with
 *    a budget of half the content; per-turn p50/p99 and the total;
 * 3. raw counting throughput (MB/s): the addon, the three JS tokenizers, and tiktoken-rs called
 *    directly from Rust (examples/count_throughput.rs) on the same text;
 * plus the cost of reading an unchanged 1,000-message history across the napi boundary.
 *
 * The baselines (benchmark/baselines/) are the seeds' trimmers in TypeScript with the addon's
 * rules; before anything is timed, every implementation's decisions are compared message by
 * message, and any difference is reported with the indices that differ (and makes the run fail).
 * Addon functions missing from the build are reported as "not available in this build".
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import { Bench } from 'tinybench'

import type { Message } from '../index.js'
import { COUNTER_NAMES, type Counter, loadCounter, messageTokens, REPLY_PRIMING, requestTokens } from './baselines/counters.js'
import { trimByPriority } from './baselines/priority.js'
import { truncateOldToolOutputs } from './baselines/rolling.js'
import { buildSessions, mb, messageTexts, SESSION_SIZES, type Session } from './data.js'
import { type Decision, decisions, describe, differences, tally } from './decisions.js'
import { duration, mean, percentile, ratio, spreadOrder, table } from './stats.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const require = createRequire(import.meta.url)
const started = performance.now()

// ---------------------------------------------------------------------------------------------
// Settings: the time each measurement may take, chosen so that `npm run bench` stays under
// 5 minutes on a 2-core machine with a debug build of the addon.

/** Time budget of a repeated measurement (a call slower than this is measured once). */
const REPEAT_MS = 500
/** Agent loop: time budget of one baseline on one session and function, in spread turns. */
const LOOP_BUDGET_MS = 2000
/** Agent loop: the fewest turns a baseline is timed on, whatever the budget (2 above 1,000 messages). */
const MIN_SAMPLED_TURNS = 3
/** Agent loop: the most turns a baseline is timed on in sessions above 100 messages. */
const MAX_SAMPLED_TURNS = 64
/** `--check`: the agent-loop turns every implementation runs. */
const CHECK_TURNS = 8
/** `preserveRecentTurns` of every trimByPriority call (the addon's default). */
const PRESERVE_RECENT_TURNS = 2

interface Options {
  sizes: number[]
  out: string | null
  check: boolean
  rust: boolean
}

function parseOptions(argv: string[]): Options {
  const options: Options = { sizes: [...SESSION_SIZES], out: join(here, 'RESULTS.md'), check: false, rust: true }
  for (let k = 0; k < argv.length; k++) {
    const arg = argv[k]
    if (arg === '--no-write') options.out = null
    else if (arg === '--check') options.check = true
    else if (arg === '--no-rust') options.rust = false
    else if (arg === '--out') options.out = argv[++k] ?? fail('--out needs a file')
    else if (arg === '--sizes') options.sizes = (argv[++k] ?? fail('--sizes needs a list')).split(',').map(Number)
    else fail(`unknown argument ${arg}`)
  }
  if (options.sizes.some((n) => !Number.isInteger(n) || n < 1)) fail('--sizes: positive integers, comma-separated')
  return options
}

function fail(message: string): never {
  console.error(`bench: ${message}`)
  process.exit(2)
}

const options = parseOptions(process.argv.slice(2))
const report: string[] = []
const section = (title: string, ...body: string[]) => report.push(`## ${title}`, '', ...body.flatMap((b) => [b, '']))
const log = (line: string) => console.log(line)
let mismatches = 0

// ---------------------------------------------------------------------------------------------
// The addon, and what this build has.

type TrimFn = (messages: Message[], options: { targetTokens: number; preserveRecentTurns: number }) => { messages: Message[] }
type TruncateFn = (messages: Message[]) => Message[] | { messages: Message[] }

const ct = require('../index.js') as typeof import('../index.js')
const exported = ct as unknown as Record<string, unknown>
const addonTrim = typeof exported.trimByPriority === 'function' ? (exported.trimByPriority as TrimFn) : undefined
const addonTruncate = typeof exported.truncateOldToolOutputs === 'function' ? (exported.truncateOldToolOutputs as TruncateFn) : undefined
const cacheCapacity = ct.tokenCacheStats().capacity
const messageCacheCapacity = ct.messageCacheStats().capacity
/**
 * Empties the addon's caches (setting a capacity empties its cache): the token cache and the
 * message cache, so that a "cold" call reads and tokenises every message again.
 */
const emptyCache = () => {
  ct.setTokenCacheCapacity(cacheCapacity)
  ct.setMessageCacheCapacity(messageCacheCapacity)
}

function addonBuild(): { file: string; profile: string; mb: number } {
  const file = readdirSync(root).find((f) => /^context-trim\..+\.node$/.test(f))
  if (!file) return { file: 'none found', profile: 'unknown', mb: 0 }
  const bytes = readFileSync(join(root, file))
  // `napi build` copies the cdylib it built: a debug build is byte for byte (so size for size)
  // the one in target/debug. (Searching the bytes for ".debug_info" misleads: the standard
  // library's backtrace code holds that string in release builds too.)
  const debugSo = join(root, 'target', 'debug', 'libcontext_trim.so')
  const profile = existsSync(debugSo) && statSync(debugSo).size === bytes.length ? 'debug' : 'release'
  return { file, profile, mb: bytes.length / 1e6 }
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return '?'
  }
}

function command(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8' })
  return r.status === 0 ? r.stdout.trim() : `(${cmd} unavailable)`
}

// ---------------------------------------------------------------------------------------------
// Measuring.

interface Timing {
  /** Median of the samples, ms. */
  p50: number
  mean: number
  samples: number
}

/**
 * Times `fn`: the first call (made by the caller, `firstMs`) is the only sample when it took
 * longer than the budget; otherwise tinybench repeats it for `REPEAT_MS`.
 */
async function repeat(fn: () => unknown, firstMs: number, beforeEach?: () => void): Promise<Timing> {
  if (firstMs >= REPEAT_MS || options.check) return { p50: firstMs, mean: firstMs, samples: 1 }
  const bench = new Bench({ time: REPEAT_MS, iterations: 2, warmup: false, retainSamples: true })
  bench.add('task', fn, beforeEach ? { beforeEach } : undefined)
  const [task] = await bench.run()
  const r = task.result
  if (r.state !== 'completed') throw new Error(`tinybench: task ${r.state}${r.state === 'errored' ? `: ${r.error.message}` : ''}`)
  return { p50: r.latency.p50, mean: r.latency.mean, samples: r.latency.samples?.length ?? 0 }
}

/**
 * A full garbage collection before a timed series (with `--expose-gc`, as `npm run bench` runs),
 * so that a series does not pay for the garbage of the one before it (the baselines allocate
 * far more than the addon).
 */
const settle = () => (globalThis as { gc?: () => void }).gc?.()

function timeOnce<T>(fn: () => T): [T, number] {
  const start = performance.now()
  const value = fn()
  return [value, performance.now() - start]
}

// ---------------------------------------------------------------------------------------------
// Implementations and workloads.

interface Impl {
  name: string
  counter?: Counter
}

type Verdict = Decision[] | number

interface Workload {
  id: string
  /** Whether the addon has it in this build. */
  addonAvailable: boolean
  run(impl: Impl, messages: Message[], budget: number): unknown
  verdict(input: Message[], output: unknown): Verdict
  /**
   * Set when the baselines follow the seed's rules and the addon's differ by design: the
   * addon's decisions are then reported against the baselines' (not a failure), and the later
   * checks (rebuilt objects, ContextWindow) compare the addon with its own agent-loop decisions.
   */
  seedRules?: string
}

const outputMessages = (out: unknown): Message[] => (Array.isArray(out) ? (out as Message[]) : (out as { messages: Message[] }).messages)

const workloads: Workload[] = [
  {
    id: 'trimByPriority',
    addonAvailable: addonTrim !== undefined,
    run: (impl, messages, budget) => {
      const opts = { targetTokens: budget, preserveRecentTurns: PRESERVE_RECENT_TURNS }
      return impl.counter ? trimByPriority(impl.counter, messages, opts).messages : addonTrim!(messages, opts).messages
    },
    verdict: (input, out) => decisions(input, outputMessages(out)),
    seedRules:
      "the baselines follow seed 000's rules; context-trim's differ since issue 18 (the last message's unit kept, superseded results stale, never-truncated tiers dropped last, cuts and backfill: docs/priority-trimming.md), so it does more work than they do",
  },
  {
    id: 'truncateOldToolOutputs',
    addonAvailable: addonTruncate !== undefined,
    run: (impl, messages) => (impl.counter ? truncateOldToolOutputs(impl.counter, messages) : outputMessages(addonTruncate!(messages))),
    verdict: (input, out) => decisions(input, outputMessages(out)),
  },
  {
    id: 'estimateTokens',
    addonAvailable: true,
    run: (impl, messages) => (impl.counter ? requestTokens(impl.counter, messages) : ct.estimateTokens(messages)),
    verdict: (_, out) => out as number,
  },
]

/** Compares two verdicts; a description of the differences, or undefined when equal. */
function compare(input: Message[], expected: Verdict, actual: Verdict): string | undefined {
  if (typeof expected === 'number' || typeof actual === 'number') {
    return expected === actual ? undefined : `counts differ: expected ${String(expected)}, got ${String(actual)}`
  }
  const diffs = differences(input, expected, actual)
  return diffs.length === 0 ? undefined : describe(diffs)
}

function summarise(v: Verdict): string {
  if (typeof v === 'number') return `${v.toLocaleString('en-US')} tokens`
  const t = tally(v)
  return Object.entries(t)
    .filter(([, n]) => n > 0)
    .map(([d, n]) => `${n} ${d}`)
    .join(', ')
}

// ---------------------------------------------------------------------------------------------
// Setup.

const build = addonBuild()
const loadStart = os.loadavg()
log(`context-trim benchmark: addon ${build.file} (${build.profile} build), sessions ${options.sizes.join(', ')}`)

const [, addonLoadMs] = timeOnce(() => ct.countTokens('load the encoding'))
const counters = COUNTER_NAMES.map(loadCounter)
const reference = counters.find((c) => c.name === 'gpt-tokenizer') ?? counters[0]
const impls: Impl[] = [{ name: 'context-trim (addon)' }, ...counters.map((c) => ({ name: c.name, counter: c }))]
const ADDON = impls[0]

const sessions = buildSessions(options.sizes)
const perMessage = new Map<Session, number[]>()
for (const s of sessions) perMessage.set(s, s.messages.map((m) => messageTokens(reference, m)))
const totalOf = (s: Session, k = s.messages.length) =>
  k === 0 ? 0 : perMessage.get(s)!.slice(0, k).reduce((a, b) => a + b, REPLY_PRIMING)
const halfBudget = (s: Session, k?: number) => Math.floor(totalOf(s, k) / 2)

const machine = [
  `- CPU: ${os.cpus()[0]?.model ?? '?'}, ${os.availableParallelism()} cores available, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
  `- OS: ${os.type()} ${os.release()} (${os.arch()})`,
  `- Node ${process.version}; ${command('rustc', ['--version'])}`,
  `- load average at start: ${loadStart.map((l) => l.toFixed(2)).join(', ')} (other work on the machine skews timings)`,
  `- addon: \`${build.file}\`, **${build.profile} build** (${build.mb.toFixed(1)} MB)${build.profile === 'debug' ? ': unoptimised Rust, so the addon rows are far below what `npm run build` (release) gives; rerun after a release build for representative figures' : ''}`,
  `- JS tokenizers: js-tiktoken ${packageVersion('js-tiktoken')}, gpt-tokenizer ${packageVersion('gpt-tokenizer')}, tiktoken (WASM) ${packageVersion('tiktoken')}; tinybench ${packageVersion('tinybench')}; all o200k_base`,
  `- encoding load time: addon ${duration(addonLoadMs)}, ${counters.map((c) => `${c.name} ${duration(c.loadMs)}`).join(', ')}`,
]

section(
  'Data',
  'Sessions replayed from `samples/transcripts/*.json` (benchmark/data.ts): transcripts in file-name order, one after another, one system message at the start, tool-call ids renamed per replay, texts of later rounds made unique so that no cache gets hits a real session would not give. Content = UTF-8 bytes of every text the counters tokenise (contents, names, tool-call names and arguments).',
  table(
    ['session', 'messages', 'tool results', 'steps', 'content', 'JSON', 'tokens (o200k_base, with overheads)'],
    sessions.map((s) => [
      s.label,
      String(s.messages.length),
      String(s.messages.filter((m) => m.role === 'tool').length),
      String(s.messages.filter((m) => (m.tool_calls?.length ?? 0) > 0).length),
      mb(s.contentBytes),
      mb(s.jsonBytes),
      totalOf(s).toLocaleString('en-US'),
    ]),
  ),
)

// ---------------------------------------------------------------------------------------------
// Scenario 1: cold.

interface ColdResult {
  timing?: Timing
  verdict?: Verdict
}
const cold = new Map<string, ColdResult>() // key: session|workload|impl
const key = (s: Session, w: Workload, impl: Impl) => `${s.label}|${w.id}|${impl.name}`
const coldRows: string[][] = []
const checks: string[] = []

for (const s of sessions) {
  for (const w of workloads) {
    const budget = halfBudget(s)
    let expected: Verdict | undefined
    let expectedOutput: string | undefined
    for (const impl of impls) {
      if (impl === ADDON && !w.addonAvailable) {
        coldRows.push([s.label, w.id, impl.name, 'not available in this build', '', '', ''])
        continue
      }
      if (impl === ADDON) emptyCache()
      const [out, firstMs] = timeOnce(() => w.run(impl, s.messages, budget))
      const verdict = w.verdict(s.messages, out)
      let check = 'reference'
      if (impl.counter) {
        // The baselines are one implementation on three counters: outputs must be identical.
        const json = JSON.stringify(out)
        if (expectedOutput === undefined) expectedOutput = json
        else if (json !== expectedOutput) {
          mismatches++
          check = 'output differs from js-tiktoken'
          checks.push(`- ${s.label} ${w.id}: ${impl.name}'s output differs from js-tiktoken's`)
        }
      }
      cold.set(key(s, w, impl), { verdict })
      const timing = await repeat(() => w.run(impl, s.messages, budget), firstMs, impl === ADDON ? emptyCache : undefined)
      cold.get(key(s, w, impl))!.timing = timing
      coldRows.push([s.label, w.id, impl.name, duration(timing.p50), String(timing.samples), summarise(verdict), check])
      log(`cold ${s.label} ${w.id} ${impl.name}: ${duration(timing.p50)} (${timing.samples} samples)`)
      if (impl.counter && expected === undefined) expected = verdict
    }
    // The addon against the baselines: same decisions (or the same count).
    const addon = cold.get(key(s, w, ADDON))?.verdict
    if (addon !== undefined && expected !== undefined) {
      const diff = compare(s.messages, expected, addon)
      const row = coldRows.find((r) => r[0] === s.label && r[1] === w.id && r[2] === ADDON.name)!
      row[6] = diff === undefined ? 'identical to the baselines' : w.seedRules ? `differs by design (${w.seedRules}): ${diff}` : `**DIFFERS**: ${diff}`
      if (diff !== undefined && !w.seedRules) {
        mismatches++
        checks.push(`- ${s.label} ${w.id}: the addon ${diff}`)
        log(`MISMATCH cold ${s.label} ${w.id}: addon ${diff}`)
      }
    }
  }
}

// Ratios: each baseline's p50 over the addon's.
const coldRatioRows: string[][] = []
for (const s of sessions) {
  for (const w of workloads) {
    const a = cold.get(key(s, w, ADDON))?.timing
    coldRatioRows.push([
      s.label,
      w.id,
      ...counters.map((c) => {
        const b = cold.get(key(s, w, impls.find((i) => i.counter === c)!))?.timing
        return a && b ? ratio(b.p50 / a.p50) : 'n/a'
      }),
    ])
  }
}

section(
  'Scenario 1: cold (first call on a whole session)',
  'One call on the whole session; the addon\'s token cache is emptied before every call, so it tokenises everything, like the baselines (which have no cache). Median over the samples (a call slower than 1 s is timed once). The "check" column compares decisions message by message before anything is timed.',
  table(['session', 'function', 'implementation', 'p50', 'samples', 'result', 'check'], coldRows),
  'Addon speed-up (baseline p50 ÷ addon p50):',
  table(['session', 'function', ...counters.map((c) => `vs ${c.name}`)], coldRatioRows),
)

// ---------------------------------------------------------------------------------------------
// Scenario 2: agent loop.

interface LoopResult {
  /** Per-turn times of every timed turn, by prefix length. */
  times: Map<number, number>
  /** Whether every turn was timed (else `times` holds a spread sample of turns). */
  allTurns: boolean
}

const loops = new Map<string, LoopResult>()
/** The decisions the implementations agreed on, by `${session}|${workload}` and turn. */
const agreed = new Map<string, Map<number, Verdict>>()
const loopRows: string[][] = []
const loopRatioRows: string[][] = []
const addonAllTurnsUpTo = build.profile === 'release' ? 1000 : 100
const addonSampledTurns = (n: number) => (build.profile === 'release' ? 50 : n <= 1000 ? 20 : 10)

for (const s of sessions) {
  const n = s.messages.length
  const order = spreadOrder(n, n <= 100 ? n : MAX_SAMPLED_TURNS)
  for (const w of workloads) {
    const expectedAt = new Map<number, Verdict>()
    // The addon's own decisions, where its rules differ from the baselines' by design.
    const addonAt = new Map<number, Verdict>()
    agreed.set(`${s.label}|${w.id}`, w.seedRules ? addonAt : expectedAt)
    const rowsStart = loopRows.length
    const timedByBaselines: number[][] = []
    // The baselines first, so that they set the expected decisions; the addon's row goes first.
    for (const impl of [...impls.slice(1), ADDON]) {
      if (impl === ADDON && !w.addonAvailable) {
        loopRows.splice(rowsStart, 0, [s.label, w.id, impl.name, 'not available in this build', '', '', ''])
        continue
      }
      const times = new Map<number, number>()
      let allTurns = false
      settle()
      const check = (k: number, out: unknown) => {
        const input = s.messages.slice(0, k)
        const verdict = w.verdict(input, out)
        if (w.seedRules && impl === ADDON) return void addonAt.set(k, verdict)
        const expected = expectedAt.get(k)
        if (expected === undefined) return void expectedAt.set(k, verdict)
        const diff = compare(input, expected, verdict)
        if (diff !== undefined) {
          mismatches++
          checks.push(`- agent loop ${s.label} ${w.id} at turn ${k}: ${impl.name} ${diff}`)
          log(`MISMATCH loop ${s.label} ${w.id} turn ${k}: ${impl.name} ${diff}`)
        }
      }
      if (impl.counter) {
        // Spread turns until the time budget is spent (at least MIN_SAMPLED_TURNS).
        const start = performance.now()
        for (const k of order) {
          const enough = times.size >= (n > 1000 ? 2 : MIN_SAMPLED_TURNS) && performance.now() - start >= LOOP_BUDGET_MS
          if (options.check ? times.size >= CHECK_TURNS : enough) break
          const history = s.messages.slice(0, k)
          const [out, ms] = timeOnce(() => w.run(impl, history, halfBudget(s, k)))
          times.set(k, ms)
          check(k, out)
        }
        timedByBaselines.push([...times.keys()])
      } else if (n <= addonAllTurnsUpTo && !options.check) {
        // Every turn, on one growing history, as an app runs it.
        emptyCache()
        allTurns = true
        const history: Message[] = []
        for (let k = 1; k <= n; k++) {
          history.push(s.messages[k - 1])
          const budget = halfBudget(s, k)
          const [out, ms] = timeOnce(() => w.run(impl, history, budget))
          times.set(k, ms)
          if (expectedAt.has(k)) check(k, out)
        }
      } else {
        // Spread turns (those the baselines timed and more), in order; before each, an untimed
        // call on the previous turn's history leaves the cache as the loop would have left it.
        emptyCache()
        const count = options.check ? CHECK_TURNS : Math.max(addonSampledTurns(n), ...timedByBaselines.map((t) => t.length))
        for (const k of order.slice(0, count).sort((x, y) => x - y)) {
          if (k > 1) w.run(impl, s.messages.slice(0, k - 1), halfBudget(s, k - 1))
          const history = s.messages.slice(0, k)
          const [out, ms] = timeOnce(() => w.run(impl, history, halfBudget(s, k)))
          times.set(k, ms)
          check(k, out)
        }
      }
      loops.set(key(s, w, impl), { times, allTurns })
      const all = [...times.values()]
      const total = allTurns ? all.reduce((x, y) => x + y, 0) : mean(all) * n
      const row = [
        s.label,
        w.id,
        impl.name,
        allTurns ? `all ${n}` : `${times.size} of ${n}`,
        duration(percentile(all, 50)),
        duration(percentile(all, 99)),
        allTurns ? duration(total) : `≈ ${duration(total)}`,
      ]
      if (impl === ADDON) loopRows.splice(rowsStart, 0, row)
      else loopRows.push(row)
      log(`loop ${s.label} ${w.id} ${impl.name}: p50 ${duration(percentile(all, 50))}, total ${duration(total)} (${times.size} turns timed)`)
    }
    // Ratios on the same turns: each baseline's timed turns, and the addon's times on them.
    const a = loops.get(key(s, w, ADDON))
    loopRatioRows.push([
      s.label,
      w.id,
      ...counters.map((c) => {
        const b = loops.get(key(s, w, impls.find((i) => i.counter === c)!))
        if (!a || !b) return 'n/a'
        const turns = [...b.times.keys()]
        const addonP50 = percentile(turns.map((k) => a.times.get(k)!), 50)
        return `${ratio(percentile([...b.times.values()], 50) / addonP50)} (${turns.length} turns)`
      }),
    ])
  }
}

section(
  'Scenario 2: agent loop (the session grows one message a turn)',
  `At turn k the trimmer gets the first k messages, with a budget of half their tokens for trimByPriority and the default config for truncateOldToolOutputs. **The JS baselines re-tokenise the whole history every turn, so they are timed on a subset of turns**: evenly spread turns (midpoints of halves, quarters, eighths…, so that any prefix of the sequence covers the session evenly), as many as fit in ${duration(LOOP_BUDGET_MS)} per row (at least ${MIN_SAMPLED_TURNS}, or 2 above 1,000 messages); their total is the mean of those turns times the number of turns (≈). The addon (${build.profile} build) runs every turn on one growing array for sessions up to ${addonAllTurnsUpTo.toLocaleString('en-US')} messages; above that, spread turns (every turn a baseline timed, and more), each after an untimed call on the previous turn's history so that its cache holds what the loop would have left. Decisions are compared on every turn timed by more than one implementation.`,
  table(['session', 'function', 'implementation', 'turns timed', 'p50 per turn', 'p99 per turn', 'total'], loopRows),
  "Addon speed-up per turn (the baseline's p50 ÷ the addon's p50 over the same turns):",
  table(['session', 'function', ...counters.map((c) => `vs ${c.name}`)], loopRatioRows),
)

// ---------------------------------------------------------------------------------------------
// Scenario 2c: rebuilt objects (issue 20). A stateless handler gets the history as freshly parsed
// JSON on every call, so the message cache never finds an object by identity, only messages by
// their content: on the turns the gpt-tokenizer baseline timed, the addon's trimByPriority runs on
// a JSON.parse copy of the history (the parse is not timed), after 30 such calls on other
// copies; its decisions are checked like the loop's, and the message cache's bytes are read at
// the end.

const rebuiltRows: string[][] = []
/** The 1,000-message session's rebuilt-objects p50 and its ratio to gpt-tokenizer's p50, and the same for a JSON body. */
let rebuiltAt1000: { p50: number; vsGpt: number; json?: { p50: number; vsGpt: number; buffer: number; bufferVsGpt: number } } | undefined
const addonJson = typeof exported.trimByPriorityJson === 'function' ? (exported.trimByPriorityJson as typeof ct.trimByPriorityJson) : undefined
if (addonTrim) {
  const w = workloads[0]
  for (const s of sessions) {
    const gptLoop = loops.get(key(s, w, impls.find((i) => i.counter === reference)!))
    const expectedAt = agreed.get(`${s.label}|${w.id}`)
    if (!gptLoop || !expectedAt) continue
    emptyCache()
    settle()
    const turns = [...gptLoop.times.keys()].sort((a, b) => a - b)
    const times: number[] = []
    const jsonTimes: number[] = []
    const bufferTimes: number[] = []
    for (const k of turns) {
      const text = JSON.stringify(s.messages.slice(0, k))
      // Earlier requests of a server: fresh copies the cache sees once, then (as the JSON rows
      // get it) the previous turn's request, parsed afresh, untimed.
      for (let j = 0; j < 30 && times.length === 0; j++) w.run(ADDON, JSON.parse(text) as Message[], halfBudget(s, k))
      if (k > 1) w.run(ADDON, JSON.parse(JSON.stringify(s.messages.slice(0, k - 1))) as Message[], halfBudget(s, k - 1))
      const fresh = JSON.parse(text) as Message[]
      const [out, ms] = timeOnce(() => w.run(ADDON, fresh, halfBudget(s, k)))
      times.push(ms)
      const expected = expectedAt.get(k)
      const diff = expected === undefined ? undefined : compare(fresh, expected, w.verdict(fresh, out))
      if (diff !== undefined) {
        mismatches++
        checks.push(`- rebuilt objects ${s.label} at turn ${k}: ${diff}`)
      }
      if (addonJson) {
        // The same request as a JSON body (the parse is the addon's, and timed), after the
        // previous turn's body, as a server gets them one after the other.
        const options = { targetTokens: halfBudget(s, k), preserveRecentTurns: PRESERVE_RECENT_TURNS }
        if (k > 1) addonJson(JSON.stringify(s.messages.slice(0, k - 1)), { targetTokens: halfBudget(s, k - 1), preserveRecentTurns: PRESERVE_RECENT_TURNS })
        const [got, jsonMs] = timeOnce(() => addonJson(text, options))
        jsonTimes.push(jsonMs)
        const bytes = Buffer.from(text)
        const [fromBuffer, bufferMs] = timeOnce(() => addonJson(bytes, options))
        bufferTimes.push(bufferMs)
        const want = JSON.stringify(out as Message[])
        for (const [what, r] of [['string', got], ['Buffer', fromBuffer]] as const) {
          if (JSON.stringify(JSON.parse(r.body)) !== want) {
            mismatches++
            checks.push(`- trimByPriorityJson (${what}) ${s.label} at turn ${k}: the body differs from trimByPriority's messages`)
          }
        }
      }
    }
    const p50 = percentile(times, 50)
    const gptP50 = percentile([...gptLoop.times.values()], 50)
    const json = jsonTimes.length
      ? { p50: percentile(jsonTimes, 50), buffer: percentile(bufferTimes, 50), vsGpt: 0, bufferVsGpt: 0 }
      : undefined
    if (json) {
      json.vsGpt = gptP50 / json.p50
      json.bufferVsGpt = gptP50 / json.buffer
    }
    if (s.messages.length === 1000) rebuiltAt1000 = { p50, vsGpt: gptP50 / p50, json }
    const stats = ct.messageCacheStats() as ReturnType<typeof ct.messageCacheStats> & { bodyBytes?: number; contentBytes?: number }
    rebuiltRows.push([
      s.label,
      `${times.length}`,
      duration(gptP50),
      duration(p50),
      ratio(gptP50 / p50),
      mb(stats.bytes),
      stats.contentBytes === undefined ? 'n/a' : mb(stats.contentBytes),
      json ? duration(json.p50) : 'n/a',
      json ? ratio(json.vsGpt) : 'n/a',
      json ? duration(json.buffer) : 'n/a',
      json ? ratio(json.bufferVsGpt) : 'n/a',
      stats.bodyBytes === undefined ? 'n/a' : mb(stats.bodyBytes),
    ])
    log(`rebuilt ${s.label}: p50 ${duration(p50)}, ${ratio(gptP50 / p50)} gpt-tokenizer${json ? `; JSON body ${duration(json.p50)}, ${ratio(json.vsGpt)}; Buffer ${duration(json.buffer)}, ${ratio(json.bufferVsGpt)}` : ''}`)
  }
}
section(
  'Scenario 2c: rebuilt objects and JSON bodies (a stateless handler)',
  addonTrim
    ? 'trimByPriority on a `JSON.parse` copy of the history (the parse not timed), on the turns the gpt-tokenizer baseline timed in scenario 2, after 30 calls on other copies of the first one, each after an untimed call on a fresh copy of the previous turn\'s history (as a server gets them, one turn after the other): the message cache never finds an object by identity, only messages by their content (a new object equal to one of a request before is found by value, without crossing the boundary, once its content has come back). Set against the gpt-tokenizer baseline on the same turns (its p50, the parse not timed either). "cache held" is the message cache\'s bytes at the end: objects seen once stay in its probation part (an eighth of the bounds); "by content" is the bytes findable by content (the same parsed messages, shared; content seen once stays in probation too). `trimByPriorityJson` gets the same request as the JSON text a server receives (its parse is the addon\'s, and timed), as a string and as a `Buffer`, each after an untimed call on the previous turn\'s body (as a server gets them, one turn after the other); its body is checked to equal trimByPriority\'s messages. "bodies held" is the bytes the message cache holds for JSON bodies at the end.'
    : 'Not available in this build.',
  addonTrim
    ? table(['session', 'turns', 'gpt-tokenizer p50', 'rebuilt objects p50', 'faster', 'cache held', 'by content', 'JSON string p50', 'faster', 'JSON Buffer p50', 'faster', 'bodies held'], rebuiltRows)
    : '',
)

// ---------------------------------------------------------------------------------------------
// Scenario 2b: the incremental API. The same sessions grow in a ContextWindow one message a
// turn; every turn appends the new message, then trims (and, on spread turns, truncates). Its
// decisions are checked against the turns the baselines timed.

const windowRows: string[][] = []
/** p50 of `trim` over the last 100 turns of the 1,000-message session, and of append + trim. */
let windowAt1000: { trim: number; appendAndTrim: number } | undefined
const WindowClass = (exported.ContextWindow ?? undefined) as typeof ct.ContextWindow | undefined
if (WindowClass) {
  for (const s of sessions) {
    emptyCache()
    settle()
    const n = s.messages.length
    const win = new WindowClass()
    const appendTimes: number[] = []
    const trimTimes: number[] = []
    const truncateTimes: number[] = []
    const late: Array<[number, number]> = []
    const expectTrim = agreed.get(`${s.label}|trimByPriority`) ?? new Map()
    const expectTruncate = agreed.get(`${s.label}|truncateOldToolOutputs`) ?? new Map()
    const truncateEvery = Math.max(1, Math.ceil(n / 50))
    const verify = (what: string, k: number, expected: Verdict | undefined, out: unknown) => {
      if (expected === undefined) return
      const input = s.messages.slice(0, k)
      const diff = compare(input, expected, decisions(input, outputMessages(out)))
      if (diff !== undefined) {
        mismatches++
        checks.push(`- ContextWindow ${s.label} ${what} at turn ${k}: ${diff}`)
        log(`MISMATCH window ${s.label} ${what} turn ${k}: ${diff}`)
      }
    }
    for (let k = 1; k <= n; k++) {
      const [, appendMs] = timeOnce(() => win.append([s.messages[k - 1]]))
      if (options.check && !expectTrim.has(k) && !expectTruncate.has(k)) continue
      const opts = { targetTokens: halfBudget(s, k), preserveRecentTurns: PRESERVE_RECENT_TURNS }
      const [trimmed, trimMs] = timeOnce(() => win.trim(opts))
      verify('trim', k, expectTrim.get(k), trimmed)
      appendTimes.push(appendMs)
      trimTimes.push(trimMs)
      if (k > n - 100) late.push([trimMs, appendMs + trimMs])
      if (k % truncateEvery === 0 || expectTruncate.has(k)) {
        const [truncated, truncateMs] = timeOnce(() => win.truncate())
        verify('truncate', k, expectTruncate.get(k), truncated)
        truncateTimes.push(truncateMs)
      }
    }
    if (n === 1000) {
      windowAt1000 = { trim: percentile(late.map((x) => x[0]), 50), appendAndTrim: percentile(late.map((x) => x[1]), 50) }
    }
    const row = (what: string, times: number[], turns: string) => [s.label, what, turns, duration(percentile(times, 50)), duration(percentile(times, 99))]
    windowRows.push(row('`append([message])`', appendTimes, `all ${n}`))
    windowRows.push(row('`trim({targetTokens})`', trimTimes, `all ${n}`))
    windowRows.push(row('`trim` in the last 100 turns', late.map((x) => x[0]), `${late.length}`))
    windowRows.push(row('`truncate()`', truncateTimes, `${truncateTimes.length} of ${n}`))
    log(`window ${s.label}: trim p50 ${duration(percentile(trimTimes, 50))}, append p50 ${duration(percentile(appendTimes, 50))}`)
  }
}
section(
  'Scenario 2b: the incremental API (`ContextWindow`)',
  WindowClass
    ? `The same sessions, grown in one \`ContextWindow\` by \`append([message])\` a turn; after each append, \`trim\` with half the tokens as budget (as \`trimByPriority\` above), and on every ${'n/50'}-th turn \`truncate()\`. \`append\` reads and counts the new message (the only tokenisation of a turn); \`trim\` and \`truncate\` read nothing from JavaScript but the held objects they return. Their decisions are compared with the agent loop's on every turn the baselines timed.`
    : 'Not available in this build.',
  WindowClass ? table(['session', 'call', 'turns timed', 'p50', 'p99'], windowRows) : '',
)

if (options.check) {
  log(checks.length === 0 ? 'check: every implementation made the same decisions (trimByPriority: the three baselines alike, the addon as its own agent loop; its rules differ from the seed\'s by design)' : `check: ${checks.length} failed\n${checks.join('\n')}`)
  process.exit(mismatches > 0 ? 1 : 0)
}

// ---------------------------------------------------------------------------------------------
// Scenario 3: raw counting throughput.

const largest = sessions[sessions.length - 1]
const pieces = largest.messages.flatMap(messageTexts)
const text = pieces.join('\n')
const textBytes = Buffer.byteLength(text, 'utf8')
const dataDir = join(here, 'data')
mkdirSync(dataDir, { recursive: true })
const textFile = join(dataDir, `session-${largest.messages.length}.txt`)
const piecesFile = join(dataDir, `session-${largest.messages.length}.pieces.json`)
writeFileSync(textFile, text)
writeFileSync(piecesFile, JSON.stringify(pieces))

interface RustRun {
  tokens: number
  mbPerS: number
  hashMbPerS: number
  loadS: number
  /** bpe-openai on the same texts (examples/count_throughput.rs), for the tokenizer choice. */
  bpe: { tokens: number; mbPerS: number; loadS: number; differingTexts: number; tokenDifference: number }
}

function runRust(file: string, piecesMode: boolean): RustRun | string {
  if (!options.rust) return 'skipped (--no-rust)'
  const args = ['run', '--quiet', '--release', '--no-default-features', '--example', 'count_throughput', '--', file, '--runs', '3']
  if (piecesMode) args.push('--pieces')
  const r = spawnSync('cargo', args, { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) return `cargo run failed: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' ')}`
  const field = (line: string, name: string) => Number(new RegExp(`\\b${name}=(-?[0-9.]+)`).exec(r.stdout.split('\n').find((l) => l.startsWith(`${line} `)) ?? '')?.[1])
  return {
    tokens: field('count', 'tokens'),
    mbPerS: field('count', 'mb_per_s'),
    hashMbPerS: field('hash', 'mb_per_s'),
    loadS: field('load', 'seconds'),
    bpe: {
      tokens: field('bpe_openai_count', 'tokens'),
      mbPerS: field('bpe_openai_count', 'mb_per_s'),
      loadS: field('bpe_openai_load', 'seconds'),
      differingTexts: field('bpe_openai_count', 'differing_texts'),
      tokenDifference: field('bpe_openai_count', 'token_difference'),
    },
  }
}

const [, buildMs] = timeOnce(() =>
  options.rust
    ? spawnSync('cargo', ['build', '--quiet', '--release', '--no-default-features', '--example', 'count_throughput'], { cwd: root, stdio: 'inherit' })
    : undefined,
)
log(`examples/count_throughput built (or found fresh) in ${duration(buildMs)}`)
const rustWhole = runRust(textFile, false)
const rustPieces = runRust(piecesFile, true)
const rustRow = (r: RustRun | string, what: string): string[] =>
  typeof r === 'string' ? ['tiktoken-rs 0.12 from Rust (release)', what, r, '', ''] : ['tiktoken-rs 0.12 from Rust (release)', what, `${r.mbPerS.toFixed(1)} MB/s`, r.tokens.toLocaleString('en-US'), '1.0×']

/** bpe-openai from Rust on the same input, against tiktoken-rs (docs/benchmark.md, "Tokenizer choice"). */
const bpeRow = (r: RustRun | string, what: string): string[] => {
  if (typeof r === 'string') return ['bpe-openai 0.3 from Rust (release)', what, r, '', '']
  const { bpe } = r
  if (!Number.isFinite(bpe.mbPerS)) return ['bpe-openai 0.3 from Rust (release)', what, 'not measured (older example)', '', '']
  const differs = bpe.differingTexts > 0 ? ` (${bpe.differingTexts} text(s) differ from tiktoken-rs, ${bpe.tokenDifference > 0 ? '+' : ''}${bpe.tokenDifference} tokens)` : ''
  if (bpe.differingTexts > 0) checks.push(`- throughput: bpe-openai counts ${bpe.differingTexts} text(s) differently from tiktoken-rs (${what})`)
  return ['bpe-openai 0.3 from Rust (release)', what, `${bpe.mbPerS.toFixed(1)} MB/s`, `${bpe.tokens.toLocaleString('en-US')}${differs}`, ratio(bpe.mbPerS / r.mbPerS)]
}

const throughputRows: string[][] = [rustRow(rustWhole, 'the whole text'), bpeRow(rustWhole, 'the whole text')]
const rustWholeMbS = typeof rustWhole === 'string' ? NaN : rustWhole.mbPerS
const rustPiecesMbS = typeof rustPieces === 'string' ? NaN : rustPieces.mbPerS
const expectedTokens = typeof rustWhole === 'string' ? undefined : rustWhole.tokens

async function throughput(name: string, what: string, bytes: number, fn: () => number, beforeEach?: () => void, versus = rustWholeMbS): Promise<number> {
  beforeEach?.()
  const [tokens, firstMs] = timeOnce(fn)
  const timing = await repeat(fn, firstMs, beforeEach)
  const mbPerS = bytes / 1e6 / (timing.p50 / 1000)
  let note = ''
  if (what === 'the whole text' && expectedTokens !== undefined && tokens !== expectedTokens) {
    mismatches++
    note = ` **DIFFERS from tiktoken-rs (${expectedTokens})**`
    checks.push(`- throughput: ${name} counts ${tokens} tokens, tiktoken-rs ${expectedTokens}`)
  }
  throughputRows.push([name, what, `${mbPerS.toFixed(1)} MB/s`, `${tokens.toLocaleString('en-US')}${note}`, ratio(mbPerS / versus)])
  log(`throughput ${name} (${what}): ${mbPerS.toFixed(2)} MB/s`)
  return mbPerS
}

await throughput('context-trim `countTokens`', 'the whole text', textBytes, () => ct.countTokens(text), emptyCache)
for (const c of counters) await throughput(c.name, 'the whole text', textBytes, () => c.count(text))
throughputRows.push(rustRow(rustPieces, 'each message text'), bpeRow(rustPieces, 'each message text'))
const coldEstimate = cold.get(key(largest, workloads[2], ADDON))?.timing
const estimateMbS = coldEstimate ? largest.contentBytes / 1e6 / (coldEstimate.p50 / 1000) : NaN
throughputRows.push([
  'context-trim `estimateTokens` (cold)',
  `the ${largest.label}-message session`,
  `${estimateMbS.toFixed(1)} MB/s`,
  totalOf(largest).toLocaleString('en-US'),
  ratio(estimateMbS / rustPiecesMbS),
])

section(
  'Scenario 3: raw counting throughput',
  `The texts of the ${largest.label}-message session (${mb(textBytes)}; ${pieces.length.toLocaleString('en-US')} texts): joined by newlines into one string for the tokenizers, or message by message for \`estimateTokens\` (whose count adds the per-message overheads). Median MB/s (the addon's cache is emptied before each call). The last column compares with tiktoken-rs called directly from Rust on the same input (\`cargo run --release --no-default-features --example count_throughput -- <file>\`, best of 3; o200k load ${typeof rustWhole === 'string' ? '?' : duration(rustWhole.loadS * 1000)}). The bpe-openai rows are the same example timing bpe-openai's \`o200k_base\` (a dev-dependency, not in the addon; see docs/benchmark.md, "Tokenizer choice"; load ${typeof rustWhole === 'string' || !Number.isFinite(rustWhole.bpe.loadS) ? '?' : duration(rustWhole.bpe.loadS * 1000)}), with its ratio to tiktoken-rs on the same input. The example was built or found fresh in ${duration(buildMs)}, included in the total runtime.`,
  table(['implementation', 'input', 'throughput', 'tokens', 'vs tiktoken-rs'], throughputRows),
)

// ---------------------------------------------------------------------------------------------
// The napi boundary: reading an unchanged 1,000-message history.

const history = sessions.find((s) => s.messages.length === 1000) ?? sessions[Math.min(1, sessions.length - 1)]
ct.estimateTokens(history.messages) // warm the cache
const [, warmFirst] = timeOnce(() => ct.estimateTokens(history.messages))
const warm = await repeat(() => ct.estimateTokens(history.messages), warmFirst)
const [, stringifyFirst] = timeOnce(() => JSON.stringify(history.messages))
const stringify = await repeat(() => JSON.stringify(history.messages), stringifyFirst)
const one = [history.messages[history.messages.length - 1]]
const [, oneFirst] = timeOnce(() => ct.estimateTokens(one))
const single = await repeat(() => ct.estimateTokens(one), oneFirst)
const hashedBytes = history.messages.flatMap(messageTexts).filter((t) => Buffer.byteLength(t) >= 256).reduce((n, t) => n + Buffer.byteLength(t), 0)
const hashMbS = typeof rustPieces === 'string' ? NaN : rustPieces.hashMbPerS
const hashMs = hashedBytes / 1e6 / hashMbS * 1000
// The trimmers on the same unchanged history, cache warm: a turn of the loop minus the new message.
const warmTrimmers: Array<[string, Timing | undefined]> = []
for (const w of workloads.slice(0, 2)) {
  if (!w.addonAvailable) {
    warmTrimmers.push([w.id, undefined])
    continue
  }
  const budget = halfBudget(history)
  w.run(ADDON, history.messages, budget)
  const [, first] = timeOnce(() => w.run(ADDON, history.messages, budget))
  warmTrimmers.push([w.id, await repeat(() => w.run(ADDON, history.messages, budget), first)])
}
const hashKnown = Number.isFinite(hashMs)
// What the output contract and an identity cache cost by themselves, in JavaScript alone, on
// the warm trimByPriority result of the same history: a new array of the returned messages in
// which each shortened one is a copy with its metadata hidden (own, non-enumerable), as any
// implementation returning fresh copies must build them, built the fastest way known (the
// metadata defined on a bare object, then the fields assigned: defining a property on an
// object that has fields changes its shape, several times slower); and one WeakMap lookup per
// message, the least a cache keyed by the caller's objects can do.
const contractOut = ct.trimByPriority(history.messages, { targetTokens: halfBudget(history), preserveRecentTurns: PRESERVE_RECENT_TURNS }).messages as Message[]
const inputObjects = new Set<object>(history.messages)
const hiddenOf = (m: object) => Object.getOwnPropertyNames(m).filter((k) => !Object.prototype.propertyIsEnumerable.call(m, k))
const contractCopies = contractOut.filter((m) => !inputObjects.has(m)).length
const contractHidden = contractOut.filter((m) => !inputObjects.has(m)).map(hiddenOf)
const buildContract = () => {
  const out = new Array<Message>(contractOut.length)
  for (let i = 0, j = 0; i < contractOut.length; i++) {
    const m = contractOut[i]
    if (inputObjects.has(m)) {
      out[i] = m
      continue
    }
    const copy = {} as Message
    for (const k of contractHidden[j++]) Object.defineProperty(copy, k, { value: (m as unknown as Record<string, unknown>)[k], writable: true, enumerable: false, configurable: true })
    Object.assign(copy, m)
    out[i] = copy
  }
  return out
}
const [, contractFirst] = timeOnce(buildContract)
const contract = await repeat(buildContract, contractFirst)
const identities = new WeakMap<object, number>(history.messages.map((m, i) => [m, i]))
const lookUpAll = () => {
  let sum = 0
  for (const m of history.messages) sum += identities.get(m) ?? 0
  return sum
}
const [, lookupFirst] = timeOnce(lookUpAll)
const lookups = await repeat(lookUpAll, lookupFirst)
/** The least a warm trimByPriority on this history can cost with its output contract (JavaScript alone). */
const floorMs = contract.p50 + lookups.p50

const boundaryRows = [
  ['`estimateTokens` on the unchanged history, cache warm', duration(warm.p50), `${(history.jsonBytes / 1e6 / (warm.p50 / 1000)).toFixed(0)} MB/s of JSON-equivalent`],
  ...warmTrimmers.map(([id, t]) => [`\`${id}\` on the same history, cache warm`, t ? duration(t.p50) : 'not available in this build', '']),
  ['`JSON.stringify` of the same history', duration(stringify.p50), `${(history.jsonBytes / 1e6 / (stringify.p50 / 1000)).toFixed(0)} MB/s`],
  ['`estimateTokens` on its last message only (fixed cost of a call)', duration(single.p50), ''],
  [
    `the output contract alone, in JavaScript: the ${contractOut.length} returned messages in a new array, ${contractCopies} of them copies with their hidden metadata (${[...new Set(contractHidden.flat())].join(', ') || 'none'})`,
    duration(contract.p50),
    '',
  ],
  [`one \`WeakMap\` lookup per message, in JavaScript (the least an identity cache can do)`, duration(lookups.p50), ''],
  [
    `hashing its ${mb(hashedBytes)} of texts ≥ 256 bytes for the cache (SipHash rate of the release example)`,
    hashKnown ? duration(hashMs) : 'not measured',
    hashKnown ? `${hashMbS.toFixed(0)} MB/s` : '',
  ],
]
const shares = warmTrimmers
  .filter((x): x is [string, Timing] => x[1] !== undefined)
  .map(([id, t]) => `${((warm.p50 / t.p50) * 100).toFixed(0)}% of a warm \`${id}\` call`)
const verdictLine =
  shares.length > 0
    ? `Reading the history (warm \`estimateTokens\`) is ${shares.join(' and ')} on the same history.`
    : 'The trimmers are not available in this build, so their per-turn cost cannot be set against the read yet.'
section(
  `The napi boundary: an unchanged ${history.label}-message history`,
  `Issue 7 item 2: does copying the history's strings across the boundary dominate the per-turn cost? \`estimateTokens\` on the same ${history.label}-message array (${mb(history.jsonBytes)} as JSON) called repeatedly with every count cached: what is left is reading every message (napi copies each string into UTF-8), hashing the long texts for the cache lookup, and the lookups. The trimmers on the same array with the same warm cache are a turn of the agent loop minus the new message's tokenisation.`,
  table(['what', 'p50', 'rate'], boundaryRows),
  `${verdictLine} Whatever the strategy costs, a warm \`trimByPriority\` that returns this result through napi cannot cost less than building it and looking up its messages: ${duration(floorMs)} in JavaScript alone. A warm read costs ${ratio(warm.p50 / stringify.p50)} a \`JSON.stringify\` of the same history${hashKnown ? `; hashing accounts for about ${((hashMs / warm.p50) * 100).toFixed(1)}% of it (at release speed), so the rest is the copy and the property reads across the boundary` : ''}${build.profile === 'debug' ? ' (in this debug build the binding code itself is unoptimised, which inflates the read)' : ''}.`,
)

// ---------------------------------------------------------------------------------------------
// Memory: RSS over 100,000 calls on distinct histories, in a fresh process (benchmark/memory.ts).

interface MemoryRun {
  calls: number
  seconds: number
  tokenCacheCapacity: number
  messageCacheCapacity: number
  samples: Array<{ calls: number; rssMb: number; heapMb: number; tokenCache: number; messageCache: number }>
}
const MEMORY_CALLS = 100_000
const memoryOut = spawnSync(process.execPath, ['--import', '@oxc-node/core/register', join(here, 'memory.ts'), String(MEMORY_CALLS)], { cwd: root, encoding: 'utf8' })
let memory: MemoryRun | undefined
try {
  memory = JSON.parse(memoryOut.stdout.trim().split('\n').pop() ?? '') as MemoryRun
} catch {
  log(`memory run failed: ${memoryOut.stderr}`)
}
/**
 * RSS growth over the second half of the run, in percent of its mean there: the rise of a
 * least-squares line through the second half's samples. Two samples alone (its first and last)
 * read the garbage collector's sawtooth as growth or shrinkage.
 */
const memoryGrowth = (() => {
  if (!memory) return NaN
  const half = memory.samples.slice(Math.floor(memory.samples.length / 2) - 1)
  const xs = half.map((m) => m.calls)
  const ys = half.map((m) => m.rssMb)
  const mx = mean(xs)
  const my = mean(ys)
  const slope = xs.reduce((n, x, i) => n + (x - mx) * (ys[i] - my), 0) / xs.reduce((n, x) => n + (x - mx) ** 2, 0)
  return ((slope * (xs[xs.length - 1] - xs[0])) / my) * 100
})()
section(
  `Memory: ${MEMORY_CALLS.toLocaleString('en-US')} calls on distinct histories`,
  memory
    ? `A fresh process (\`benchmark/memory.ts\`) calls \`trimByPriority\`, \`truncateOldToolOutputs\` and \`estimateTokens\` in turn, each on a history of 8 messages no other call shares, so every call parses, counts and caches new messages (${(MEMORY_CALLS * 8).toLocaleString('en-US')} messages in all) and the caches fill to their bounds (tokens: ${memory.tokenCacheCapacity.toLocaleString('en-US')} texts; messages: ${memory.messageCacheCapacity.toLocaleString('en-US')}) and then evict. ${memory.seconds} s. Over the second half of the run RSS grew ${memoryGrowth.toFixed(1)}% (the rise of a least-squares line through its samples, in percent of their mean).`
    : 'The memory run failed (see the log).',
  memory
    ? table(
        ['calls', 'RSS', 'JS heap used', 'token cache entries', 'message cache entries'],
        memory.samples.map((m) => [m.calls.toLocaleString('en-US'), `${m.rssMb} MB`, `${m.heapMb} MB`, m.tokenCache.toLocaleString('en-US'), m.messageCache.toLocaleString('en-US')]),
      )
    : '',
)

// ---------------------------------------------------------------------------------------------
// Targets, checks, machine.

const s1000 = sessions.find((s) => s.messages.length === 1000)
const byName = (name: string) => impls.find((i) => i.name === name)!
/** The baseline's p50 ÷ the addon's p50 over the turns the baseline timed, at 1,000 messages. */
const loopRatio = (baseline: string) => {
  const b = s1000 && loops.get(key(s1000, workloads[0], byName(baseline)))
  const a = s1000 && loops.get(key(s1000, workloads[0], ADDON))
  if (!a || !b) return NaN
  const turns = [...b.times.keys()]
  return percentile([...b.times.values()], 50) / percentile(turns.map((k) => a.times.get(k)!), 50)
}
const target = (goal: number, got: number, unit = '×') =>
  !Number.isFinite(got) ? 'not measurable in this build' : `${got.toFixed(unit === '%' ? 0 : 1)}${unit} (${got >= goal ? 'met' : `missed by ${(goal / got).toFixed(2)}×`})`
section(
  'Targets of issues 7, 20 and 44',
  table(
    ['target', 'goal', 'measured'],
    [
      ['agent-loop p50 per turn, 1,000 messages, `trimByPriority` vs gpt-tokenizer baseline', '≥ 50×', target(50, loopRatio('gpt-tokenizer'))],
      ['same, vs js-tiktoken baseline', '≥ 200×', target(200, loopRatio('js-tiktoken'))],
      [
        'reused objects (issue 44, replacing issue 20\'s 200×): the same agent-loop p50 vs gpt-tokenizer baseline',
        '≥ 100×',
        `${target(100, loopRatio('gpt-tokenizer'))}; the output contract and one identity lookup per message cost ${duration(floorMs)} in JavaScript alone (the napi boundary section)`,
      ],
      [
        'incremental API per turn at 1,000 messages (`ContextWindow#trim`, p50 of the last 100 turns; issue 44, replacing issue 20\'s 100 and 50 µs)',
        '≤ 0.3 ms',
        windowAt1000
          ? `${duration(windowAt1000.trim)} (${windowAt1000.trim <= 0.3 ? 'met' : `missed by ${(windowAt1000.trim / 0.3).toFixed(1)}×`}); with the append of the new message (its tokenisation): ${duration(windowAt1000.appendAndTrim)}; building its result alone (the output contract, above) takes ${duration(contract.p50)}`
          : 'not measured: no `ContextWindow` in this build or no 1,000-message session',
      ],
      [
        'rebuilt objects (issue 20): `trimByPriority` on fresh `JSON.parse` copies, 1,000 messages, vs gpt-tokenizer baseline',
        '≥ 30×',
        rebuiltAt1000 ? `${target(30, rebuiltAt1000.vsGpt)} (${duration(rebuiltAt1000.p50)} a turn)` : 'not measured: no 1,000-message session',
      ],
      [
        'the same request as a JSON body (issue 20): `trimByPriorityJson` on the string, parse included, vs gpt-tokenizer baseline',
        '≥ 30×',
        rebuiltAt1000?.json
          ? `${target(30, rebuiltAt1000.json.vsGpt)} (${duration(rebuiltAt1000.json.p50)} a turn); from a \`Buffer\`: ${target(30, rebuiltAt1000.json.bufferVsGpt)} (${duration(rebuiltAt1000.json.buffer)})`
          : 'not measured: no trimByPriorityJson in this build or no 1,000-message session',
      ],
      [`cold \`estimateTokens\` throughput on the ${largest.label}-message session vs tiktoken-rs from Rust on the same texts`, '≥ 80%', target(80, (estimateMbS / rustPiecesMbS) * 100, '%')],
      [
        'RSS after 100,000 calls on distinct histories',
        'within the cache bound + a constant',
        memory
          ? `${memory.samples[memory.samples.length - 1].rssMb} MB, ${memoryGrowth.toFixed(1)}% growth over the second half with both caches at their bounds (${Math.abs(memoryGrowth) <= 10 ? 'met: flat' : 'not flat'})`
          : 'the memory run failed',
      ],
    ],
  ),
  build.profile === 'debug' ? '**The addon was a debug build**: its figures (and so every ratio above) are not representative; build with `npm run build` and rerun.' : '',
)

const totalMs = performance.now() - started
const cpu = process.cpuUsage()
const cpuMs = (cpu.user + cpu.system) / 1000
report.unshift(
  '# Benchmark results',
  '',
  `Written by \`npm run bench\` (benchmark/bench.ts) in ${duration(totalMs)} of wall time, ${duration(cpuMs)} of CPU time (the wall time of a run on an idle machine is close to the CPU time; more means other work took the cores). Regenerate after any change to the addon or the baselines.`,
  '',
  '## Machine',
  '',
  ...machine,
  `- load average at the end: ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}`,
  '',
  '## Checks before timing',
  '',
  checks.length === 0
    ? `The three baselines made the same decisions and returned identical outputs; the addon made the same decisions as them for truncateOldToolOutputs (keep/placeholder/cut per message) and the same counts, on every session and every timed agent-loop turn. For trimByPriority the baselines follow seed 000's rules and the addon's differ by design since issue 18 (the cold table shows where): it does more work than they do, so the ratios understate it; its rebuilt-object and ContextWindow decisions are checked against its own agent loop. Addon functions missing from the build were not compared.`
    : `**${checks.length} check(s) failed**: the comparison is not yet same-work for these rows.\n\n${checks.join('\n')}`,
  '',
)

let markdown = `${report.join('\n').replace(/\n{3,}/g, '\n\n').trim()}\n`
if (options.out) {
  // The Scale section is written by benchmark/scale.ts (`npm run bench:scale`): keep it.
  const previous = existsSync(options.out) ? readFileSync(options.out, 'utf8') : ''
  const start = previous.indexOf('<!-- scale.ts: start -->')
  const end = previous.indexOf('<!-- scale.ts: end -->')
  if (start !== -1 && end > start) markdown += `\n${previous.slice(start, end + '<!-- scale.ts: end -->'.length)}\n`
  writeFileSync(options.out, markdown)
  log(`wrote ${relative(process.cwd(), options.out)} (${duration(totalMs)} wall, ${duration(cpuMs)} CPU)`)
} else {
  console.log(markdown)
}
if (mismatches > 0) {
  console.error(`bench: ${mismatches} check(s) failed: see "Checks before timing"`)
  process.exitCode = 1
}
