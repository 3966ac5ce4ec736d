// Soak test: a million mixed calls (every strategy, every format, random budgets and options,
// seeded) in one process, then the same number spread over 4 worker_threads running at once,
// checking every result as it goes and reporting RSS every 100,000 calls. RSS must plateau:
// the addon's caches are bounded, so after warm-up memory stays flat.
//
//   npm run soak                      # 1,000,000 calls on the main thread, then in 4 workers
//   npm run soak -- --calls 20000     # a short run (CI runs this through __test__/soak.spec.ts)
//   options: --calls N --workers W --seed S --every N (report interval) --json (summary line)
//            --only main|workers (one phase; two processes can then run the phases at once)
//
// Checks on every call: a returned array holds the caller's own objects in their input order,
// plus copies only where the call may replace (placeholders, repairs); returned messages validate
// (validateConversation) whenever the input did; a count is a non-negative integer. The exit
// code is 1 on any failed check, or when in a phase RSS grows by more than 10% (and 64 MB) over
// the second half of its calls.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'

import { toAiSdk, toAnthropic } from '../__test__/convert.js'
import type { Message } from '../index.js'

const require = createRequire(import.meta.url)
const ct: typeof import('../index.js') = require('../index.js')
const root = join(dirname(fileURLToPath(import.meta.url)), '..')

type Format = 'openai' | 'anthropic' | 'ai-sdk'
type Conversation = { format: Format; messages: unknown[]; valid: boolean }

/** mulberry32: a small seeded generator, so a run can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function parseArgs(argv: string[]) {
  const get = (name: string, fallback: number) => {
    const i = argv.indexOf(`--${name}`)
    if (i < 0) return fallback
    const n = Number(argv[i + 1])
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} wants a non-negative integer, got ${argv[i + 1]}`)
    return n
  }
  const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : undefined
  if (only !== undefined && only !== 'main' && only !== 'workers') throw new Error(`--only wants main or workers, got ${only}`)
  return { calls: get('calls', 1_000_000), workers: get('workers', 4), seed: get('seed', 42), every: get('every', 100_000), json: argv.includes('--json'), only }
}

/** Conversations to call on: the transcripts cut into pieces, in the three formats. */
function conversations(random: () => number): Conversation[] {
  const dir = join(root, 'samples', 'transcripts')
  const out: Conversation[] = []
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const all = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Message[]
    for (let k = 0; k < 6; k++) {
      const size = 4 + Math.floor(random() * 36)
      const start = Math.floor(random() * Math.max(1, all.length - size))
      // Start on a user message when there is one, so most pieces are valid conversations.
      let s = start
      while (s < all.length && all[s].role !== 'user') s++
      const piece = all.slice(s < all.length ? s : start, (s < all.length ? s : start) + size)
      out.push({ format: 'openai', messages: piece, valid: false })
      out.push({ format: 'anthropic', messages: toAnthropic(piece), valid: false })
      out.push({ format: 'ai-sdk', messages: toAiSdk(piece), valid: false })
    }
  }
  for (const c of out) c.valid = ct.validateConversation(c.messages as never, { format: c.format }).length === 0
  return out
}

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const

type Call = (c: Conversation, budget: number, random: () => number) => unknown
interface Entry {
  name: string
  /** Its share of the calls. */
  weight: number
  run: Call
  /** The messages it returns, if it returns messages. */
  returned?: (result: unknown) => unknown[]
  /** Whether it may return copies (placeholders, repairs) besides the caller's own objects. */
  copies?: boolean
  /** Whether it is told the format (else it detects it, and plain text reads as OpenAI). */
  formatAware?: boolean
}
const asMessages = (r: unknown) => r as unknown[]
const trimmed = (r: unknown) => (r as { messages: unknown[] }).messages
// The pruner writes its archive: into a scratch folder, emptied as the run goes.
const scratch = mkdtempSync(join(tmpdir(), 'context-trim-soak-'))
const archivePath = join(scratch, 'archive.md')
const pruner = new ct.ContextPruner({ archivePath, maxTokens: 4000, keepRecentMessages: 3 })
const sidecarPath = pruner.archiveDataPath
let prunes = 0
const rolling = new ct.RollingContext({ enabled: true, config: { maxAge: 2, maxTokensPerOutput: 300 } })

