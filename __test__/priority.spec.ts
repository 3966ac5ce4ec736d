import test from 'ava'

import { toAiSdk, toAnthropic } from './convert.js'
import { ct, snapshot, transcript, transcripts } from './helpers.js'
import type { Message, TrimResult } from '../index.js'

const { ContentPriority: P } = ct

/** Each message's priority as trimByPriority sees it. */
function priorities(messages: Message[], preserveRecentTurns = 2): number[] {
  return messages.map((m, index) => ct.classifyMessage(m, { messages, index, preserveRecentTurns }).priority)
}

/** For each tool result, the index of the call it answers: the nearest earlier call with its id. */
function callOf(messages: Message[]): Map<number, number> {
  const latest = new Map<string, number>()
  const out = new Map<number, number>()
  messages.forEach((m, i) => {
    for (const c of m.tool_calls ?? []) latest.set(c.id, i)
    if (m.role === 'tool' && typeof m.tool_call_id === 'string' && latest.has(m.tool_call_id)) {
      out.set(i, latest.get(m.tool_call_id)!)
    }
  })
  return out
}

/**
 * What every budget strategy returns whatever the budget: the system messages and the last
 * message with its unit (its call and the call's other results).
 */
function anchored(messages: Message[]): Set<number> {
  const keep = new Set(messages.flatMap((m, i) => (m.role === 'system' || m.role === 'developer' ? [i] : [])))
  const last = messages.length - 1
  if (last < 0) return keep
  keep.add(last)
  const call = callOf(messages).get(last)
  if (call !== undefined) {
    keep.add(call)
    for (const [result, c] of callOf(messages)) if (c === call) keep.add(result)
  }
  return keep
}

/**
 * Maps every returned message to the index of the input message it is (the same object) or
 * replaces (a `_truncated` copy of a tool result), walking both in order: fails if the output
 * is reordered or holds a message that is not from the input.
 */
function origins(input: Message[], output: Message[]): number[] {
  const out: number[] = []
  let j = 0
  for (const o of output) {
    const copy = o._truncated === true || typeof o._cutTokens === 'number'
    const replaces = (m: Message) => copy && m.role === o.role && (o.role !== 'tool' || m.tool_call_id === o.tool_call_id)
    while (j < input.length && !(input[j] === o || replaces(input[j]))) j++
    if (j === input.length) throw new Error(`output message ${out.length} is not an input message in order`)
    out.push(j++)
  }
  return out
}

/** Every returned result answers a returned call, and every returned call keeps all its results. */
function pairingErrors(input: Message[], kept: number[]): string[] {
  const keptSet = new Set(kept)
  const calls = callOf(input)
  const errors: string[] = []
  for (const [result, call] of calls) {
    if (keptSet.has(result) && !keptSet.has(call)) errors.push(`result ${result} lost its call ${call}`)
    if (keptSet.has(call) && !keptSet.has(result)) errors.push(`call ${call} lost its result ${result}`)
  }
  return errors
}

const budgets = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]

test('ContentPriority has the seed values as a runtime enum', (t) => {
  t.deepEqual(
    [P.SYSTEM, P.AGENT_INSTRUCTIONS, P.CURRENT_TASK, P.MODIFIED_FILES, P.RECENT_TURNS, P.RECENT_FILE_READS, P.OLD_HISTORY, P.STALE_TOOL_OUTPUTS, P.SUMMARIZED],
    [100, 90, 80, 70, 60, 50, 40, 30, 20],
  )
})

// The seed's tests, ported.

test('never removes system messages', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'You are a helpful assistant' },
    { role: 'user', content: 'Hello' },
    { role: 'tool', tool_call_id: 'r1', content: 'a'.repeat(10000) },
  ]
  const result = ct.trimByPriority(messages, { targetTokens: 100, preserveRecentTurns: 1 })
  t.true(result.messages.some((m) => m.role === 'system'))
  t.is(result.messages[0], messages[0])
  // The tool result (with its tool_call_id, required since issue 42) is cut or dropped.
  t.deepEqual(result.messages.slice(0, 2), [messages[0], messages[1]])
  t.false(result.messages.includes(messages[2]))
  t.true(result.totalTokens <= 100)
})

test('preserves modified files over old reads', (t) => {
  const tracker = new ct.FileTracker()
  tracker.trackAccess('/app/edited.ts', 1, 'edit')
  tracker.trackAccess('/app/read.ts', 1, 'read')
  const messages: Message[] = [
    { role: 'system', content: 'System' },
    { role: 'tool', tool_call_id: 'r1', name: 'read_file', content: 'File: /app/edited.ts\n' + 'edited.ts content...'.repeat(100) },
    { role: 'tool', tool_call_id: 'r2', name: 'read_file', content: 'File: /app/read.ts\n' + 'read.ts content...'.repeat(100) },
  ]
  const result = ct.trimByPriority(messages, { targetTokens: 500, preserveRecentTurns: 1, fileTracker: tracker })
  t.true(result.messages.some((m) => typeof m.content === 'string' && m.content.includes('edited.ts')))
  // The old read is cut to head and tail, or dropped.
  t.false(result.messages.some((m) => typeof m.content === 'string' && m.content.includes('read.ts content...'.repeat(10))))
  t.deepEqual(result.droppedMessages.map((d) => [d.message, d.priority, d.metadata.filePath]), [[messages[2], P.RECENT_FILE_READS, '/app/read.ts']])
})

