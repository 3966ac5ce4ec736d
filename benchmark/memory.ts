/**
 * Memory over many calls on distinct histories (issue 7): the addon's caches fill up to their
 * bounds and then evict, so the process's RSS must level off. Run by bench.ts in a child process
 * (a fresh heap, nothing else allocated), or alone:
 * `node --import @oxc-node/core/register benchmark/memory.ts [calls]`. Prints one JSON line.
 *
 * Every call gets a history of its own (8 messages whose texts are unique to the call: a task,
 * two tool calls with their results, replies), so no call is answered from a cache: each one
 * parses, counts and caches new messages. The calls cycle through `trimByPriority`,
 * `truncateOldToolOutputs` and `estimateTokens`.
 */
import { createRequire } from 'node:module'

import type { Message } from '../index.js'

const require = createRequire(import.meta.url)
const ct = require('../index.js') as typeof import('../index.js')

const calls = Number(process.argv[2] ?? 100_000)
const every = Math.max(1, Math.floor(calls / 10))

/** A history no other call sees: every text carries the call's number. */
function history(n: number): Message[] {
  const id = (k: number) => `call_${n}_${k}`
  const output = (k: number) => `${'line of output '.repeat(20)}\n`.repeat(4) + `result ${n}.${k}`
  return [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: `Task ${n}: fix the failing test in module ${n % 97}.` },
    { role: 'assistant', content: null, tool_calls: [{ id: id(1), type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/m${n}.ts` }) } }] },
    { role: 'tool', tool_call_id: id(1), content: output(1) },
    { role: 'assistant', content: null, tool_calls: [{ id: id(2), type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: `npm test -- ${n}` }) } }] },
    { role: 'tool', tool_call_id: id(2), content: output(2) },
    { role: 'assistant', content: `Fixed module ${n}.` },
    { role: 'user', content: `Thanks (${n}).` },
  ]
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
const samples: Array<{ calls: number; rssMb: number; heapMb: number; tokenCache: number; messageCache: number }> = []
const started = performance.now()
for (let n = 1; n <= calls; n++) {
  const messages = history(n)
  switch (n % 3) {
    case 0:
      ct.trimByPriority(messages, { targetTokens: 200 })
      break
    case 1:
      ct.truncateOldToolOutputs(messages, { maxAge: 0, smallOutputTokens: 0 })
      break
    default:
      ct.estimateTokens(messages)
  }
  if (n % every === 0) {
    const m = process.memoryUsage()
    samples.push({
      calls: n,
      rssMb: mb(m.rss),
      heapMb: mb(m.heapUsed),
      tokenCache: ct.tokenCacheStats().entries,
      messageCache: ct.messageCacheStats().entries,
    })
  }
}
console.log(
  JSON.stringify({
    calls,
    seconds: Math.round((performance.now() - started) / 100) / 10,
    tokenCacheCapacity: ct.tokenCacheStats().capacity,
    messageCacheCapacity: ct.messageCacheStats().capacity,
    samples,
  }),
)
