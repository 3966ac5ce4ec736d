/**
 * What trimming costs a provider's prompt cache, measured on the bundled transcripts:
 *
 *   node --import @oxc-node/core/register examples/prompt-cache-budget.ts [transcript.json]
 *
 * Each real run is replayed one model call at a time (the history up to each assistant
 * message). For every policy, a request's *cached* tokens are those of the longest run of
 * leading messages identical to the previous request's (what a provider's prefix cache can
 * reuse); the rest is processed afresh. The price model is Anthropic's: a cache read costs 0.1
 * of an input token, a cache write 1.25 (OpenAI's automatic caching writes for free and reads
 * at 0.5 or less: the ranking is the same). The figures of docs/prompt-caching.md come from
 * this script.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { estimateMessageTokens, estimateTokens, trimWithPlaceholders, truncateOldToolOutputs } from '../index.js'
import type { Message } from '../index.js'

export const CACHE_READ = 0.1
export const CACHE_WRITE = 1.25

/** A policy: given the history before a model call, and the previous request, what is sent. */
export type Policy = (history: Message[], previous: Message[] | undefined) => Message[]

/** The policies compared, for a budget of `budget` tokens. */
export function policies(budget: number): Record<string, Policy> {
  const low = Math.floor(budget * 0.7)
  return {
    'no trimming': (history) => history,
    'trim every call to the budget': (history) => trimWithPlaceholders(history, { targetTokens: budget }).messages,
    // Re-plan points a quarter of the budget apart: between two points the earlier decisions
    // stand and new messages are appended, with no state kept between calls.
    'trim every call, replanEvery budget/4': (history) =>
      trimWithPlaceholders(history, { targetTokens: budget, replanEvery: Math.floor(budget / 4) }).messages,
    'truncate old tool outputs every call': (history) => truncateOldToolOutputs(history),
    // Trim only when the request would exceed the budget, and then down to 70% of it; between
    // two trims, new messages are appended to the last request, so its prefix stays cached.
    'high/low-water marks (100% / 70%)': (history, previous) => {
      if (previous) {
        const appended = [...previous, ...history.slice(lastOriginal(previous, history) + 1)]
        if (estimateTokens(appended) <= budget) return appended
      }
      return estimateTokens(history) <= budget ? history : trimWithPlaceholders(history, { targetTokens: low }).messages
    },
  }
}

/** The index in `history` of the last message of `sent` (a kept message is the same object). */
function lastOriginal(sent: Message[], history: Message[]): number {
  for (let i = sent.length - 1; i >= 0; i--) {
    const j = history.indexOf(sent[i])
    if (j !== -1) return j
  }
  return -1
}

/** One policy's totals over a run. */
export interface PolicyCost {
  requests: number
  /** Tokens sent, summed over requests. */
  sent: number
  /** Of which read from the cache. */
  cached: number
  /** The largest request. */
  largest: number
  /** Input cost in input-token units: cached × CACHE_READ + the rest × CACHE_WRITE. */
  cost: number
}

/** Replays `transcript` under `policy`. */
export function replay(transcript: Message[], policy: Policy): PolicyCost {
  const total: PolicyCost = { requests: 0, sent: 0, cached: 0, largest: 0, cost: 0 }
  let previous: Message[] | undefined
  transcript.forEach((m, i) => {
    if (m.role !== 'assistant' || i === 0) return
    const sent = policy(transcript.slice(0, i), previous)
    const tokens = estimateTokens(sent)
    const cached = previous ? commonPrefixTokens(previous, sent) : 0
    total.requests++
    total.sent += tokens
    total.cached += cached
    total.largest = Math.max(total.largest, tokens)
    total.cost += cached * CACHE_READ + (tokens - cached) * CACHE_WRITE
    previous = sent
  })
  return total
}

/** The tokens of the leading messages that `a` and `b` share (same content, same order). */
function commonPrefixTokens(a: Message[], b: Message[]): number {
  let tokens = 0
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i] && JSON.stringify(a[i]) !== JSON.stringify(b[i])) break
    tokens += estimateMessageTokens(b[i])
  }
  return tokens
}

const transcriptsDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'samples', 'transcripts')

function main(): void {
  const files = process.argv[2] ? [process.argv[2]] : readdirSync(transcriptsDir).filter((f) => f.endsWith('.json')).map((f) => join(transcriptsDir, f))
  for (const file of files.sort()) {
    const transcript = JSON.parse(readFileSync(file, 'utf8')) as Message[]
    const budget = Math.floor(estimateTokens(transcript) / 2)
    console.log(`\n${basename(file)}: ${estimateTokens(transcript)} tokens at the end; budget ${budget}`)
    console.log(`  ${'policy'.padEnd(38)} ${'requests'.padStart(8)} ${'sent'.padStart(8)} ${'cached'.padStart(7)} ${'largest'.padStart(8)} ${'cost'.padStart(8)}`)
    for (const [name, policy] of Object.entries(policies(budget))) {
      const c = replay(transcript, policy)
      const share = `${Math.round((100 * c.cached) / c.sent)}%`
      console.log(`  ${name.padEnd(38)} ${String(c.requests).padStart(8)} ${String(c.sent).padStart(8)} ${share.padStart(7)} ${String(c.largest).padStart(8)} ${String(Math.round(c.cost)).padStart(8)}`)
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main()
}