test('removes old history before recent turns', (t) => {
  const messages: Message[] = [{ role: 'system', content: 'System' }]
  for (let i = 1; i <= 11; i++) {
    messages.push({ role: 'user', content: `Old message ${i} ` + 'with some padding '.repeat(5) })
    messages.push({ role: 'assistant', content: `Old response ${i} ` + 'with some padding '.repeat(5) })
  }
  messages.push({ role: 'user', content: 'Recent message' }, { role: 'assistant', content: 'Recent response' })
  const result = ct.trimByPriority(messages, { targetTokens: 200, preserveRecentTurns: 2 })
  t.true(result.messages.some((m) => typeof m.content === 'string' && m.content.includes('Recent')))
  t.false(result.overBudget)
  // Oldest first: what is left of the old turns is a suffix of them.
  const kept = origins(messages, result.messages)
  const oldKept = kept.filter((i) => i >= 1 && i <= 22)
  t.true(oldKept.length < 22)
  t.deepEqual(oldKept, oldKept.length ? Array.from({ length: 22 - oldKept[0] + 1 }, (_, k) => oldKept[0] + k) : [])
  t.deepEqual(kept.slice(-2), [23, 24])
})

test('tracks modified files correctly', (t) => {
  const tracker = new ct.FileTracker()
  tracker.trackAccess('/app/file.ts', 1, 'read')
  tracker.trackAccess('/app/file.ts', 2, 'edit')
  t.true(tracker.wasModified('/app/file.ts'))
  t.false(tracker.wasModified('/app/other.ts'))
})

test('builds from message history', (t) => {
  const messages: Message[] = [
    { role: 'tool', tool_call_id: 'r1', name: 'create_file', content: '{"path": "/app/new.ts"}' },
    { role: 'tool', tool_call_id: 'r2', name: 'read_file', content: '{"path": "/app/existing.ts"}' },
  ]
  const tracker = ct.FileTracker.fromMessages(messages)
  t.true(tracker.wasModified('/app/new.ts'))
  t.false(tracker.wasModified('/app/existing.ts'))
})

// FileTracker.

test('FileTracker returns a Set of modified files, recent files newest first and staleness', (t) => {
  const tracker = new ct.FileTracker({ now: () => 1234 })
  tracker.trackAccess('/a', 1, 'read', 'line 1\nline 2')
  tracker.trackAccess('/b', 4, 'create')
  tracker.trackAccess('/c', 3, 'delete')
  tracker.trackAccess('/a', 5, 'read')
  const modified = tracker.getModifiedFiles()
  t.true(modified instanceof Set)
  t.deepEqual([...modified], ['/b', '/c'])
  t.deepEqual(tracker.getRecentFiles(5, 2), [
    { path: '/a', lastAccessStep: 5, lastAccessTime: 1234, wasModified: false, operation: 'read' },
    { path: '/b', lastAccessStep: 4, lastAccessTime: 1234, wasModified: true, operation: 'create' },
    { path: '/c', lastAccessStep: 3, lastAccessTime: 1234, wasModified: true, operation: 'delete' },
  ])
  t.true(tracker.isStale('/c', 5, 1))
  t.false(tracker.isStale('/c', 5, 2))
  t.true(tracker.isStale('/never', 0, 10))
  const withContent = new ct.FileTracker({ now: () => 0 })
  withContent.trackAccess('/x', 0, 'edit', 'x'.repeat(300) + '\nend')
  const [ref] = withContent.getRecentFiles(0, 0)
  t.is(ref.contentPreview, 'x'.repeat(200))
  t.is(ref.lineCount, 2)
})

