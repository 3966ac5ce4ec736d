import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import test from 'ava'

import { simulate, simulateAsync } from '../index.js'
import type { Message, SimulateOptions, CacheAwareTrimmerOptions, SimulatedPolicy } from '../index.js'
import type { CodedError } from './helpers.js'
import { buildMessages as replayedSession } from '../benchmark/data.js'

const cli = join(dirname(fileURLToPath(import.meta.url)), '..', 'cli', 'context-trim.mjs')

const text = (role: Message['role'], c: string, chars: number): Message => ({ role, content: c.repeat(chars) })

/**
 * With the approximate encoding (a token per 4 characters) a message is 3 tokens of framing, its
 * role's tokens (system 2, user 1, assistant 3) and its content's; a request adds 3 of priming.
 */
const small: Message[] = [
  text('system', 'x', 40), // 3 + 2 + 10 = 15
  text('user', 'y', 36), // 3 + 1 + 9 = 13
  text('assistant', 'a', 8), // 3 + 3 + 2 = 8
  text('user', 'z', 16), // 3 + 1 + 4 = 8
  text('assistant', 'b', 8), // 8
  text('user', 'w', 20), // 3 + 1 + 5 = 9
  text('assistant', 'c', 8), // 8
]

/** (sent, cached, written) per turn. */
const tokens = (p: SimulatedPolicy) => p.turns.map((t) => [t.inputTokens, t.cachedTokens, t.writtenTokens])

test('the arithmetic of a hand-computed session', (t) => {
  const sim = simulate(small, { contextWindow: 100, encoding: 'approximate', strategy: 'age' })
  t.like(sim, { turns: 3, contextWindow: 100, strategy: 'age', pricing: { input: 3, cacheRead: 0.3, cacheWrite: 3.75 } })
  t.deepEqual(sim.policies.map((p) => p.policy), ['none', 'every-turn', 'high-low', 'dedup'])
  for (const p of sim.policies) {
    // Turn 1 sends [0, 1]: 15 + 13 + 3 = 31. Turn 2 adds 8 + 8: 47, of which [0, 1] (28) was
    // the previous request. Turn 3 adds 8 + 9: 64, of which [0..3] (44) was.
    t.deepEqual(tokens(p), [[31, 0, 31], [47, 28, 19], [64, 44, 20]])
    t.deepEqual(p.turns.map((turn) => turn.replyIndex), [2, 4, 6])
    t.deepEqual(p.turns.map((turn) => turn.messages), [2, 4, 6])
    // $0.30 a cached token, $3.75 a written one, per million.
    const expected = [31 * 3.75, 28 * 0.3 + 19 * 3.75, 44 * 0.3 + 20 * 3.75]
    p.turns.forEach((turn, i) => t.true(Math.abs(turn.cost * 1e6 - expected[i]) < 1e-9))
    t.true(Math.abs(p.turns[2].cumulativeCost * 1e6 - 284.1) < 1e-9)
    t.like(p.totals, { inputTokens: 142, cachedTokens: 72, writtenTokens: 70, overWindowTurns: 0, replans: 0, maxInputTokens: 64 })
    t.true(Math.abs(p.totals.cachedFraction - 72 / 142) < 1e-12)
    t.true(Math.abs(p.totals.costWithoutCache * 1e6 - 142 * 3) < 1e-9)
  }
})