/** Every strategy and reader, with its share of the mix. Add each new one here. */
const calls: Entry[] = [
  {
    name: 'applyMaxContextTokens',
    weight: 3,
    returned: asMessages,
    formatAware: true,
    run: (c, budget, random) =>
      ct.applyMaxContextTokens(c.messages as never, budget, {
        format: c.format,
        truncationPriority: random() < 0.5 ? undefined : ROLES.filter(() => random() < 0.5),
        keepFirstSystem: random() < 0.5,
        minKeep: random() < 0.3 ? { user: Math.floor(random() * 3), assistant: Math.floor(random() * 3) } : undefined,
        encoding: random() < 0.2 ? 'approximate' : undefined,
      }),
  },
  { name: 'applyMaxContextTokensAsync', weight: 1, returned: asMessages, formatAware: true, run: (c, budget) => ct.applyMaxContextTokensAsync(c.messages as never, budget, { format: c.format }) },
  { name: 'trimByAge', weight: 2, returned: asMessages, formatAware: true, run: (c, budget) => ct.trimByAge(c.messages as never, budget, { format: c.format }) },
  {
    name: 'trimByPriority',
    weight: 2,
    returned: trimmed,
    // A unit's results may be cut to head and tail rather than dropped (issue 18): copies.
    copies: true,
    run: (c, budget, random) => ct.trimByPriority(c.messages as never, { targetTokens: budget, preserveRecentTurns: Math.floor(random() * 4) }),
  },
  { name: 'trimWithPlaceholders', weight: 2, returned: trimmed, copies: true, run: (c, budget) => ct.trimWithPlaceholders(c.messages as never, { targetTokens: budget, summarizeDropped: true }) },
  {
    name: 'trimConversation',
    weight: 1,
    returned: asMessages,
    copies: true,
    run: (c, budget, random) => ct.trimConversation(c.messages as never, budget, { strategy: random() < 0.5 ? 'age-based' : 'priority-based' }),
  },
  {
    name: 'truncateOldToolOutputs',
    weight: 2,
    returned: asMessages,
    copies: true,
    run: (c, _, random) => ct.truncateOldToolOutputs(c.messages as never, { maxAge: Math.floor(random() * 6), maxTokensPerOutput: 200 + Math.floor(random() * 2000) }),
  },
  { name: 'truncateOldToolOutputsAsync', weight: 1, returned: asMessages, copies: true, run: (c) => ct.truncateOldToolOutputsAsync(c.messages as never, {}) },
  { name: 'trimByPriorityAsync', weight: 1, returned: trimmed, copies: true, run: (c, budget) => ct.trimByPriorityAsync(c.messages as never, { targetTokens: budget }) },
  { name: 'trimWithPlaceholdersAsync', weight: 1, returned: trimmed, copies: true, run: (c, budget) => ct.trimWithPlaceholdersAsync(c.messages as never, { targetTokens: budget }) },
  { name: 'trimConversationAsync', weight: 1, returned: asMessages, copies: true, run: (c, budget) => ct.trimConversationAsync(c.messages as never, budget) },
  { name: 'deduplicateToolResults', weight: 2, returned: trimmed, copies: true, run: (c, budget, random) => ct.deduplicateToolResults(c.messages as never, random() < 0.5 ? { deduplicationThreshold: 0 } : { contextWindow: budget + 1 }) },
  { name: 'deduplicateToolResultsAsync', weight: 1, returned: trimmed, copies: true, run: (c) => ct.deduplicateToolResultsAsync(c.messages as never, { deduplicationThreshold: 0 }) },
  {
    name: 'ContextPruner#prune',
    weight: 1,
    returned: trimmed,
    copies: true,
    run: (c, budget) => {
      // Every prune appends what it dropped to the archive and its `.jsonl` sidecar: start both
      // afresh often, so that the soak's disk use stays small (a million calls would otherwise
      // leave hundreds of MB).
      if (++prunes % 50 === 0) for (const path of [archivePath, sidecarPath]) rmSync(path, { force: true })
      return pruner.prune(c.messages as never, { currentTokens: budget + 1, maxTokens: Math.max(1, budget) })
    },
  },
  {
    name: 'ContextWindow#trim',
    weight: 2,
    returned: trimmed,
    copies: true,
    formatAware: true,
    run: (c, budget) => {
      const window = new ct.ContextWindow({ format: c.format })
      window.append(c.messages as never)
      return window.trim({ targetTokens: budget })
    },
  },
  {
    name: 'ContextWindow#truncate',
    weight: 1,
    returned: asMessages,
    copies: true,
    formatAware: true,
    run: (c) => {
      // Appended in two batches, the format detected: the window grows as an agent's does.
      const window = new ct.ContextWindow()
      const half = Math.ceil(c.messages.length / 2)
      window.append(c.messages.slice(0, half) as never)
      window.append(c.messages.slice(half) as never)
      return window.truncate()
    },
  },
  { name: 'ContextPruner#measure', weight: 1, run: (c) => pruner.measure(c.messages as never).currentTokens },
  { name: 'RollingContext#prepare', weight: 1, returned: asMessages, copies: true, run: (c) => rolling.prepare(c.messages as never) },
  { name: 'repairConversation', weight: 1, returned: trimmed, copies: true, formatAware: true, run: (c) => ct.repairConversation(c.messages as never, { format: c.format }) },
  { name: 'validateConversation', weight: 1, run: (c) => ct.validateConversation(c.messages as never, { format: c.format }) },
  { name: 'estimateTokens', weight: 1, run: (c) => ct.estimateTokens(c.messages as never, { format: c.format }) },
  { name: 'countSteps', weight: 1, run: (c) => ct.countSteps(c.messages as never) },
  { name: 'tagMessagesWithStep', weight: 1, run: (c) => ct.tagMessagesWithStep(c.messages as never) },
  { name: 'FileTracker.fromMessages', weight: 1, run: (c) => ct.FileTracker.fromMessages(c.messages as never).getModifiedFiles().size },
  { name: 'classifyMessage', weight: 1, run: (c, _, random) => ct.classifyMessage(c.messages[Math.floor(random() * c.messages.length)] as never).priority },
]