test('FileTracker.fromMessages reads editor calls, SWE-agent headers and failed edits', (t) => {
  const marshmallow = ct.FileTracker.fromMessages(transcript('sweagent-marshmallow-1867-fc.json'), { now: () => 7 })
  t.deepEqual([...marshmallow.getModifiedFiles()], ['/testbed/reproduce.py', '/testbed/src/marshmallow/fields.py'])
  t.deepEqual(
    marshmallow.getRecentFiles(13, 13).map((r) => [r.path, r.operation, r.lastAccessStep, r.lastAccessTime]),
    [
      ['/testbed/src/marshmallow/fields.py', 'edit', 10, 7],
      ['/testbed/reproduce.py', 'edit', 5, 7],
      ['/testbed/setup.py', 'read', 2, 7],
    ],
  )
  // OpenHands: the failed create of /workspace/hello.py is a read, not a modification.
  const sdk = ct.FileTracker.fromMessages(transcript('openhands-sdk-hello-world.json'), { now: () => 0 })
  t.deepEqual([...sdk.getModifiedFiles()], [])
  t.deepEqual(sdk.getRecentFiles(6, 6).map((r) => [r.path, r.operation, r.lastAccessStep]), [
    ['/Users/xingyaow/Projects/OpenHands/openhands-v1-dev/agent-sdk.worktree/telemetry/hello.py', 'read', 4],
    ['hello.py', 'read', 3],
    ['/workspace/hello.py', 'read', 1],
  ])
  // str_replace_editor: only the successful insert modified command_parser.pony.
  const pony = ct.FileTracker.fromMessages(transcript('openhands-ponyc-4593.json'))
  t.deepEqual([...pony.getModifiedFiles()], ['/workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony'])
  t.false(pony.wasModified('/workspace/ponylang__ponyc__0.1/packages/cli/cli.pony'))
})

test('FileTracker validates its arguments and its clock', (t) => {
  const tracker = new ct.FileTracker()
  t.throws(() => tracker.trackAccess('/a', -1, 'read'), { instanceOf: TypeError, code: 'INVALID_ARGUMENT', message: 'step: must be an integer of at least 0, got -1' })
  t.throws(() => tracker.trackAccess('/a', 1, 'write' as never), { code: 'INVALID_ARGUMENT', message: 'operation: must be one of read, create, edit, delete, got "write"' })
  t.throws(() => tracker.trackAccess(5 as never, 1, 'read'), { code: 'INVALID_ARGUMENT', message: 'path: must be a string, got number' })
  t.throws(() => tracker.isStale('/a', NaN, 1), { code: 'INVALID_ARGUMENT', message: 'currentStep: must be an integer of at least 0, got NaN' })
  t.throws(() => tracker.getRecentFiles(1, Infinity), { code: 'INVALID_ARGUMENT', message: 'maxAge: must be an integer of at least 0, got Infinity' })
  t.throws(() => new ct.FileTracker({ now: 5 as never }), { code: 'INVALID_OPTION', message: 'now: must be a function, got number' })
  t.throws(() => new ct.FileTracker({ now: () => NaN }).trackAccess('/a', 1, 'read'), { code: 'INVALID_OPTION', message: 'now: must return a finite number or a valid Date, got NaN' })
  t.throws(() => new ct.FileTracker({ now: () => { throw new Error('clock broke') } }).trackAccess('/a', 1, 'read'), { message: 'clock broke' })
  const before = Date.now()
  const real = new ct.FileTracker()
  real.trackAccess('/a', 0, 'read')
  t.true(real.getRecentFiles(0, 0)[0].lastAccessTime >= before)
})

// Classification.

test('classifyMessage applies the rules to single messages with an explicit context', (t) => {
  t.deepEqual(ct.classifyMessage({ role: 'system', content: 'x' }).metadata, { isSystem: true })
  t.is(ct.classifyMessage({ role: 'developer', content: 'x' }).priority, P.SYSTEM)
  t.is(ct.classifyMessage({ role: 'user', content: '# AGENTS.md\nUse tabs.' }).priority, P.AGENT_INSTRUCTIONS)
  t.is(ct.classifyMessage({ role: 'user', name: 'AGENTS.md', content: 'Use tabs.' }).priority, P.AGENT_INSTRUCTIONS)
  t.is(ct.classifyMessage({ role: 'user', content: '<repo_rules>x' }).priority, P.RECENT_TURNS)
  t.is(ct.classifyMessage({ role: 'user', content: '<repo_rules>x' }, { agentInstructionMarkers: ['<repo_rules>'] }).priority, P.AGENT_INSTRUCTIONS)
  t.is(ct.classifyMessage({ role: 'user', content: 'Fix it' }, { isCurrentTask: true }).priority, P.CURRENT_TASK)
  t.is(ct.classifyMessage({ role: 'user', content: 'old' }, { messageStep: 1, currentStep: 9 }).priority, P.OLD_HISTORY)
  t.is(ct.classifyMessage({ role: 'assistant', content: 'x', _summary: true }).priority, P.SUMMARIZED)
  t.is(ct.classifyMessage({ role: 'user', content: '[context-trim summary] 12 messages about x' }).priority, P.SUMMARIZED)
  const read: Message = { role: 'tool', tool_call_id: 'r1', name: 'read_file', content: '{"path": "/a.ts", "text": "x"}' }
  t.deepEqual(ct.classifyMessage(read, { messageStep: 1, currentStep: 2 }).metadata, { filePath: '/a.ts', age: 1 })
  t.is(ct.classifyMessage(read, { messageStep: 1, currentStep: 9 }).priority, P.STALE_TOOL_OUTPUTS)
  t.is(ct.classifyMessage(read, { messageStep: 1, currentStep: 9, recentThreshold: 8 }).priority, P.RECENT_FILE_READS)
  const edited = ct.classifyMessage(read, { messageStep: 1, currentStep: 9, modifiedFiles: new Set(['/a.ts']) })
  t.is(edited.priority, P.MODIFIED_FILES)
  t.deepEqual(edited.metadata, { filePath: '/a.ts', wasModified: true })
  t.is(ct.classifyMessage(read, { modifiedFiles: ['/a.ts'] }).priority, P.MODIFIED_FILES)
  const classified = ct.classifyMessage(read)
  t.is(classified.message, read)
  t.is(classified.tokens, ct.estimateMessageTokens(read))
})