test('the arithmetic when the policies trim', (t) => {
  const sim = simulate(small, { contextWindow: 50, encoding: 'approximate', strategy: 'age', pricing: 'openai' })
  const [none, every, highLow, dedup] = sim.policies
  // No trimming: turn 3 (64 tokens) is over the window.
  t.deepEqual(none.turns.map((turn) => turn.overWindow), [false, false, true])
  // Every turn, oldest first to 50: turn 3 drops [1] and [2] and sends [0, 3, 4, 5] = 43, of
  // which only [0] (15) starts the previous request.
  t.deepEqual(tokens(every), [[31, 0, 31], [47, 28, 19], [43, 15, 28]])
  // High/low (high 42, low 30): turn 2 trims to [0, 3] = 26; turn 3 is [0, 3, 4, 5] = 43 > 42
  // and trims to [0, 5] = 27.
  t.deepEqual(tokens(highLow), [[31, 0, 31], [26, 15, 11], [27, 15, 12]])
  t.deepEqual(highLow.turns.map((turn) => turn.decision), ['kept', 'trimmed', 'trimmed'])
  t.is(none.turns[0].decision, undefined)
  // Deduplication finds nothing superseded in plain text: what none sends, over the window too.
  t.deepEqual(tokens(dedup), tokens(none))
  t.is(dedup.totals.overWindowTurns, 1)
  // OpenAI: $1.25 a cached token, $2.50 an uncached one, per million.
  t.true(Math.abs(every.totals.cost * 1e6 - (0 * 1.25 + 31 * 2.5 + 28 * 1.25 + 19 * 2.5 + 15 * 1.25 + 28 * 2.5)) < 1e-9)
  // A custom table and a subset of policies, in the order asked.
  const custom = simulate(small, { contextWindow: 50, encoding: 'approximate', strategy: 'age', pricing: { input: 1, cacheRead: 0, cacheWrite: 1 }, policies: ['high-low', 'none'] })
  t.deepEqual(custom.policies.map((p) => p.policy), ['high-low', 'none'])
  t.true(Math.abs(custom.policies[0].totals.cost * 1e6 - (31 + 11 + 12)) < 1e-9)
})

test('simulateAsync resolves to what simulate returns', async (t) => {
  const options = { contextWindow: 50, encoding: 'approximate', strategy: 'age' } as const
  t.deepEqual(await simulateAsync(small, options), simulate(small, options))
  await t.throwsAsync(async () => simulateAsync(small, { contextWindow: 0 }), { instanceOf: TypeError, message: 'contextWindow: must be an integer of at least 1, got 0' })
})

test('invalid simulate options are INVALID_OPTION type errors naming the option', (t) => {
  const cases: Array<[unknown, string]> = [
    [{ contextWindow: 100, pricing: 'gemini' }, 'pricing: must be anthropic, openai or a price table, got "gemini"'],
    [{ contextWindow: 100, pricing: 3 }, 'pricing: must be anthropic, openai or a price table, got number'],
    [{ contextWindow: 100, pricing: { input: 1, cacheRead: -1, cacheWrite: 1 } }, 'pricing.cacheRead: must be a non-negative number of dollars per million tokens, got -1'],
    [{ contextWindow: 100, policies: ['none', 'lru'] }, 'policies[1]: must be one of none, every-turn, high-low, dedup, got "lru"'],
    [{ contextWindow: 100, everyTurnBudget: 0 }, 'everyTurnBudget: must be an integer of at least 1, got 0'],
    [{ contextWindow: 100, lowWater: 0.9 }, 'lowWater: must be a fraction of the window in [0, highWater = 0.85], got 0.9'],
  ]
  for (const [options, message] of cases) {
    const err = t.throws(() => simulate(small, options as CacheAwareTrimmerOptions & SimulateOptions), { instanceOf: TypeError }) as CodedError
    t.is(err.message, message)
    t.is(err.code, 'INVALID_OPTION')
  }
})