/** Why `output` is not what `entry` may return for `c`, or null. */
function check(entry: Entry, c: Conversation, output: unknown): string | null {
  const name = entry.name
  if (!Array.isArray(output)) return `${name}: returned ${typeof output}, not an array`
  let last = -1
  for (const m of output) {
    const at = c.messages.indexOf(m, last + 1)
    if (at < 0) {
      if (!entry.copies || c.messages.includes(m)) return `${name}: a message out of order or not from the input`
      continue
    }
    last = at
  }
  if (c.valid) {
    // An entry that detects the format reads plain text as OpenAI, whose rules do not ask for a
    // user message first: only that rule is left out for it.
    const problems = ct
      .validateConversation(output as never, { format: c.format })
      .filter((p) => entry.formatAware || p.kind !== 'first-message-not-user')
    if (problems.length) return `${name}: valid input, invalid output: ${problems[0].message}`
  }
  return null
}

interface Progress {
  calls: number
  failures: number
  firstFailure?: string
}

/** A message cache's size: each JavaScript environment (a worker too) has its own. */
interface CacheSize {
  entries: number
  bytes: number
  /** The environment's JavaScript heap in use (per isolate, unlike RSS). */
  heap: number
}

const cacheSize = (): CacheSize => {
  const s = ct.messageCacheStats()
  return { entries: s.entries, bytes: s.bytes, heap: process.memoryUsage().heapUsed }
}

