// The program the runtime smoke test runs under Node, Bun and Deno alike (scripts/runtime-smoke.mjs):
// loads context-trim's loader (index.js at the repository root) the way a CommonJS consumer
// does, trims every transcript named on the command line with each strategy at half of its
// size, and prints what came back as JSON. The three outputs must be byte-identical.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename } from 'node:path'

const require = createRequire(import.meta.url)
const ct = require('../index.js')

const report = []
for (const file of process.argv.slice(2)) {
  const messages = JSON.parse(readFileSync(file, 'utf8'))
  const before = ct.estimateTokens(messages)
  const targetTokens = Math.floor(before / 2)
  const priority = ct.trimByPriority(messages, { targetTokens })
  const placeholders = ct.trimWithPlaceholders(messages, { targetTokens, summarizeDropped: true, insertSummary: true })
  const truncated = ct.truncateOldToolOutputs(messages)
  report.push({
    transcript: basename(file),
    before,
    targetTokens,
    trimByPriority: priority,
    trimWithPlaceholders: placeholders,
    trimConversation: ct.trimConversation(messages, targetTokens),
    trimByAge: ct.trimByAge(messages, targetTokens),
    applyMaxContextTokens: ct.applyMaxContextTokens(messages, targetTokens),
    truncateOldToolOutputs: truncated,
    deduplicateToolResults: ct.deduplicateToolResults(messages, { deduplicationThreshold: 0 }),
    after: [priority.messages, placeholders.messages, truncated].map((m) => ct.estimateTokens(m)),
    problems: ct.validateConversation(placeholders.messages),
  })
}
process.stdout.write(`${JSON.stringify(report)}\n`)