test('on the replayed 1,000-message session (128k window, Anthropic prices) high-low meets the issue targets', (t) => {
  const sim = simulate(replayedSession(1000), { contextWindow: 128_000, pricing: 'anthropic' })
  const [none, every, highLow, dedup] = sim.policies
  t.is(sim.turns, 494)
  // Never over the window.
  t.is(highLow.totals.overWindowTurns, 0)
  t.true(highLow.turns.every((turn) => turn.inputTokens <= 128_000))
  // At least 80% of all input tokens read from the cache.
  t.true(highLow.totals.cachedFraction >= 0.8, `${highLow.totals.cachedFraction}`)
  // At most half the cost of trimming every turn.
  t.true(highLow.totals.cost <= every.totals.cost / 2, `${highLow.totals.cost} vs ${every.totals.cost}`)
  // Neither sending everything nor deduplicating alone stays inside the window.
  t.true(none.totals.overWindowTurns > 300)
  t.true(dedup.totals.overWindowTurns > 0 && dedup.totals.replans > 0)
  t.true(dedup.totals.maxInputTokens < none.totals.maxInputTokens)
})

// The command line.

const dir = mkdtempSync(join(tmpdir(), 'context-trim-simulate-'))
test.after.always(() => rmSync(dir, { recursive: true, force: true }))
const sessionFile = join(dir, 'session.json')
writeFileSync(sessionFile, JSON.stringify(replayedSession(100)))