/** Runs `count` calls, reporting progress every `every` calls through `report`. */
async function run(count: number, seed: number, every: number, report: (p: Progress) => void): Promise<Progress> {
  const random = rng(seed)
  const pool = conversations(random)
  const total = calls.reduce((s, c) => s + c.weight, 0)
  const progress: Progress = { calls: 0, failures: 0 }
  const fail = (why: string) => {
    progress.failures++
    progress.firstFailure ??= why
  }
  for (let i = 0; i < count; i++) {
    let c = pool[Math.floor(random() * pool.length)]
    // An agent's history grows and its old messages stay the same objects; now and then a
    // caller sends fresh copies (cache misses, so the caches churn).
    const r = random()
    if (r < 0.05) {
      c = { ...c, messages: structuredClone(c.messages) }
      pool[Math.floor(random() * pool.length)] = c
    } else if (r < 0.25) {
      c = { ...c, messages: c.messages.slice(0, 1 + Math.floor(random() * c.messages.length)) }
      c.valid = c.valid && ct.validateConversation(c.messages as never, { format: c.format }).length === 0
    }
    const tokens = ct.estimateTokens(c.messages as never, { format: c.format })
    const budget = Math.floor(random() * tokens * 1.2)
    let pick = random() * total
    const call = calls.find((x) => (pick -= x.weight) < 0) ?? calls[0]
    try {
      const output = await call.run(c, budget, random)
      if (call.returned) {
        const why = check(call, c, call.returned(output))
        if (why) fail(why)
      } else if (typeof output === 'number' && !(Number.isInteger(output) && output >= 0)) {
        fail(`${call.name}: returned ${output}`)
      }
    } catch (e) {
      // A repair that would leave no message says so (docs/validation.md).
      const emptied = call.name === 'repairConversation' && (e as { code?: string }).code === 'EMPTY_CONVERSATION'
      if (!emptied) fail(`${call.name}: threw ${(e as Error).message}`)
    }
    progress.calls++
    if (progress.calls % every === 0) report(progress)
  }
  return progress
}

interface Sample {
  phase: string
  calls: number
  /** Failed checks so far (in the workers phase, in all workers). */
  failures: number
  rssMb: number
  /** JavaScript heap in use: the main thread's, or in the workers phase all workers'. */
  heapMb: number
  /** The message caches' entries: the main thread's, or in the workers phase all workers'. */
  messageCache: number
  /** Their estimated bytes, in MB. */
  messageCacheMb: number
  tokenCache: number
}

