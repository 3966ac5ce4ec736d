import test from 'ava'

import type { Message } from '../index.js'
import { loadCounter, messageTokens } from '../benchmark/baselines/counters.js'
import { SpanIndex } from '../benchmark/baselines/spanIndex.js'
import { buildMessages, contentBytes } from '../benchmark/data.js'
import { decisions, describe, differences } from '../benchmark/decisions.js'
import { familyOf } from '../benchmark/recall.js'
import { duration, percentile, sampleTurns, spreadOrder } from '../benchmark/stats.js'
import { ct, transcripts } from './helpers.js'

test('benchmark sessions are deterministic, open with the one system message and repeat no tool-call id across replays', (t) => {
  const a = buildMessages(700)
  t.deepEqual(a, buildMessages(700))
  t.is(a.length, 700)
  t.deepEqual(
    a.flatMap((m, i) => (m.role === 'system' ? [i] : [])),
    [0],
  )
  // An id repeats only where a transcript itself repeats it (sweagent-marshmallow does).
  const repeated = (ids: string[]) => [...new Set(ids.filter((id, k) => ids.indexOf(id) !== k))]
  const sourceRepeats = new Set(transcripts().flatMap(([, ms]) => repeated(ms.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)))))
  const sessionRepeats = repeated(a.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)))
  t.true(sessionRepeats.length > 0)
  t.deepEqual(
    sessionRepeats.filter((id) => !sourceRepeats.has(id.replace(/~\d+$/, ''))),
    [],
  )
  // Every tool result answers a call made before it.
  const seen = new Set<string>()
  for (const m of a) {
    for (const c of m.tool_calls ?? []) seen.add(c.id)
    if (m.role === 'tool') t.true(seen.has(m.tool_call_id!), m.tool_call_id)
  }
  // The second round of replays repeats no text of the first.
  const texts = new Set(a.slice(0, 270).map((m) => m.content).filter((c) => typeof c === 'string' && c.length >= 256))
  t.false(a.slice(300).some((m) => texts.has(m.content)))
  t.true(contentBytes(a) > 500_000)
})

test('the TypeScript baselines count every message exactly as estimateMessageTokens does', (t) => {
  const counter = loadCounter('gpt-tokenizer')
  const messages = buildMessages(300)
  const differing = messages.filter((m) => messageTokens(counter, m) !== ct.estimateMessageTokens(m))
  t.deepEqual(differing, [])
})

test('the span index finds exactly the spans a naive scan finds, code points and tags included', (t) => {
  const indexed: Array<[string, number]> = [
    ['fn main() { println!("héllo wörld"); } // 東京 🚀 end', 5],
    ['line one\nline two\nline three', 9],
    ['short', 12],
  ]
  const probes = ['xx println!("héllo wörld"); yy', 'zz line two\nline three zz', 'line', '東京 🚀 end', 'nothing in common', 'short']
  const naive = (text: string, min: number, bound: number) => {
    const cps = Array.from(text)
    for (let i = 0; i + min <= cps.length; i++) {
      const w = cps.slice(i, i + min).join('')
      if (indexed.some(([h, tag]) => tag > bound && h.includes(w))) return true
    }
    return false
  }
  for (const min of [1, 4, 8, 12, 20]) {
    const index = new SpanIndex(min)
    for (const [text, tag] of indexed) index.add(text, tag)
    for (const probe of probes) {
      for (const bound of [0, 5, 8, 9, 11, 12]) {
        const found = index.sharedWindows(probe).some((w) => index.tags(w).some((tag) => tag > bound))
        t.is(found, naive(probe, min, bound), `min ${min}, bound ${bound}, ${probe}`)
      }
    }
  }
})

test('decisions are read from an output by identity, and differences name the indices', (t) => {
  const input: Message[] = [
    { role: 'user', content: 'a' },
    { role: 'assistant', content: null, tool_calls: [{ id: '1', function: { name: 'x' } }] },
    { role: 'tool', tool_call_id: '1', content: 'long' },
    { role: 'tool', tool_call_id: '2', content: 'longer' },
    { role: 'user', content: 'b' },
  ]
  const output: Message[] = [
    input[0],
    input[1],
    { ...input[2], content: '[content truncated - 6 steps ago]', _truncatedAt: 6 },
    { ...input[3], content: 'lo … er', _cutTokens: 3 },
  ]
  const got = decisions(input, output)
  t.deepEqual(got, ['keep', 'keep', 'placeholder', 'cut', 'drop'])
  const diffs = differences(input, ['keep', 'drop', 'placeholder', 'cut', 'drop'], got)
  t.is(describe(diffs), '1 message(s) differ: #1 assistant (expected drop, got keep)')
  t.throws(() => decisions(input, [input[4], input[0]]), { message: '1 output messages match no input message (reordered or invented)' })
})

test('turn samples are spread over the session, percentiles interpolate and durations keep three digits', (t) => {
  t.deepEqual(sampleTurns(100, 4), [13, 38, 63, 88])
  t.deepEqual(spreadOrder(1000, 7), [500, 250, 750, 125, 375, 625, 875])
  t.deepEqual(spreadOrder(3, 10).sort(), [1, 2, 3])
  t.is(percentile([4, 1, 3, 2], 50), 2.5)
  t.is(percentile([1, 2, 3, 4, 5], 100), 5)
  t.deepEqual(
    [0.0123, 4.567, 7890, 750_000, 7_630_000].map(duration),
    ['12.3 µs', '4.57 ms', '7.89 s', '12.5 min', '2.12 h'],
  )
})

test('the recall benchmark tells a run\'s agent family by its file name, else by the tools it calls most', (t) => {
  const calling = (...names: string[]): Message[] =>
    names.map((name, k) => ({ role: 'assistant', content: null, tool_calls: [{ id: `c${k}`, type: 'function', function: { name, arguments: '{}' } }] }))
  t.is(familyOf('codex-moonmind-019a7ae6', []), 'Codex CLI')
  t.is(familyOf('claudecode-todoapp-sidechain-60dade70', []), 'Claude Code')
  t.is(familyOf('sweagent-ctf-katy', []), 'SWE-agent')
  t.is(familyOf('mini-swe-agent-django-1', []), 'mini-swe-agent')
  t.is(familyOf('run-1', calling('Read', 'Edit', 'shell')), 'Claude Code')
  t.is(familyOf('run-2', calling('shell_command', 'apply_patch', 'Read')), 'Codex CLI')
  t.is(familyOf('run-3', calling('view', 'bash')), 'opencode')
  t.is(familyOf('run-4', calling('my_tool')), 'other')
})