test('classifyMessage on the marshmallow transcript matches hand-checked tiers', (t) => {
  const messages = transcript('sweagent-marshmallow-1867-fc.json')
  const S = P.STALE_TOOL_OUTPUTS
  const M = P.MODIFIED_FILES
  const R = P.RECENT_TURNS
  // 0 system; 1 the issue (task); 2-3 ls; 4-5 open setup.py (read, never changed: its newest
  // view, so a recent read however old); 6-7 pip
  // install; 8-9 create reproduce.py, superseded by 10-11, the insert that shows the whole
  // file (stale); 12-13 run it; 14-15 ls; 16-17 find_file (a search, no file operation); 18-19
  // open fields.py (edited at 20-21 since: a view to copy from, no longer its latest content,
  // so a recent read); 20-21 edit fields.py (its latest content); 22-27 the last three steps
  // (run, rm, submit) are recent.
  const V = P.RECENT_FILE_READS
  t.deepEqual(priorities(messages), [P.SYSTEM, P.CURRENT_TASK, S, S, V, V, S, S, S, S, M, M, S, S, S, S, S, S, V, V, M, M, R, R, R, R, R, R])
  t.deepEqual(ct.classifyMessage(messages[19], { messages, index: 19 }).metadata, { filePath: '/testbed/src/marshmallow/fields.py', wasModified: true, age: 4 })
  t.deepEqual(ct.classifyMessage(messages[21], { messages, index: 21 }).metadata, { filePath: '/testbed/src/marshmallow/fields.py', wasModified: true })
  t.deepEqual(ct.classifyMessage(messages[5], { messages, index: 5 }).metadata, { filePath: '/testbed/setup.py', age: 11 })
})

test('classifyMessage on the OpenHands SDK transcript matches hand-checked tiers', (t) => {
  const messages = transcript('openhands-sdk-hello-world.json')
  const S = P.STALE_TOOL_OUTPUTS
  // 2-3 failed create of hello.py, the last change tried on it: the change the agent may send
  // again, a recent read however old; 4-5 pwd; 6-7 view of a relative path, rejected;
  // 8-9 view of hello.py two steps ago: a recent read; 10-11 python hello.py; 12-13 finish.
  const V = P.RECENT_FILE_READS
  t.deepEqual(priorities(messages), [P.SYSTEM, P.CURRENT_TASK, V, V, S, S, S, S, V, V, P.RECENT_TURNS, P.RECENT_TURNS, P.RECENT_TURNS, P.RECENT_TURNS])
})

test('the current task is the user message that opened the turn, not a tool error reported as user', (t) => {
  const messages = transcript('openhands-ponyc-4593.json')
  t.is(messages[26].role, 'user')
  t.is(ct.classifyMessage(messages[1], { messages, index: 1 }).priority, P.CURRENT_TASK)
  t.is(ct.classifyMessage(messages[26], { messages, index: 26 }).priority, P.OLD_HISTORY)
})

test('classifyMessage validates its context', (t) => {
  const messages = transcript('openhands-sdk-hello-world.json')
  t.throws(() => ct.classifyMessage(messages[1], { messages, index: 2 }), { code: 'INVALID_ARGUMENT', message: 'message: must be messages[index] when the context has messages' })
  t.throws(() => ct.classifyMessage(messages[1], { messages }), { code: 'INVALID_OPTION', message: 'index: is required with messages' })
  t.throws(() => ct.classifyMessage(messages[1], { messages, index: 14 }), { code: 'INVALID_OPTION', message: 'index: must be less than the number of messages (14), got 14' })
  t.throws(() => ct.classifyMessage(messages[1], { messages, index: 1, messageStep: 3 }), { code: 'INVALID_OPTION', message: 'messageStep: cannot be given with messages, which it is read from' })
  t.throws(() => ct.classifyMessage(messages[1], { index: 1 }), { code: 'INVALID_OPTION', message: 'index: can only be given with messages' })
  t.throws(() => ct.classifyMessage(messages[1], { currentStep: -2 }), { code: 'INVALID_OPTION', message: 'currentStep: must be an integer of at least 0, got -2' })
  t.throws(() => ct.classifyMessage(messages[1], { modifiedFiles: 5 as never }), { code: 'INVALID_OPTION', message: 'modifiedFiles: must be a Set or an array of strings' })
  t.throws(() => ct.classifyMessage(messages[1], 'x' as never), { code: 'INVALID_OPTION', message: 'context: must be an object, got string' })
})