function run(...args: string[]) {
  const r = spawnSync(process.execPath, [cli, 'simulate', ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

test('context-trim simulate prints a table and plots for every policy', (t) => {
  const r = run(sessionFile, '--window', '20000')
  t.is(r.status, 0, r.stderr)
  t.regex(r.stdout, /^context-trim simulate .*session\.json\n {2}49 turns · window 20,000 tokens · strategy priority\n/)
  for (const policy of ['every-turn', 'high-low']) t.regex(r.stdout, new RegExp(`\\n  ${policy} +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9.]+% +\\$[0-9.]+ +[0-9.]+x +never `))
  // A policy that sends requests over the window (refused by the provider) has no cost.
  t.regex(r.stdout, /\n {2}none +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9.]+% +invalid +- +[0-9]+ refused +[0-9,]+ +[0-9,]+ +invalid\n/)
  t.regex(r.stdout, /\ninvalid: none \([0-9]+ turns\)(?:, dedup \([0-9]+ turns?\))? sent requests over the 20,000-token window, which the provider refuses/)
  t.regex(r.stdout, /Tokens sent per turn[^\n]*\n {2}none {8}[▁▂▃▄▅▆▇█!]{49}\n/)
  t.regex(r.stdout, /Cumulative cost[^\n]*\n {2}none +[▁▂▃▄▅▆▇█]{49} invalid \([0-9]+ refused\)\n {2}every-turn +[▁▂▃▄▅▆▇█]{49} \$[0-9.]+\n/)
})

test('context-trim simulate --json prints what simulate returns, and --html writes a page with SVG charts', (t) => {
  const html = join(dir, 'report.html')
  const r = run(sessionFile, '--window=20000', '--strategy', 'age', '--pricing', 'openai', '--price-cache-read', '0.25', '--json', '--html', html)
  t.is(r.status, 0, r.stderr)
  const expected = simulate(replayedSession(100), { contextWindow: 20_000, strategy: 'age', pricing: { input: 2.5, cacheRead: 0.25, cacheWrite: 2.5 } })
  t.deepEqual(JSON.parse(r.stdout), JSON.parse(JSON.stringify(expected)))
  const page = readFileSync(html, 'utf8')
  t.is(page.match(/<svg /g)?.length, 3)
  t.is(page.match(/<polyline /g)?.length, 12)
  t.true(page.includes('<td><span class="key" style="background:#2e7d32"></span>high-low</td>'))
  t.true(page.trimEnd().endsWith('</html>'))
})

test('context-trim simulate reports usage errors with status 2 and bad input with status 1', (t) => {
  const usage: Array<[string[], string]> = [
    [[], 'context-trim: simulate takes one file, got 0 (see context-trim --help)\n'],
    [[sessionFile, '--bogus'], 'context-trim: unknown option --bogus for simulate (see context-trim --help)\n'],
    [[sessionFile, '--window', 'big'], 'context-trim: --window must be an integer of at least 1, got "big" (see context-trim --help)\n'],
    [[sessionFile, '--window', '-1'], 'context-trim: --window must be an integer of at least 1, got "-1" (see context-trim --help)\n'],
    [[sessionFile, '--window', '0'], 'context-trim: --window must be an integer of at least 1, got "0" (see context-trim --help)\n'],
    [[sessionFile, '--every-turn-budget', '0'], 'context-trim: --every-turn-budget must be an integer of at least 1, got "0" (see context-trim --help)\n'],
    [[sessionFile, '--pricing', 'gemini'], 'context-trim: --pricing must be one of anthropic, openai, got "gemini" (see context-trim --help)\n'],
    [[sessionFile, '--json=yes'], 'context-trim: --json takes no value (see context-trim --help)\n'],
  ]
  for (const [args, stderr] of usage) {
    const r = run(...args)
    t.is(r.status, 2)
    t.is(r.stderr, stderr)
  }
  const bad = join(dir, 'bad.json')
  writeFileSync(bad, JSON.stringify([{ role: 'robot', content: 'x' }]))
  const r = run(bad)
  t.is(r.status, 1)
  t.is(r.stderr, `context-trim: ${bad}: messages[0].role: must be one of system, developer, user, assistant, tool, got "robot"\n`)
  // Values the addon refuses are usage errors naming the flag.
  const refused: Array<[string[], string]> = [
    [['--strategy', 'lru'], '--strategy must be one of priority, placeholders, truncate, roles, age, got "lru"'],
    [['--high', '0.5'], '--low must be a fraction of the window in [0, --high = 0.5], got 0.6'],
    [['--low', '0.9'], '--low must be a fraction of the window in [0, --high = 0.85], got 0.9'],
    [['--policies', 'none,lru'], '--policies must be one of none, every-turn, high-low, dedup, got "lru"'],
  ]
  for (const [args, message] of refused) {
    const r = run(sessionFile, ...args)
    t.is(r.status, 2)
    t.is(r.stderr, `context-trim: ${message} (see context-trim --help)\n`)
  }
})

test('the simulate page marks a policy over the window invalid, and its axes have round ticks', async (t) => {
  const html = join(dir, 'ticks.html')
  const r = run(sessionFile, '--window', '20000', '--html', html)
  t.is(r.status, 0, r.stderr)
  const page = readFileSync(html, 'utf8')
  t.regex(page, /high-low<\/td>(?:<td>[^<]*<\/td>){4}<td>\$[0-9.]+<\/td>/)
  t.regex(page, /none<\/td>(?:<td>[^<]*<\/td>){4}<td>invalid<\/td><td>-<\/td><td>[0-9]+ refused<\/td>/)
  t.true(page.includes('<p class="invalid">invalid: none ('))
  // Per chart: ticks from 0 in equal steps of 1, 2 or 5 times a power of ten.
  const charts = page.split('<svg ').slice(1)
  t.is(charts.length, 3)
  for (const chart of charts) {
    const values = [...chart.matchAll(/text-anchor="end">([^<]+)</g)].map((m) => m[1]).filter((label) => !label.startsWith('window')).map((label) => Number(label.replace(/[$,%]/g, '')))
    t.is(values[0], 0)
    const step = values[1] - values[0]
    const mantissa = Number((step / 10 ** Math.floor(Math.log10(step))).toPrecision(6))
    t.true([1, 2, 5].includes(mantissa), String(values))
    values.forEach((v, k) => t.true(Math.abs(v - k * step) < step / 1000, String(values)))
  }
  const module = '../cli/simulate.mjs'
  const { roundTicks } = await import(module)
  t.deepEqual(roundTicks(21_998), [0, 5000, 10_000, 15_000, 20_000, 25_000])
  t.deepEqual(roundTicks(1), [0, 0.2, 0.4, 0.6, 0.8, 1])
  t.deepEqual(roundTicks(0.3), [0, 0.1, 0.2, 0.3])
  t.deepEqual(roundTicks(0), [0, 1])
})