function sample(phase: string, calls: number, failures: number, caches: CacheSize[] = [cacheSize()]): Sample {
  const rss = process.memoryUsage.rss()
  return {
    phase,
    calls,
    failures,
    rssMb: Math.round(rss / 1048576),
    heapMb: Math.round(caches.reduce((n, c) => n + c.heap, 0) / 1048576),
    messageCache: caches.reduce((n, c) => n + c.entries, 0),
    messageCacheMb: Math.round(caches.reduce((n, c) => n + c.bytes, 0) / 1048576),
    tokenCache: ct.tokenCacheStats().entries,
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const samples: Sample[] = []
  const log = (s: Sample) => {
    samples.push(s)
    if (!args.json) console.log(`${s.phase.padEnd(10)} ${String(s.calls).padStart(9)} calls  ${s.failures} failed  rss ${String(s.rssMb).padStart(5)} MB  heap ${String(s.heapMb).padStart(4)} MB  message cache ${s.messageCache} (${s.messageCacheMb} MB est.)  token cache ${s.tokenCache}`)
  }
  const started = Date.now()
  log(sample('start', 0, 0))

  // 1. One process, one thread.
  const single: Progress =
    args.only === 'workers' ? { calls: 0, failures: 0 } : await run(args.calls, args.seed, args.every, (p) => log(sample('main', p.calls, p.failures)))
  log(sample('main', single.calls, single.failures))
  const singleSeconds = (Date.now() - started) / 1000

  // 2. Worker threads at once, the same number of calls in all.
  const threadsStarted = Date.now()
  const workers = args.only === 'main' ? 0 : args.workers
  const perWorker = Math.ceil(args.calls / Math.max(1, workers))
  const done = new Array<Progress>(workers)
  const counts = new Array<number>(workers).fill(0)
  const failed = new Array<number>(workers).fill(0)
  const caches = Array.from({ length: workers }, (): CacheSize => ({ entries: 0, bytes: 0, heap: 0 }))
  let reported = 0
  await Promise.all(
    Array.from({ length: workers }, (_, w) =>
      new Promise<void>((resolve, reject) => {
        const worker = new Worker(new URL(import.meta.url), { workerData: { calls: perWorker, seed: args.seed + w + 1, every: Math.max(1, Math.floor(args.every / 10)) } })
        worker.on('message', (m: { progress: Progress; cache: CacheSize; done: boolean }) => {
          counts[w] = m.progress.calls
          failed[w] = m.progress.failures
          caches[w] = m.cache
          const sum = counts.reduce((a, b) => a + b, 0)
          if (Math.floor(sum / args.every) > reported) {
            reported = Math.floor(sum / args.every)
            log(sample('workers', sum, failed.reduce((a, b) => a + b, 0), caches))
          }
          if (m.done) done[w] = m.progress
        })
        worker.on('error', reject)
        worker.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${w} exited with ${code}`))))
      }),
    ),
  )
  const threaded = done.reduce((a, p) => ({ calls: a.calls + p.calls, failures: a.failures + p.failures, firstFailure: a.firstFailure ?? p.firstFailure }), { calls: 0, failures: 0 } as Progress)
  log(sample('workers', threaded.calls, threaded.failures, caches))
  const threadsSeconds = (Date.now() - threadsStarted) / 1000

  // Per phase, the highest RSS over the second half of its calls against the RSS at its midpoint:
  // flat when it grew by at most 10% (or 64 MB, for short runs), the criterion of
  // benchmark/memory.ts. By the midpoint the caches are at their bounds; a leak keeps growing.
  const phases = [
    { phase: 'main', calls: single.calls },
    { phase: 'workers', calls: threaded.calls },
  ].filter((p) => p.calls > 0)
  const memory = phases.map(({ phase, calls }) => {
    const own = samples.filter((s) => s.phase === phase)
    const mid = own.find((s) => s.calls >= calls / 2) ?? own[0]
    const peakMb = Math.max(...own.filter((s) => s.calls >= mid.calls).map((s) => s.rssMb))
    const growth = (peakMb - mid.rssMb) / mid.rssMb
    return { phase, midpointMb: mid.rssMb, peakAfterMidpointMb: peakMb, growthPercent: Math.round(growth * 1000) / 10, flat: peakMb - mid.rssMb <= Math.max(64, mid.rssMb * 0.1) }
  })
  const plateau = memory.every((m) => m.flat)
  const summary = {
    calls: single.calls + threaded.calls,
    failures: single.failures + threaded.failures,
    firstFailure: single.firstFailure ?? threaded.firstFailure ?? null,
    singleSeconds: Math.round(singleSeconds),
    threadsSeconds: Math.round(threadsSeconds),
    memory,
    rssPeakMb: Math.max(...samples.map((s) => s.rssMb)),
    rssEndMb: samples[samples.length - 1].rssMb,
    plateau,
  }
  console.log(args.json ? JSON.stringify(summary) : summary)
  process.exitCode = summary.failures === 0 && plateau ? 0 : 1
}

if (isMainThread) {
  try {
    await main()
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
} else {
  const { calls: count, seed, every } = workerData as { calls: number; seed: number; every: number }
  const progress = await run(count, seed, every, (p) => parentPort?.postMessage({ progress: p, cache: cacheSize(), done: false }))
  rmSync(scratch, { recursive: true, force: true })
  parentPort?.postMessage({ progress, cache: cacheSize(), done: true })
}