// Trimming invariants on every transcript.

function checkTrim(t: import('ava').ExecutionContext, label: string, input: Message[], result: TrimResult, target: number, anchors: Set<number>) {
  const kept = origins(input, result.messages)
  t.deepEqual(pairingErrors(input, kept), [], label)
  t.is(result.totalTokens, ct.estimateTokens(result.messages), label)
  t.is(result.savedTokens, ct.estimateTokens(input) - result.totalTokens, label)
  t.is(result.summary, undefined, label)
  // The last message is returned, as it is whenever the anchors fit (else its middle may be
  // cut); the budget is met whenever the anchors fit.
  for (const i of anchors) t.true(kept.includes(i), `${label}: anchored ${i}`)
  const floor = ct.estimateTokens(input.filter((_, i) => anchors.has(i)))
  if (floor <= target || result.messages.at(-1) !== input.at(-1)) t.is(kept.at(-1), input.length - 1, `${label}: the last message`)
  if (floor <= target) {
    t.is(result.messages.at(-1), input.at(-1), `${label}: the last message as it is`)
    t.false(result.overBudget, label)
    t.true(result.totalTokens <= target, label)
  } else {
    // Only the anchors are left, cut to fit (with the task, when a further cut makes room for
    // it), or over budget.
    const task = input.findIndex((m) => m.role === 'user')
    t.deepEqual(kept.filter((i) => i !== task), [...anchors].filter((i) => i !== task).sort((a, b) => a - b), label)
    t.is(result.overBudget, result.totalTokens > target, label)
  }
  result.messages.forEach((m, k) => {
    const original = input[kept[k]]
    if (m === original) return
    if (typeof m._cutTokens === 'number') {
      // Cut to head and tail rather than dropped: the marker says how much.
      t.regex(String(m.content), /\n\n\[\.\.\. \d+ tokens cut \.\.\.\]\n\n/, label)
      return
    }
    t.is(m._truncated, true, label)
    t.is(m._originalTokens, ct.estimateMessageTokens(original), label)
    t.regex(String(m.content), /^\[(Content truncated - |File: )/, label)
  })
  const untouched = new Set(result.messages.filter((m) => !m._truncated && typeof m._cutTokens !== 'number'))
  t.deepEqual(
    result.droppedMessages.map((d) => d.message),
    input.filter((m) => !untouched.has(m)),
    label,
  )
}

test('trimByPriority and trimWithPlaceholders keep pairs, order, identity and the budget on every transcript', (t) => {
  let over = 0
  let within = 0
  for (const [name, messages] of transcripts()) {
    const before = snapshot(messages)
    const total = ct.estimateTokens(messages)
    const anchors = anchored(messages)
    for (const share of budgets) {
      const target = Math.floor(total * share)
      for (const [fn, trim] of [['trimByPriority', ct.trimByPriority], ['trimWithPlaceholders', ct.trimWithPlaceholders]] as const) {
        const result = trim(messages, { targetTokens: target })
        checkTrim(t, `${name} ${fn} ${share}`, messages, result, target, anchors)
        if (result.overBudget) over++
        else within++
      }
    }
    t.deepEqual(messages, before, `${name} not mutated`)
  }
  // Every budget of the range is met on the real transcripts: where the anchors alone exceed
  // it, they are cut, the system messages last of all (the checks above cover that branch).
  t.is(over, 0)
  t.true(within > 0)
})

test('trimming is deterministic: byte-identical JSON across two runs on every transcript', (t) => {
  for (const [name, messages] of transcripts()) {
    const total = ct.estimateTokens(messages)
    for (const share of budgets) {
      const target = Math.floor(total * share)
      const run = () =>
        JSON.stringify([
          ct.trimByPriority(messages, { targetTokens: target }),
          ct.trimWithPlaceholders(messages, { targetTokens: target }),
          ct.trimConversation(messages, target, { strategy: 'priority-based', preserveRecentTurns: 2 }),
          ct.trimConversation(messages, target, { strategy: 'age-based' }),
          ct.trimByAge(messages, target),
          messages.map((m, index) => ct.classifyMessage(m, { messages, index })),
        ])
      t.is(run(), run(), `${name} ${share}`)
    }
  }
})

test('trimByAge drops oldest units first, keeps system and the last message, and pairs', (t) => {
  for (const [name, messages] of transcripts()) {
    const before = snapshot(messages)
    const total = ct.estimateTokens(messages)
    for (const share of budgets) {
      const target = Math.floor(total * share)
      const out = ct.trimByAge(messages, target)
      const kept = origins(messages, out)
      const label = `${name} ${share}`
      t.deepEqual(pairingErrors(messages, kept), [], label)
      t.true(out.every((m) => messages.includes(m)), label)
      t.is(out[out.length - 1], messages[messages.length - 1], label)
      for (const m of messages.filter((m) => m.role === 'system')) t.true(out.includes(m), label)
      // Oldest first: the dropped messages are exactly those before the first kept non-system one.
      const firstKept = kept.find((i) => messages[i].role !== 'system')!
      t.deepEqual(kept.filter((i) => messages[i].role !== 'system'), messages.map((_, i) => i).filter((i) => i >= firstKept), label)
      const fixed = messages.filter((m, i) => m.role === 'system' || i >= messages.length - 1 || callOf(messages).get(messages.length - 1) === i)
      if (ct.estimateTokens(fixed) <= target) t.true(ct.estimateTokens(out) <= target, label)
    }
    t.deepEqual(messages, before)
  }
})

test('trimConversation runs trimWithPlaceholders or trimByAge, with the model choosing the tokenizer', (t) => {
  const messages = transcript('sweagent-ctf-i-got-id.json')
  const target = Math.floor(ct.estimateTokens(messages) / 2)
  // With rolling context's rules out of the way (nothing old enough, nothing long enough), what
  // is left is the strategy.
  const placeholder = '[content truncated - {age} steps ago, {tokens} tokens]'
  const noRolling = { maxAge: 1000, maxTokensPerOutput: 1_000_000 }
  t.deepEqual(
    ct.trimConversation(messages, target, { strategy: 'priority-based', preserveRecentTurns: 1, ...noRolling }),
    ct.trimWithPlaceholders(messages, { targetTokens: target, preserveRecentTurns: 1, placeholder, keepPlaceholders: true }).messages,
  )
  t.deepEqual(
    ct.trimConversation(messages, target, noRolling),
    ct.trimWithPlaceholders(messages, { targetTokens: target, preserveRecentTurns: 5, placeholder, keepPlaceholders: true }).messages,
  )
  t.deepEqual(ct.trimConversation(messages, target, { strategy: 'age-based', ...noRolling }), ct.trimByAge(messages, target))
  // cl100k_base counts this transcript 70 tokens lower: at 75% the cut moves by one unit.
  const high = Math.floor(ct.estimateTokens(messages) * 0.75)
  const gpt4 = ct.trimByAge(messages, high, { model: 'gpt-4' })
  t.true(ct.estimateTokens(gpt4, { model: 'gpt-4' }) <= high)
  t.is(gpt4.length, 30)
  t.is(ct.trimByAge(messages, high).length, 28)
  t.deepEqual(ct.trimConversation(messages, high, { strategy: 'age-based', model: 'gpt-4', ...noRolling }), gpt4)
})

test('placeholders are in place, keep the call and describe the file', (t) => {
  const messages = transcript('sweagent-marshmallow-1867-fc.json')
  const total = ct.estimateTokens(messages)
  // At 3,700 tokens under the whole, the view of setup.py (message 5, never changed; its newest
  // view, so a recent read) gets the seed's file placeholder, with its call just before it; the
  // pip output and the smaller stale units went first, whole.
  const result = ct.trimWithPlaceholders(messages, { targetTokens: total - 3700 })
  t.false(result.overBudget)
  const truncated = result.messages.filter((m) => m._truncated)
  t.deepEqual(truncated.map((m) => m.tool_call_id), [messages[5].tool_call_id])
  const [file] = truncated
  const at = result.messages.indexOf(file)
  t.is(result.messages[at - 1], messages[4])
  t.is(
    file.content,
    '[File: /testbed/setup.py\n  Lines: 98\n  Preview: [File: setup.py (94 lines total)]\r\n1:import re\r\n2:from setuptools import setup, find_packages\r\n3:\r\n4...\n\n  Use read_file to retrieve current content]',
  )
  t.is(file.name, 'open')
  t.is(file._originalTokens, ct.estimateMessageTokens(messages[5]))
  t.is(result.messages.find((m) => m.tool_call_id === messages[7].tool_call_id), undefined, 'the pip output is gone')
  // 100 tokens more room: the view comes back cut to head and tail instead (at least twice the
  // placeholder), which keeps more of it than a pointer does.
  const roomier = ct.trimWithPlaceholders(messages, { targetTokens: total - 3600 })
  const view = roomier.messages.find((m) => m.tool_call_id === messages[5].tool_call_id)!
  t.is(view._truncated, undefined)
  t.true(typeof view._cutTokens === 'number' && view._cutTokens > 0 && (view.content as string).startsWith('[File: setup.py (94 lines total)]'))
  t.true(ct.estimateMessageTokens(view) >= 2 * ct.estimateMessageTokens(file))
})

test('trim options are validated', (t) => {
  const messages = transcript('openhands-sdk-hello-world.json')
  const cases: Array<[() => unknown, string, string]> = [
    [() => ct.trimByPriority(messages, {}), 'INVALID_OPTION', 'targetTokens: is required'],
    [() => ct.trimByPriority(messages, { targetTokens: -1 }), 'INVALID_OPTION', 'targetTokens: must be an integer of at least 0, got -1'],
    [() => ct.trimByPriority(messages, { targetTokens: NaN }), 'INVALID_OPTION', 'targetTokens: must be an integer of at least 0, got NaN'],
    [() => ct.trimWithPlaceholders(messages, { targetTokens: Infinity }), 'INVALID_OPTION', 'targetTokens: must be an integer of at least 0, got Infinity'],
    [() => ct.trimByPriority(messages, { targetTokens: '100' as never }), 'INVALID_OPTION', 'targetTokens: must be a number, got string'],
    [() => ct.trimByPriority(messages, { targetTokens: 100, preserveRecentTurns: -1 }), 'INVALID_OPTION', 'preserveRecentTurns: must be an integer of at least 0, got -1'],
    [() => ct.trimByPriority(messages, { targetTokens: 100, fileTracker: {} as never }), 'INVALID_OPTION', 'fileTracker: must be a FileTracker, got object'],
    [() => ct.trimByPriority(messages, undefined as never), 'INVALID_OPTION', 'targetTokens: is required'],
    // The positional targetTokens is an argument, the option of the same name an option.
    [() => ct.trimConversation(messages, -5), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got -5'],
    [() => ct.trimConversation(messages, 100, { strategy: 'newest' as never }), 'INVALID_OPTION', 'strategy: must be one of age-based, priority-based, got "newest"'],
    [() => ct.trimByAge(messages, NaN), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got NaN'],
    [() => ct.trimByAge(messages, '5' as never), 'INVALID_ARGUMENT', 'targetTokens: must be an integer of at least 0, got string'],
    [() => ct.trimByPriority(5 as never, { targetTokens: 1 }), 'INVALID_MESSAGES', 'messages: must be an array, got number'],
  ]
  for (const [call, code, message] of cases) {
    t.throws(call, { instanceOf: TypeError, code, message })
  }
})

test('classifyMessages gives every message what classifyMessage gives it, on every transcript in every format', (t) => {
  const optionSets = [{}, { preserveRecentTurns: 0 }, { preserveRecentTurns: 5, recentThreshold: 1 }, { agentInstructionMarkers: ['You are'] }]
  for (const [name, openai] of transcripts()) {
    const formats: Array<[string, object[]]> = [
      ['openai', openai],
      ['anthropic', toAnthropic(openai)],
      ['ai-sdk', toAiSdk(openai)],
    ]
    for (const [format, messages] of formats) {
      const before = snapshot(messages)
      for (const options of optionSets) {
        const all = ct.classifyMessages(messages as Message[], options)
        const one = messages.map((m, index) => ct.classifyMessage(m as Message, { messages: messages as Message[], index, ...options }))
        t.deepEqual(all, one, `${name} ${format} ${JSON.stringify(options)}`)
        t.true(
          all.every((c, i) => c.message === messages[i]),
          `${name} ${format}: the caller's objects`,
        )
      }
      // Modified files given by the caller win over the ones read from the conversation.
      const read = ct.classifyMessages(messages as Message[]).find((c) => c.metadata.filePath !== undefined && !c.metadata.wasModified)
      if (read) {
        const modifiedFiles = new Set([read.metadata.filePath!])
        const all = ct.classifyMessages(messages as Message[], { modifiedFiles })
        t.deepEqual(
          all,
          messages.map((m, index) => ct.classifyMessage(m as Message, { messages: messages as Message[], index, modifiedFiles })),
        )
        t.true(all.some((c) => c.metadata.filePath === read.metadata.filePath && c.priority === P.MODIFIED_FILES))
      }
      t.deepEqual(messages, before, `${name} ${format}: not mutated`)
    }
  }
})

test('classifyMessages on an empty conversation is empty, and bad input is a coded error', (t) => {
  t.deepEqual(ct.classifyMessages([]), [])
  const messages = transcript('openhands-sdk-hello-world.json')
  const cases: Array<[() => unknown, string, string]> = [
    [() => ct.classifyMessages(5 as never), 'INVALID_MESSAGES', 'messages: must be an array, got number'],
    [() => ct.classifyMessages([{ role: 'user', content: 'x' }, 7 as never]), 'INVALID_MESSAGE', 'messages[1]: must be an object, got number'],
    [() => ct.classifyMessages(messages, { preserveRecentTurns: -1 }), 'INVALID_OPTION', 'preserveRecentTurns: must be an integer of at least 0, got -1'],
    [() => ct.classifyMessages(messages, { modifiedFiles: 5 as never }), 'INVALID_OPTION', 'modifiedFiles: must be a Set or an array of strings'],
    [() => ct.classifyMessages(messages, 'x' as never), 'INVALID_OPTION', 'options: must be an object, got string'],
  ]
  for (const [call, code, message] of cases) {
    t.throws(call, { code, message })
  }
})

// The image's size is unknown (a URL): it counts 1,445 tokens, the most an OpenAI image costs.
test('a larger budget never keeps less of a message with an image: between its text and its text with the image, the text stays', (t) => {
  const text = 'Here:\n' + Array.from({ length: 300 }, (_, i) => `line ${i} of some output with words`).join('\n')
  const history = [
    { role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'continue' },
  ] as Message[]
  let before = 0
  for (let budget = 500; budget <= 3600; budget += 100) {
    const r = ct.trimByPriority(history, { targetTokens: budget })
    t.true(r.totalTokens <= budget, `${budget}`)
    t.true(r.totalTokens >= before, `${budget}: ${r.totalTokens} after ${before}`)
    before = r.totalTokens
  }
  const between = ct.trimByPriority(history, { targetTokens: 3000 }).messages[0]
  t.true(typeof between.content === 'string' && between.content.startsWith('Here:') && between.content.endsWith('[... 1445 tokens cut ...]'))
})

test('an unknown option of trimByPriority lists the options it accepts, not those it rejects', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: 'Hello' },
  ]
  const listed = (call: () => unknown): string[] => {
    const error = t.throws(call, { code: 'INVALID_OPTION', message: /^frobnicate: is not an option; the options here are / })
    return error!.message.replace(/^.*the options here are /, '').split(', ')
  }
  const byPriority = listed(() => ct.trimByPriority(messages, { targetTokens: 100, frobnicate: 1 } as never))
  t.false(byPriority.includes('placeholder'))
  t.false(byPriority.includes('keepPlaceholders'))
  t.false(byPriority.includes('summarizer'))
  t.true(byPriority.includes('targetTokens'))
  t.true(byPriority.includes('summarizeDropped'))
  const withPlaceholders = listed(() => ct.trimWithPlaceholders(messages, { targetTokens: 100, frobnicate: 1 } as never))
  t.true(withPlaceholders.includes('placeholder'))
  t.true(withPlaceholders.includes('keepPlaceholders'))
  t.false(withPlaceholders.includes('summarizer'))
})

