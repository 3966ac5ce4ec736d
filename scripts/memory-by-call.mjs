// Memory of one family of calls alone: runs it `calls` times on transcript pieces with both
// caches disabled (so no cache can explain growth) and prints RSS and JS heap, after a GC, at
// each quarter. Set TURN=1 to let the event loop turn every 100 calls (native finalizers, e.g.
// of ContextWindow and FileTracker objects, run only then), CACHES=1 to keep the caches on (with
// the `churn` family, which reads fresh copies every call, the message cache goes through its
// generation swaps).
//
//   npm run build && node --expose-gc scripts/memory-by-call.mjs <family> [calls]
//   families: sync async maxAsync truncAsync window dedup dedupAsync trunc placeholders conv
//             max repair validate tracker classify prune rolling tagged churn
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const ct = require('../index.js')
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const [family, count = '40000'] = process.argv.slice(2)
const calls = Number(count)
if (!global.gc) throw new Error('run with node --expose-gc')

if (!process.env.CACHES) {
  ct.setMessageCacheCapacity(0)
  ct.setTokenCacheCapacity(0)
}
const dir = join(root, 'samples', 'transcripts')
const transcripts = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')))
const pieces = transcripts.flatMap((t) => [t.slice(0, 20), t.slice(10, 40), t.slice(5, 15)])
const scratch = mkdtempSync(join(tmpdir(), 'context-trim-memory-'))
const pruner = new ct.ContextPruner({ archivePath: join(scratch, 'a.md'), maxTokens: 4000, keepRecentMessages: 3 })
const rolling = new ct.RollingContext({ enabled: true, config: { maxAge: 1, maxTokensPerOutput: 200 } })

const families = {
  sync: (m) => ct.trimByPriority(m, { targetTokens: 2000 }),
  async: (m) => ct.trimByPriorityAsync(m, { targetTokens: 2000 }),
  maxAsync: (m) => ct.applyMaxContextTokensAsync(m, 2000),
  truncAsync: (m) => ct.truncateOldToolOutputsAsync(m, {}),
  window: (m) => {
    const w = new ct.ContextWindow()
    w.append(m)
    return w.trim({ targetTokens: 2000 })
  },
  dedup: (m) => ct.deduplicateToolResults(m, { deduplicationThreshold: 0 }),
  dedupAsync: (m) => ct.deduplicateToolResultsAsync(m, { deduplicationThreshold: 0 }),
  trunc: (m) => ct.truncateOldToolOutputs(m, { maxAge: 1, maxTokensPerOutput: 200 }),
  placeholders: (m) => ct.trimWithPlaceholders(m, { targetTokens: 1500, summarizeDropped: true }),
  conv: (m) => ct.trimConversation(m, 1500),
  max: (m) => ct.applyMaxContextTokens(m, 1500),
  repair: (m) => ct.repairConversation(m),
  validate: (m) => ct.validateConversation(m),
  tracker: (m) => ct.FileTracker.fromMessages(m).getModifiedFiles().size,
  classify: (m) => ct.classifyMessage(m[3]),
  prune: (m) => pruner.prune(m, { currentTokens: 5000, maxTokens: 2000 }),
  rolling: (m) => rolling.prepare(m),
  tagged: (m) => ct.tagMessagesWithStep(m),
  churn: (m) => {
    const copy = structuredClone(m)
    ct.trimByPriority(copy, { targetTokens: 2000 })
    ct.truncateOldToolOutputs(copy)
    return ct.deduplicateToolResults(copy, { deduplicationThreshold: 0 })
  },
}
const call = families[family]
if (!call || !Number.isInteger(calls) || calls < 4) {
  throw new Error(`usage: memory-by-call.mjs <${Object.keys(families).join('|')}> [calls >= 4]`)
}
const report = (i) => {
  global.gc()
  const m = process.memoryUsage()
  const cache = ct.messageCacheStats()
  console.log(`${family} ${i} calls  rss ${Math.round(m.rss / 1048576)} MB  heap ${Math.round(m.heapUsed / 1048576)} MB  message cache ${cache.entries} (${Math.round(cache.bytes / 1048576)} MB est.)`)
}
try {
  for (let i = 0; i < calls; i++) {
    await call(pieces[i % pieces.length])
    if (process.env.TURN && i % 100 === 0) await new Promise(setImmediate)
    if (i % Math.floor(calls / 4) === 0) report(i)
  }
  report(calls)
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