test('an unknown option of trimByPriorityAsync lists summarizer, which it accepts', async (t) => {
  const messages: Message[] = [{ role: 'user', content: 'Hello' }]
  const error = await t.throwsAsync(ct.trimByPriorityAsync(messages, { targetTokens: 100, frobnicate: 1 } as never), { code: 'INVALID_OPTION' })
  const listed = error!.message.replace(/^.*the options here are /, '').split(', ')
  t.true(listed.includes('summarizer'))
  t.false(listed.includes('placeholder'))
})

test('droppedMessages lists shortened messages too, and shortenedMessages those alone', (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the build.' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"cmd":"make"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: Array.from({ length: 2000 }, (_, i) => `line ${i}: error in module ${i % 17}`).join('\n') },
  ]
  const result = ct.trimByPriority(messages, { targetTokens: 3000 })
  t.is(result.messages.length, 4)
  t.deepEqual(result.droppedMessages.map((d) => d.message), [messages[3]])
  t.deepEqual(result.shortenedMessages.map((d) => d.message), [messages[3]])
  // The same entry in both lists (one list of classified messages is built per call).
  t.is(result.shortenedMessages[0], result.droppedMessages[0])
  t.is(typeof result.messages[3]._cutTokens, 'number')
  // Dropped for good: in droppedMessages, not in shortenedMessages.
  const history: Message[] = [messages[0]]
  for (let i = 0; i < 6; i++) history.push({ role: 'user', content: `question ${i} `.repeat(200) }, { role: 'assistant', content: `answer ${i} `.repeat(200) })
  const dropped = ct.trimByPriority(history, { targetTokens: 1500 })
  t.true(dropped.droppedMessages.length > 0)
  const listed = new Set(dropped.droppedMessages.map((d) => d.message))
  t.true(dropped.shortenedMessages.every((s) => listed.has(s.message)))
  const removed = dropped.droppedMessages.length - dropped.shortenedMessages.length
  t.true(removed > 0)
  t.is(dropped.messages.length + removed, history.length)
})
