import test from 'ava'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { ct, transcript, transcripts, transcriptsDir, type CodedError } from './helpers.js'
import { runCli, runCliInProcess, tempDir } from './cli-run.js'
// Plain .mjs (the CLI's model tables), typed by its .d.mts.
import { FALLBACK_ENCODING, KNOWN_MODELS, encodingForModel } from '../cli/models.mjs'
import type { AnthropicMessage, Message, TokenEncoding } from '../index.js'

const SAMPLE = 'samples/transcripts/openhands-ponyc-4595.json'
const VERSION = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version as string
const ANSI = /\x1b\[[0-9;]*m/

// The tests run one at a time: each starts CLI processes that tokenise whole transcripts, and on a
// busy machine running them all at once would leave the runner without a finished test for
// longer than its timeout.

/**
 * Runs the CLI (in this process, or in a child when there is standard input) and parses its
 * stdout as JSON, failing the test on a non-zero exit.
 */
async function json(t: { is: (a: unknown, b: unknown, m?: string) => void }, args: string[], input?: string) {
  const r = input === undefined ? await runCliInProcess(args) : await runCli(args, { input })
  t.is(r.code, 0, r.stderr)
  t.is(r.stderr, '')
  return JSON.parse(r.stdout)
}

/** Writes `text` to a new temporary file and returns its path. */
function file(name: string, text: string): string {
  const path = join(tempDir(), name)
  writeFileSync(path, text)
  return path
}

/** The tool each OpenAI tool message answers (independently of the CLI's own lookup). */
function toolTokens(messages: Message[]): Map<string, { results: number; tokens: number }> {
  const names = new Map<string, string>()
  const totals = new Map<string, { results: number; tokens: number }>()
  for (const m of messages) {
    for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name)
    if (m.role === 'tool') {
      const name = names.get(m.tool_call_id as string) as string
      const t = totals.get(name) ?? { results: 0, tokens: 0 }
      t.results++
      t.tokens += ct.estimateMessageTokens(m)
      totals.set(name, t)
    }
  }
  return totals
}

// --- help, version, usage -------------------------------------------------------------------

test.serial('--help and -h print the help on stdout and exit 0', async (t) => {
  for (const flag of ['--help', '-h']) {
    const r = await runCli([flag])
    t.is(r.code, 0)
    t.is(r.stderr, '')
    t.true(r.stdout.startsWith("context-trim: keeps an LLM agent's conversation inside its context window"))
    for (const word of ['stats <file>', 'trim <file> --budget N', '--strategy S', '--placeholders', '--html FILE', '--format F', 'exit status']) {
      t.true(r.stdout.includes(word), word)
    }
  }
  t.is((await runCli(['trim', '--help'])).code, 0)
})

test.serial('--version and -v print the package version', async (t) => {
  t.deepEqual(await runCli(['--version']), { code: 0, stdout: `context-trim ${VERSION}\n`, stderr: '' })
  t.deepEqual(await runCli(['-v']), { code: 0, stdout: `context-trim ${VERSION}\n`, stderr: '' })
})

test.serial('no command prints the usage on stderr and exits 2', async (t) => {
  const r = await runCli([])
  t.is(r.code, 2)
  t.is(r.stdout, '')
  t.true(r.stderr.startsWith('usage:\n  context-trim stats <file>'))
})

test.serial('usage errors are one line on stderr and exit 2', async (t) => {
  const cases: Array<[string[], string]> = [
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['stats'], 'stats needs a file (a path, or - for stdin)'],
    [['stats', SAMPLE, 'extra.json'], 'unexpected argument "extra.json"'],
    [['stats', SAMPLE, '--budget', '5'], 'unknown option --budget for stats'],
    [['--frob'], 'unknown option --frob'],
    [['stats', SAMPLE, '--top'], '--top needs a value'],
    [['stats', SAMPLE, '--top', 'many'], '--top must be a non-negative integer, got "many"'],
    [['stats', SAMPLE, '--json=yes'], '--json takes no value'],
    [['stats', SAMPLE, '--format', 'xml'], '--format must be one of openai, anthropic, ai-sdk, auto, got "xml"'],
    [['trim', SAMPLE], 'trim needs --budget N'],
    [['trim', SAMPLE, '--budget', 'lots'], '--budget must be a number of tokens or a percentage, got "lots"'],
    [['trim', SAMPLE, '--budget', '-5'], '--budget must be a number of tokens or a percentage, got "-5"'],
    [['trim', SAMPLE, '--budget', '100', '--strategy', 'random'], '--strategy must be one of priority, placeholders, age, truncate, roles, got "random"'],
    [['trim', SAMPLE, '--budget', '100', '--strategy', 'age', '--placeholders'], '--placeholders works with --strategy priority only (age only drops)'],
    [['trim', SAMPLE, '--budget', '100', '--strategy', 'truncate', '--placeholders'], '--placeholders works with --strategy priority only (truncate always shortens)'],
    [['help', 'frobnicate'], 'unknown command "frobnicate"'],
    [['help', 'trim', 'stats'], 'unexpected argument "stats"'],
    [['trim', SAMPLE, '--budget', '100', '--drop-order', 'user'], '--drop-order works with --strategy roles only'],
    [['trim', SAMPLE, '--budget', '100', '--strategy', 'roles', '--drop-order', 'user,robot'], '--drop-order takes roles among system, developer, user, assistant, tool, got "robot"'],
    [['trim', SAMPLE, '--budget'], '--budget needs a value'],
    [['trim', SAMPLE, '--budget', '100', '-o'], '-o needs a value'],
  ]
  for (const [args, message] of cases) {
    const r = await runCli(args)
    t.is(r.code, 2, args.join(' '))
    t.is(r.stderr, `context-trim: ${message} (see context-trim --help)\n`, args.join(' '))
    t.is(r.stdout, '')
  }
})

// --- stats ----------------------------------------------------------------------------------

test.serial('stats --json counts what the addon counts: tokens, steps, roles, tools, largest messages', async (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const r = await json(t, ['stats', SAMPLE, '--json'])
  t.is(r.file, SAMPLE)
  t.is(r.messages, messages.length)
  t.is(r.tokens, ct.estimateTokens(messages))
  t.is(r.steps, ct.countSteps(messages))
  const perMessage = messages.map((m) => ct.estimateMessageTokens(m))
  // Every message's tokens, plus 3 of reply priming, are the request's.
  t.is(r.byRole.reduce((n: number, x: { tokens: number }) => n + x.tokens, 0) + 3, r.tokens)
  for (const role of ['system', 'user', 'assistant', 'tool']) {
    const mine = messages.map((m, i) => (m.role === role ? perMessage[i] : 0)).reduce((a, b) => a + b, 0)
    t.is(r.byRole.find((x: { role: string }) => x.role === role).tokens, mine, role)
  }
  const tools = toolTokens(messages)
  t.deepEqual(
    Object.fromEntries(r.byTool.map((x: { tool: string; results: number; tokens: number }) => [x.tool, { results: x.results, tokens: x.tokens }])),
    Object.fromEntries(tools),
  )
  t.deepEqual(r.byTool.map((x: { tool: string }) => x.tool), ['str_replace_editor', 'execute_bash', 'think'])
  t.is(r.largest.length, 5)
  const order = perMessage.map((n, i) => [n, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1])
  t.deepEqual(r.largest.map((x: { index: number }) => x.index), order.slice(0, 5).map(([, i]) => i))
  t.deepEqual(r.largest[0].tokens, order[0][0])
  t.is((await json(t, ['stats', SAMPLE, '--json', '--top', '2'])).largest.length, 2)
})

test.serial('stats --json gives tokens by priority tier as classifyMessage classifies each message', async (t) => {
  for (const [name, messages] of transcripts()) {
    const r = await json(t, ['stats', join(transcriptsDir, name), '--json'])
    const expected = new Map<number, { messages: number; tokens: number }>()
    messages.forEach((m, index) => {
      const c = ct.classifyMessage(m, { messages, index })
      const e = expected.get(c.priority) ?? { messages: 0, tokens: 0 }
      e.messages++
      e.tokens += ct.estimateMessageTokens(m)
      expected.set(c.priority, e)
    })
    const got = new Map(r.byPriority.map((x: { priority: number; messages: number; tokens: number }) => [x.priority, { messages: x.messages, tokens: x.tokens }]))
    t.deepEqual(got, new Map([...expected].sort((a, b) => b[0] - a[0])), name)
    for (const tier of r.byPriority) t.is(ct.ContentPriority[tier.tier as keyof typeof ct.ContentPriority], tier.priority)
  }
})

test.serial('stats --json lists the files touched and modified, as FileTracker sees them', async (t) => {
  for (const [name, messages] of transcripts()) {
    const r = await json(t, ['stats', join(transcriptsDir, name), '--json'])
    const tracker = ct.FileTracker.fromMessages(messages, { now: () => 0 })
    const step = ct.countSteps(messages)
    const files = tracker.getRecentFiles(step, step)
    t.deepEqual(r.files.map((f: { path: string }) => f.path), files.map((f) => f.path), name)
    t.deepEqual(r.modifiedFiles, [...tracker.getModifiedFiles()].filter((p) => files.some((f) => f.path === p)).sort((a, b) => files.findIndex((f) => f.path === a) - files.findIndex((f) => f.path === b)), name)
    for (const f of r.files) t.is(f.modified, tracker.wasModified(f.path))
  }
  // The failed create of /workspace/hello.py modifies nothing (docs/priority-trimming.md).
  const hello = await json(t, ['stats', join(transcriptsDir, 'openhands-sdk-hello-world.json'), '--json'])
  t.false(hello.modifiedFiles.includes('/workspace/hello.py'))
})

test.serial('stats prints bar charts, plain when piped', async (t) => {
  const r = await runCli(['stats', SAMPLE])
  t.is(r.code, 0)
  t.is(r.stderr, '')
  t.false(ANSI.test(r.stdout))
  for (const heading of ['context-trim stats samples/transcripts/openhands-ponyc-4595.json', 'Tokens by role', 'Tokens by priority tier', 'Tool output tokens by tool', 'Largest messages (top 5)', 'Steps', 'Files: ']) {
    t.true(r.stdout.includes(heading), heading)
  }
  t.regex(r.stdout, /\n {2}tool +22 messages +24,649 +83\.6% {2}#{30}\n/)
  t.regex(r.stdout, /47 messages · 22 steps · 29,476 tokens/)
})

test.serial('stats colours its output with FORCE_COLOR, never with NO_COLOR', async (t) => {
  const coloured = await runCli(['stats', SAMPLE], { env: { FORCE_COLOR: '1' } })
  t.true(ANSI.test(coloured.stdout))
  t.true(coloured.stdout.includes('█'))
  const plain = await runCli(['stats', SAMPLE], { env: { FORCE_COLOR: '1', NO_COLOR: '1' } })
  t.false(ANSI.test(plain.stdout))
  t.is(plain.stdout, (await runCli(['stats', SAMPLE])).stdout)
})

// --- input forms ----------------------------------------------------------------------------

test.serial('a JSON array, an object with messages, JSON Lines and stdin give the same stats', async (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const text = JSON.stringify(messages)
  const jsonl = messages.map((m) => JSON.stringify(m)).join('\n') + '\n'
  const forms: Array<[string[], string | undefined]> = [
    [[SAMPLE], undefined],
    [[file('wrapped.json', JSON.stringify({ model: 'x', messages }, null, 2))], undefined],
    [[file('run.jsonl', jsonl)], undefined],
    [[file('crlf.jsonl', jsonl.replace(/\n/g, '\r\n'))], undefined],
    [[file('bom.json', '\ufeff' + text)], undefined],
    [['-'], text],
    [['-'], jsonl],
  ]
  const expected = await json(t, ['stats', SAMPLE, '--json'])
  for (const [args, input] of forms) {
    const r = await json(t, ['stats', ...args, '--json'], input)
    t.is(r.file, args[0] === '-' ? '<stdin>' : args[0])
    t.deepEqual({ ...r, file: SAMPLE }, expected, args[0])
  }
})

test.serial('a single JSON object with a role is a one-message conversation', async (t) => {
  const r = await json(t, ['stats', '-', '--json'], '{"role": "user", "content": "hello world"}\n')
  t.is(r.messages, 1)
  t.is(r.tokens, ct.estimateTokens([{ role: 'user', content: 'hello world' }]))
})

// --- input errors ---------------------------------------------------------------------------

test.serial('input errors are one line on stderr with exit code 1', async (t) => {
  const dir = tempDir()
  const cases: Array<[string, string, string]> = [
    // [file name, content, expected message after "context-trim: <path>"]
    ['comma.json', '[\n  {"role": "user", "content": "hi"}\n  {"role": "user", "content": "again"}\n]\n', `:3:3: malformed JSON: expected ',' or ']' after an array element, found "{"`],
    ['key.json', '{"messages": [{role: "user"}]}', `:1:16: malformed JSON: expected a property name in double quotes, found "r"`],
    ['colon.json', '[{"role" "user"}]', `:1:10: malformed JSON: expected ':' after a property name, found "\\""`],
    ['trailing.json', '[{"role": "user", "content": "hi"},]', `:1:36: malformed JSON: expected a value, found "]"`],
    ['end.json', '[{"role": "user",\n "content": "hi"}', `:2:18: malformed JSON: expected ',' or ']' after an array element, found end of input`],
    ['string.json', '[{"role": "user", "content": "hi}]', `:1:30: malformed JSON: unterminated string`],
    ['control.json', '[{"role": "user", "content": "a\tb"}]', `:1:32: malformed JSON: unescaped control character in a string`],
    ['escape.json', '[{"role": "user", "content": "a\\qb"}]', `:1:32: malformed JSON: invalid escape in a string`],
    ['number.json', '[{"role": "user", "n": -x}]', `:1:24: malformed JSON: invalid number`],
    ['after.json', '[] []', `:1:4: malformed JSON: unexpected "[" after the JSON value`],
    ['lines.jsonl', '{"role": "user", "content": "a"}\n{"role": "assistant", content: "b"}\n', `:2:23: malformed JSON: expected a property name in double quotes, found "c"`],
    ['lines2.jsonl', '{"role": "user", "content": "a"}\n\n{"role": "assistant", "content": "b"}\n{"role": "user", "content": "c"\n', `:4:32: malformed JSON: expected ',' or '}' after a property value, found end of input`],
    ['empty.json', '  \n', ': empty input (expected a JSON array of messages, an object with "messages", or JSON Lines)'],
    ['object.json', '{"model": "gpt-4o"}', ': expected a JSON array of messages, an object with a "messages" array, or JSON Lines, got an object without "messages"'],
    ['string-messages.json', '{"messages": "hi"}', ': expected a JSON array of messages, an object with a "messages" array, or JSON Lines, got "messages" of type string'],
    ['number.json', '42', ': expected a JSON array of messages, an object with a "messages" array, or JSON Lines, got number'],
  ]
  for (const [name, content, message] of cases) {
    const path = join(dir, name)
    writeFileSync(path, content)
    const r = await runCli(['stats', path])
    t.is(r.code, 1, name)
    t.is(r.stdout, '', name)
    t.is(r.stderr, `context-trim: ${path}${message}\n`, name)
  }
})

test.serial('a missing file, a directory and an unwritable output are one line with exit code 1', async (t) => {
  const dir = tempDir()
  t.deepEqual(await runCli(['stats', join(dir, 'nope.json')]), { code: 1, stdout: '', stderr: `context-trim: cannot read ${join(dir, 'nope.json')}: no such file\n` })
  t.deepEqual(await runCli(['trim', dir, '--budget', '10']), { code: 1, stdout: '', stderr: `context-trim: cannot read ${dir}: is a directory\n` })
  const out = join(dir, 'missing', 'out.json')
  t.deepEqual(await runCli(['trim', SAMPLE, '--budget', '50%', '--strategy', 'roles', '-o', out]), { code: 1, stdout: '', stderr: `context-trim: cannot write ${out}: no such directory\n` })
})

test.serial('invalid messages report the addon error, with the line for JSON Lines', async (t) => {
  const cases: Array<[Message[] | unknown[], string]> = [
    [[{ role: 'bogus', content: 'x' }], '[{"role": "bogus", "content": "x"}]'],
    [[{ role: 'user', content: 'a' }, { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f' } }] }], ''],
    [[{ role: 'user', content: 42 }], ''],
    [['just a string'], ''],
  ]
  for (const [messages] of cases) {
    let expected = ''
    try {
      ct.estimateTokens(messages as Message[])
    } catch (e) {
      expected = (e as CodedError).message
      t.is((e as CodedError).code?.startsWith('INVALID_'), true)
    }
    t.not(expected, '')
    const path = file('bad.json', JSON.stringify(messages))
    t.deepEqual(await runCli(['stats', path]), { code: 1, stdout: '', stderr: `context-trim: ${path}: ${expected}\n` })
    t.deepEqual(await runCli(['trim', '-', '--budget', '10'], { input: JSON.stringify(messages) }), { code: 1, stdout: '', stderr: `context-trim: <stdin>: ${expected}\n` })
  }
  const jsonl = file('bad.jsonl', '{"role": "user", "content": "a"}\n\n{"role": "robot", "content": "b"}\n')
  t.deepEqual(await runCli(['stats', jsonl]), {
    code: 1,
    stdout: '',
    stderr: `context-trim: ${jsonl}: messages[1].role: must be one of system, developer, user, assistant, tool, got "robot" (line 3)\n`,
  })
})

test.serial('a conversation mixing two formats is rejected with the addon message; --format settles it', async (t) => {
  const mixed = [
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
    { role: 'tool', tool_call_id: 'c1', content: 'x' },
  ]
  let expected = ''
  try {
    ct.estimateTokens(mixed as Message[])
  } catch (e) {
    expected = (e as Error).message
  }
  const path = file('mixed.json', JSON.stringify(mixed))
  t.deepEqual(await runCli(['stats', path]), { code: 1, stdout: '', stderr: `context-trim: ${path}: ${expected}\n` })
  const anthropic: AnthropicMessage[] = [
    { role: 'user', content: 'read a' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'contents of a' }] },
  ]
  const r = await json(t, ['stats', '-', '--json', '--format', 'anthropic'], JSON.stringify(anthropic))
  t.is(r.tokens, ct.estimateTokens(anthropic, { format: 'anthropic' }))
  t.deepEqual(r.byTool.map((x: { tool: string }) => x.tool), ['read_file'])
})

// --- trim -----------------------------------------------------------------------------------

const STRATEGIES: string[][] = [['--strategy', 'priority'], ['--placeholders'], ['--strategy', 'age'], ['--strategy', 'truncate'], ['--strategy', 'roles']]

test.serial('trim writes a valid conversation for every transcript and every strategy', async (t) => {
  const dir = tempDir()
  for (const [name, messages] of transcripts()) {
    for (const strategy of STRATEGIES) {
      const label = `${name} ${strategy.join(' ')}`
      const out = join(dir, `${name}.${strategy.at(-1)}.out.json`)
      const r = await json(t, ['trim', join(transcriptsDir, name), '--budget', '50%', ...strategy, '-o', out, '--json'])
      const written = JSON.parse(readFileSync(out, 'utf8')) as Message[]
      t.deepEqual(ct.validateConversation(written), [], label)
      t.true(r.valid, label)
      t.is(r.budget, Math.floor(ct.estimateTokens(messages) / 2), label)
      t.is(r.after.messages, written.length, label)
      t.is(r.after.tokens, ct.estimateTokens(written), label)
      t.is(r.savedTokens, r.before.tokens - r.after.tokens, label)
      t.is(r.overBudget, r.after.tokens > r.budget, label)
      t.is(r.counts.kept + r.counts.placeholder + r.counts.cut + r.counts.dropped, messages.length, label)
      t.is(r.counts.kept + r.counts.placeholder + r.counts.cut, written.length, label)
      // Kept messages are written unchanged; the written ones are in input order.
      const kept = r.messages.filter((m: { decision: string }) => m.decision !== 'dropped')
      // A cut is a copy whose content was cut to head and tail (`_cutTokens`, the cut marker);
      // a placeholder is any other copy.
      kept.forEach((m: { decision: string }, j: number) => {
        if (m.decision === 'cut') t.regex(String(JSON.stringify(written[j].content)), / tokens cut \.\.\.\]/, label)
      })
      kept.forEach((m: { index: number; decision: string; tokensAfter: number }, j: number) => {
        if (m.decision === 'kept') t.deepEqual(written[j], messages[m.index], label)
        else t.is(written[j].role, messages[m.index].role, label)
        t.is(m.tokensAfter, ct.estimateMessageTokens(written[j]), label)
      })
      if (strategy.at(-1) === 'truncate') t.is(r.counts.dropped, 0, label)
      if (strategy.at(-1) === 'age' || strategy.at(-1) === 'roles') t.is(r.counts.placeholder + r.counts.cut, 0, label)
      // trimByPriority shortens only by cutting a result to head and tail (rather than dropping it).
      if (strategy.at(-1) === 'priority') t.is(r.counts.placeholder, 0, label)
    }
  }
})

test.serial('trim reports what the addon decided: priority and placeholders', async (t) => {
  for (const [name, messages] of transcripts()) {
    const budget = Math.floor(ct.estimateTokens(messages) / 2)
    const path = join(transcriptsDir, name)
    for (const [fn, args] of [
      ['trimByPriority', []],
      ['trimWithPlaceholders', ['--placeholders']],
    ] as const) {
      const result = ct[fn](messages, { targetTokens: budget })
      const r = await json(t, ['trim', path, '--budget', String(budget), ...args, '--json'])
      t.is(r.function, fn)
      t.is(r.after.tokens, result.totalTokens, `${name} ${fn}`)
      t.is(r.savedTokens, result.savedTokens, `${name} ${fn}`)
      t.is(r.overBudget, result.overBudget, `${name} ${fn}`)
      // droppedMessages lists every message not returned as it was: dropped or placeholder.
      const changed = new Set(result.droppedMessages.map((d) => messages.indexOf(d.message)))
      t.deepEqual(
        r.messages.filter((m: { decision: string }) => m.decision !== 'kept').map((m: { index: number }) => m.index),
        [...changed].sort((a, b) => a - b),
        `${name} ${fn}`,
      )
      for (const m of r.messages) {
        const c = ct.classifyMessage(messages[m.index], { messages, index: m.index })
        t.is(m.priority, c.priority)
        t.is(m.tier, Object.entries(ct.ContentPriority).find(([, v]) => v === c.priority)?.[0])
        t.is(typeof m.reason, 'string')
      }
      const tiers = r.byPriority as Array<{ before: number; after: number }>
      t.is(tiers.reduce((n, x) => n + x.before, 0) + 3, r.before.tokens)
      t.is(tiers.reduce((n, x) => n + x.after, 0) + 3, r.after.tokens)
    }
  }
})

test.serial('trim reports the other strategies as the addon decides them', async (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const total = ct.estimateTokens(messages)
  const cases: Array<[string[], Message[]]> = [
    [['--strategy', 'age'], ct.trimByAge(messages, 12000)],
    [['--strategy', 'truncate'], ct.truncateOldToolOutputs(messages)],
    [['--strategy', 'roles'], ct.applyMaxContextTokens(messages, 12000, { dropOrder: ['assistant', 'user'], keepFirstSystem: true })],
    [['--strategy', 'roles', '--drop-order', 'tool,user'], ct.applyMaxContextTokens(messages, 12000, { dropOrder: ['tool', 'user'], keepFirstSystem: true })],
  ]
  for (const [args, expected] of cases) {
    const r = await json(t, ['trim', SAMPLE, '--budget', '12000', ...args, '--json'])
    t.is(r.before.tokens, total)
    t.is(r.after.tokens, ct.estimateTokens(expected), args.join(' '))
    const kept = r.messages.filter((m: { decision: string }) => m.decision === 'kept').map((m: { index: number }) => m.index)
    t.deepEqual(kept, expected.filter((m) => messages.includes(m)).map((m) => messages.indexOf(m)), args.join(' '))
  }
  // truncate: its placeholders say why (the copy's _truncatedAt).
  const truncate = await json(t, ['trim', SAMPLE, '--budget', '12000', '--strategy', 'truncate', '--json'])
  const old = truncate.messages.find((m: { decision: string }) => m.decision === 'placeholder')
  t.regex(old.reason, /\d+ steps old, older than maxAge$/)
})

test.serial('trim writes the input form: an object keeps its other fields, JSON Lines stay JSON Lines', async (t) => {
  const messages = transcript('sweagent-ctf-katy.json')
  const dir = tempDir()
  const wrapped = join(dir, 'in.json')
  writeFileSync(wrapped, JSON.stringify({ model: 'gpt-4o', temperature: 0, messages }))
  const out = join(dir, 'out.json')
  t.is((await runCli(['trim', wrapped, '--budget', '4000', '--strategy', 'roles', '-o', out])).code, 0)
  const written = JSON.parse(readFileSync(out, 'utf8'))
  t.deepEqual(Object.keys(written), ['model', 'temperature', 'messages'])
  t.deepEqual(written.messages, ct.applyMaxContextTokens(messages, 4000, { dropOrder: ['assistant', 'user'], keepFirstSystem: true }))

  const jsonl = join(dir, 'in.jsonl')
  writeFileSync(jsonl, messages.map((m) => JSON.stringify(m)).join('\n'))
  const outl = join(dir, 'out.jsonl')
  t.is((await runCli(['trim', jsonl, '--budget', '4000', '--strategy', 'roles', '-o', outl])).code, 0)
  const lines = readFileSync(outl, 'utf8').trimEnd().split('\n')
  t.deepEqual(lines.map((l) => JSON.parse(l)), written.messages)
})

test.serial('trim -o - writes the conversation to stdout and the report to stderr', async (t) => {
  const messages = transcript('sweagent-ctf-katy.json')
  const r = await runCli(['trim', '-', '--budget', '4000', '--strategy', 'roles', '-o', '-'], { input: JSON.stringify(messages) })
  t.is(r.code, 0)
  t.deepEqual(JSON.parse(r.stdout), ct.applyMaxContextTokens(messages, 4000, { dropOrder: ['assistant', 'user'], keepFirstSystem: true }))
  t.true(r.stderr.startsWith('context-trim trim <stdin>\n'))
  t.true(r.stderr.includes('wrote <stdout>'))
  const j = await runCli(['trim', '-', '--budget', '4000', '--strategy', 'roles', '-o', '-', '--json'], { input: JSON.stringify(messages) })
  t.is(JSON.parse(j.stderr).output, '<stdout>')
})

test.serial('trim --all-rows prints a before/after report with a line per message and the validity check', async (t) => {
  const r = await runCli(['trim', SAMPLE, '--budget', '50%', '--placeholders', '--all-rows'])
  t.is(r.code, 0)
  t.is(r.stderr, '')
  t.false(ANSI.test(r.stdout))
  const j = await json(t, ['trim', SAMPLE, '--budget', '50%', '--placeholders', '--json'])
  const lines = r.stdout.split('\n')
  t.is(lines[0], `context-trim trim ${SAMPLE}`)
  t.true(lines.includes(`  strategy  priority with placeholders: trimWithPlaceholders`))
  t.true(lines.includes(`  budget    14,738 tokens`))
  t.true(lines.includes(`  result    ${j.counts.kept} kept · ${j.counts.placeholder} placeholder${j.counts.placeholder === 1 ? '' : 's'} · ${j.counts.cut} cut · ${j.counts.dropped} dropped`))
  t.true(lines.includes('Tokens by priority tier, before → after'))
  t.true(lines.includes('valid: validateConversation finds no problem in the trimmed conversation'))
  t.true(lines.includes('nothing written (use -o out.json to write the trimmed conversation)'))
  // One line per message, in order, with its decision.
  const rows = lines.filter((l) => /^ +\d+ {2}\w/.test(l))
  t.is(rows.length, j.messages.length)
  rows.forEach((row, i) => {
    t.true(row.includes(` ${j.messages[i].decision} `), row)
    t.true(row.includes(j.messages[i].tier), row)
  })
})

test.serial('trim reports a result over the budget', async (t) => {
  const r = await json(t, ['trim', SAMPLE, '--budget', '10', '--json'])
  t.true(r.overBudget)
  t.true(r.after.tokens > 10)
  const text = (await runCli(['trim', SAMPLE, '--budget', '10'])).stdout
  t.true(text.includes(`over budget by ${(r.after.tokens - 10).toLocaleString('en-US')}`))
})

test.serial('trim counts tokens for --model', async (t) => {
  const messages = transcript('openhands-ponyc-4595.json')
  const r = await json(t, ['trim', SAMPLE, '--budget', '50%', '--strategy', 'roles', '--model', 'gpt-4', '--json'])
  t.is(r.before.tokens, ct.estimateTokens(messages, { model: 'gpt-4' }))
  t.not(r.before.tokens, ct.estimateTokens(messages))
  t.is(r.model, 'gpt-4')
})

test.serial('trim --fail-over-budget exits 3 over the budget, after the report, and 0 within it', async (t) => {
  const over = await runCli(['trim', SAMPLE, '--budget', '10', '--fail-over-budget', '--json'])
  t.is(over.code, 3)
  const report = JSON.parse(over.stdout)
  t.true(report.overBudget)
  t.is(over.stderr, `context-trim: over budget: ${report.after.tokens.toLocaleString('en-US')} tokens after trimming, budget 10 (--fail-over-budget)\n`)
  const within = await runCli(['trim', SAMPLE, '--budget', '90%', '--placeholders', '--fail-over-budget'])
  t.is(within.code, 0, within.stderr)
  t.is(within.stderr, '')
  // Without the flag, over the budget is not an error.
  t.is((await runCli(['trim', SAMPLE, '--budget', '10'])).code, 0)
})

test.serial('an unknown --model warns on stderr, naming the encoding it counts with; a known one does not', async (t) => {
  const warning = `context-trim: warning: unknown model "gpt-9000": counting with o200k_base (the encoding of gpt-4o and later models); name a known model (gpt-4o, gpt-4.1, gpt-4, gpt-3.5-turbo, o3, gpt-oss-120b, …) for its own encoding\n`
  for (const args of [
    ['stats', SAMPLE, '--model', 'gpt-9000', '--json'],
    ['trim', SAMPLE, '--budget', '50%', '--model=gpt-9000', '--json'],
    ['simulate', SAMPLE, '--model', 'gpt-9000', '--json'],
  ]) {
    const r = await runCli(args)
    t.is(r.code, 0, r.stderr)
    t.is(r.stderr, warning, args.join(' '))
  }
  const messages = transcript('openhands-ponyc-4595.json')
  const unknown = await runCli(['stats', SAMPLE, '--model', 'gpt-9000', '--json'])
  t.is(JSON.parse(unknown.stdout).tokens, ct.estimateTokens(messages, { encoding: 'o200k_base' }))
  for (const model of ['gpt-4o-mini', 'gpt-4', 'ft:gpt-4o-mini:acme::x1', 'gpt-oss-120b']) {
    t.is((await runCli(['stats', SAMPLE, '--model', model, '--json'])).stderr, '', model)
  }
})

test('the CLI knows the models the addon knows: each counts with the encoding the CLI names', (t) => {
  // A text the encodings count differently, so a count tells which encoding counted it.
  const probe = 'Ünïcode façade — 東京 🚀 {"k": [1, 2, 3]}\n\tindentation    spaces, 12345678 numbers and    more.'
  const encodings: TokenEncoding[] = ['o200k_base', 'cl100k_base', 'o200k_harmony', 'p50k_base', 'r50k_base']
  const byEncoding = new Map<string, number | undefined>(encodings.map((e) => [e, ct.countTokens(probe, { encoding: e })]))
  t.true(new Set([...byEncoding].filter(([e]) => e !== 'o200k_harmony').map(([, n]) => n)).size >= 3, 'the probe tells the encodings apart')
  for (const [model, encoding] of KNOWN_MODELS) {
    t.is(encodingForModel(model), encoding, model)
    t.is(ct.countTokens(probe, { model }), byEncoding.get(encoding) as number, model)
  }
  t.is(encodingForModel('gpt-9000'), null)
  t.is(ct.countTokens(probe, { model: 'gpt-9000' }), byEncoding.get(FALLBACK_ENCODING) as number)
})

test.serial('stats says "1 step" and "1 tool call", in the singular', async (t) => {
  const one = [
    { role: 'user', content: 'Read a.ts' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'export const a = 1' },
  ]
  const r = await runCli(['stats', '-'], { input: JSON.stringify(one) })
  t.is(r.code, 0, r.stderr)
  t.true(r.stdout.includes('\n  3 messages · 1 step · '), r.stdout)
  t.true(r.stdout.includes('\n  1 step (assistant messages with tool calls), 1 tool call\n'), r.stdout)
  t.false(/\b1 steps\b/.test(r.stdout))
})

test.serial("stats counts a request body's top-level system field as a first system message", async (t) => {
  const messages = transcript('openhands-ponyc-4595.json').filter((m) => m.role !== 'system')
  const system = 'You are a careful coding agent. Run the tests before you finish.'
  const body = file('body.json', JSON.stringify({ model: 'claude-sonnet-4-5', system, messages }))
  const withSystem = [{ role: 'system' as const, content: system }, ...messages]
  const r = await json(t, ['stats', body, '--json'])
  t.is(r.systemField, true)
  t.is(r.messages, messages.length + 1)
  t.is(r.tokens, ct.estimateTokens(withSystem))
  t.true(r.tokens > ct.estimateTokens(messages))
  t.deepEqual(r.byRole.find((x: { role: string }) => x.role === 'system'), { role: 'system', messages: 1, tokens: ct.estimateMessageTokens(withSystem[0]) })
  const text = await runCli(['stats', body])
  t.true(text.stdout.includes("\n  #0 is the request's top-level system field, counted as a system message\n"), text.stdout)
  // Anthropic's array of text blocks counts the same text.
  const blocks = file('blocks.json', JSON.stringify({ system: [{ type: 'text', text: system }], messages }))
  t.is((await json(t, ['stats', blocks, '--json'])).systemField, true)
  // Without the field nothing changes, and a wrong one is an input error naming it.
  t.is((await json(t, ['stats', file('plain.json', JSON.stringify({ messages })), '--json'])).systemField, false)
  const bad = file('bad.json', JSON.stringify({ system: 5, messages }))
  t.deepEqual(await runCli(['stats', bad]), { code: 1, stdout: '', stderr: `context-trim: ${bad}: system: must be a string or an array of text blocks, got number\n` })
})

test.serial('simulate on a conversation smaller than the window says nothing was trimmed and suggests a window that trims', async (t) => {
  const small = 'samples/transcripts/openhands-sdk-hello-world.json'
  const r = await runCli(['simulate', small])
  t.is(r.code, 0, r.stderr)
  const m = /\nNothing was trimmed: the largest request \(([0-9,]+) tokens\) is [0-9.]+% of the 128,000-token window, so every policy sent the whole conversation\.\nTo compare the policies on this conversation, try a smaller window, e\.g\. --window ([0-9]+) \(half its largest request\)\.\n$/.exec(r.stdout)
  t.truthy(m, r.stdout)
  const largest = Number(m![1].replace(/,/g, ''))
  t.is(Number(m![2]), Math.floor(largest / 2))
  // At the suggested window the policies differ, and the hint is gone.
  const suggested = await runCli(['simulate', small, '--window', m![2], '--json'])
  const result = JSON.parse(suggested.stdout) as { policies: Array<{ policy: string; totals: { inputTokens: number; replans: number } }> }
  t.true(result.policies.some((p) => p.totals.replans > 0))
  t.true(new Set(result.policies.map((p) => p.totals.inputTokens)).size > 1)
  t.false((await runCli(['simulate', small, '--window', m![2]])).stdout.includes('Nothing was trimmed'))
})

test.serial('trim --html writes the report page', async (t) => {
  const dir = tempDir()
  const html = join(dir, 'report.html')
  const r = await json(t, ['trim', SAMPLE, '--budget', '50%', '--placeholders', '--html', html, '--json'])
  t.is(r.html, html)
  const page = readFileSync(html, 'utf8')
  t.true(page.startsWith('<!doctype html>'))
  t.is((page.match(/<li class="msg /g) ?? []).length, r.messages.length)
  t.false(/\b(?:src|href)="(?!data:)/.test(page), 'nothing is loaded from elsewhere')
})

// --- demo -----------------------------------------------------------------------------------

test.serial('demo prints the stats and a trim report of the bundled sample, with its licence notice', async (t) => {
  const dir = tempDir()
  const html = join(dir, 'demo.html')
  const r = await runCli(['demo', '--html', html])
  t.is(r.code, 0, r.stderr)
  t.is(r.stderr, '')
  t.true(r.stdout.startsWith(`context-trim stats ${SAMPLE}\n`))
  t.true(r.stdout.includes(`\ncontext-trim trim ${SAMPLE}\n`))
  t.true(r.stdout.includes('  strategy  priority with placeholders: trimWithPlaceholders'))
  t.true(r.stdout.includes(`(the trim above is: context-trim trim ${SAMPLE} --budget 27000 --placeholders)`))
  t.true(r.stdout.includes('its licence notice is in samples/transcripts/LICENSE-NOTICES.md'))
  t.true(r.stdout.endsWith(`\nHTML report of this trim: ${html}\n  open it in a browser\n`), r.stdout.slice(-300))
  t.true(readFileSync(html, 'utf8').includes('openhands-ponyc-4595.json'))
  t.is((await runCli(['demo', 'extra'])).code, 2)
})

test.serial('demo without --html writes its report to the temporary directory and prints where', async (t) => {
  const dir = tempDir()
  // TMPDIR moves os.tmpdir() for the child, so the test never touches the shared /tmp file.
  const r = await runCli(['demo'], { env: { TMPDIR: dir } })
  t.is(r.code, 0, r.stderr)
  const html = join(dir, 'context-trim-demo-report.html')
  t.true(r.stdout.endsWith(`\nHTML report of this trim: ${html}\n  open it in a browser; npm run demo -- --html FILE writes it elsewhere\n`), r.stdout.slice(-300))
  t.true(readFileSync(html, 'utf8').startsWith('<!doctype html>'))
})

// --- request bodies, budgets, writes and reports (fixes) --------------------------------------

/** An Anthropic request body whose top-level system prompt is most of its tokens. */
function anthropicBody(system: unknown = 'You are a careful agent. '.repeat(200)) {
  return {
    model: 'claude-sonnet-4',
    max_tokens: 1024,
    system,
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      { role: 'user', content: 'go' },
    ],
  }
}

test.serial("trim and simulate count a request body's system field as stats does; trim writes it back unchanged", async (t) => {
  const body = anthropicBody()
  const path = file('body.json', JSON.stringify(body))
  const request = [{ role: 'system' as const, content: body.system as string }, ...(body.messages as Message[])]
  const total = ct.estimateTokens(request)
  t.is((await json(t, ['stats', path, '--json'])).tokens, total)
  // The system prompt alone is over a 500-token budget: trim says so, and never drops it.
  const over = await runCli(['trim', path, '--budget', '500', '--fail-over-budget', '--json'])
  t.is(over.code, 3, over.stderr)
  const report = JSON.parse(over.stdout)
  t.is(report.systemField, true)
  t.is(report.before.tokens, total)
  t.true(report.after.tokens > 500)
  t.deepEqual(report.messages[0], { index: 0, role: 'system', tier: 'SYSTEM', priority: 100, step: 0, tokensBefore: ct.estimateMessageTokens(request[0]), tokensAfter: ct.estimateMessageTokens(request[0]), decision: 'kept', reason: "kept: the request's top-level system field, sent as it is with every request" })
  // Numbering as in stats: #0 is the system field, #N the body's messages[N - 1].
  t.deepEqual(report.messages.map((m: { index: number; role: string }) => [m.index, m.role]), [[0, 'system'], [1, 'user'], [2, 'assistant'], [3, 'user']])
  t.true((await runCli(['trim', path, '--budget', '500'])).stdout.includes("\n  #0 is the request's top-level system field"))
  // A percentage is of the whole request.
  t.is((await json(t, ['trim', path, '--budget', '50%', '--json'])).budget, Math.floor(total / 2))
  // -o writes the body's shape back: system and the other fields unchanged, trimmed messages.
  const out = join(tempDir(), 'out.json')
  const r = await json(t, ['trim', path, '--budget', String(total - 8), '-o', out, '--json'])
  const written = JSON.parse(readFileSync(out, 'utf8'))
  t.deepEqual(Object.keys(written), Object.keys(body))
  t.is(written.system, body.system)
  t.deepEqual(written.messages, [{ role: 'user', content: 'go' }])
  t.is(r.after.tokens, ct.estimateTokens([request[0], ...written.messages]))
  t.false(r.overBudget)
  // An array of text blocks counts the same text; null is an input error in both commands.
  const blocks = file('blocks.json', JSON.stringify(anthropicBody([{ type: 'text', text: body.system }])))
  t.is((await json(t, ['trim', blocks, '--budget', '50%', '--json'])).before.tokens, (await json(t, ['stats', blocks, '--json'])).tokens)
  const nul = file('null.json', JSON.stringify(anthropicBody(null)))
  for (const args of [['stats', nul], ['trim', nul, '--budget', '10'], ['simulate', nul]]) {
    t.deepEqual(await runCli(args), { code: 1, stdout: '', stderr: `context-trim: ${nul}: system: must be a string or an array of text blocks, got null\n` }, args[0])
  }
  // simulate replays the request with its system prompt.
  const sim = await json(t, ['simulate', path, '--json'])
  t.deepEqual(sim, JSON.parse(JSON.stringify(ct.simulate(request, { contextWindow: 128_000, pricing: 'anthropic' }))))
  // Errors name the body's own messages, not the request's numbering.
  const bad = file('bad.json', JSON.stringify({ ...body, messages: [body.messages[0], { role: 'robot', content: 'x' }] }))
  for (const args of [['stats', bad], ['trim', bad, '--budget', '10'], ['simulate', bad]]) {
    t.deepEqual(await runCli(args), { code: 1, stdout: '', stderr: `context-trim: ${bad}: messages[1].role: must be one of system, developer, user, assistant, tool, got "robot"\n` }, args[0])
  }
})

test.serial('simulate --html and demo --html that cannot be written are one line, exit 1, nothing printed', async (t) => {
  const dir = tempDir()
  const small = 'samples/transcripts/openhands-sdk-hello-world.json'
  const missing = join(dir, 'missing', 'x.html')
  t.deepEqual(await runCli(['simulate', small, '--html', missing]), { code: 1, stdout: '', stderr: `context-trim: cannot write ${missing}: no such directory\n` })
  t.deepEqual(await runCli(['simulate', small, '--html', dir]), { code: 1, stdout: '', stderr: `context-trim: cannot write ${dir}: is a directory\n` })
  t.deepEqual(await runCli(['demo', '--html', missing]), { code: 1, stdout: '', stderr: `context-trim: cannot write ${missing}: no such directory\n` })
})

test.serial("docs/cli.md's over-budget example and priority rule are what the CLI does", async (t) => {
  const doc = readFileSync(new URL('../docs/cli.md', import.meta.url), 'utf8')
  const r = await runCli(['trim', SAMPLE, '--budget', '10', '--fail-over-budget', '--json'])
  t.is(r.code, 3)
  t.true(doc.includes(`| \`${r.stderr.trimEnd()}\` |`), r.stderr)
  // No tier that this trim drops is said to be never dropped.
  const dropped = new Set(JSON.parse(r.stdout).messages.filter((m: { decision: string }) => m.decision === 'dropped').map((m: { tier: string }) => m.tier))
  t.true(dropped.has('CURRENT_TASK') && dropped.has('MODIFIED_FILES'))
  const row = doc.split('\n').find((l) => l.startsWith('| `--strategy priority`')) as string
  for (const clause of row.split(';').filter((c) => c.includes('never dropped'))) {
    for (const tier of dropped) t.false(clause.includes(tier as string), clause)
  }
})

test.serial('--budget is checked before the input is read, and a percentage too large is a usage error', async (t) => {
  t.deepEqual(await runCli(['trim', 'nonexist.json', '--budget', 'abc']), {
    code: 2,
    stdout: '',
    stderr: 'context-trim: --budget must be a number of tokens or a percentage, got "abc" (see context-trim --help)\n',
  })
  const tokens = (await json(t, ['stats', SAMPLE, '--json'])).tokens as number
  t.deepEqual(await runCli(['trim', SAMPLE, '--budget', '9007199254740991%']), {
    code: 2,
    stdout: '',
    stderr: `context-trim: --budget is too large: 9007199254740991% of ${tokens.toLocaleString('en-US')} tokens is more than 9,007,199,254,740,991 tokens (see context-trim --help)\n`,
  })
})

test.serial('the help says what --budget N% is a percentage of', async (t) => {
  const help = (await runCli(['--help'])).stdout
  const start = help.indexOf('  --budget N')
  const option = help.slice(start, help.indexOf('\n  --strategy', start)).replace(/\s+/g, ' ')
  t.regex(option, /N% of the input's tokens\b/)
})

test.serial('trim --strategy truncate says a cut is for maxTokensPerOutput, not the budget', async (t) => {
  const long = Array.from({ length: 20_000 }, (_, i) => `w${i % 10}`).join(' ')
  const messages = [
    { role: 'user', content: 'read it' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"big.txt"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: long },
    { role: 'assistant', content: 'done' },
  ]
  const r = await json(t, ['trim', file('long.json', JSON.stringify(messages)), '--budget', '100%', '--strategy', 'truncate', '--json'])
  const cut = r.messages[2]
  t.is(cut.decision, 'cut')
  // Numbers in reasons have thousands separators, as everywhere in the CLI's reports.
  t.regex(cut.reason, /^cut: \d{1,3}(?:,\d{3})+ tokens cut from the middle, as the output is longer than maxTokensPerOutput \(2,000 tokens, the default of truncateOldToolOutputs; the budget plays no part\)$/)
})

test.serial('simulate gives no smaller-window hint for a conversation already over the window', async (t) => {
  const small = 'samples/transcripts/openhands-sdk-hello-world.json'
  const r = await runCli(['simulate', small, '--policies', 'none', '--window', '1000'])
  t.is(r.code, 0, r.stderr)
  t.regex(r.stdout, /\n {2}none +[0-9,]+ .* [0-9]+ refused /)
  t.false(r.stdout.includes('Nothing was trimmed'), r.stdout)
  t.false(r.stdout.includes('try a smaller window'), r.stdout)
})

test.serial('trim -o with a message nested too deeply for JSON.stringify is an input error, not an internal one', async (t) => {
  const deep = '{"a":'.repeat(5000) + '{}' + '}'.repeat(5000)
  const path = file('deep.json', `[{"role":"user","content":"hi","extra":${deep}},{"role":"assistant","content":"hello"},{"role":"user","content":"go"}]`)
  const r = await runCli(['trim', path, '--budget', '100', '-o', join(tempDir(), 'out.json')])
  t.is(r.code, 1)
  t.is(r.stdout, '')
  t.regex(r.stderr, new RegExp(`^context-trim: ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: messages\\[0\\] is nested too deeply to be written as JSON \\(JSON\\.stringify: [^\\n]+\\)\\n$`))
})

test.serial('simulate --price-input changes the text and HTML reports: their cost without cache', async (t) => {
  const small = 'samples/transcripts/openhands-sdk-hello-world.json'
  const dollars = (n: number) => `$${n.toFixed(n < 10 ? 3 : 2)}`
  const html = join(tempDir(), 'cost.html')
  const r = await runCli(['simulate', small, '--price-input', '300', '--html', html])
  t.is(r.code, 0, r.stderr)
  const result = await json(t, ['simulate', small, '--price-input', '300', '--json'])
  const none = result.policies.find((p: { policy: string }) => p.policy === 'none').totals
  t.is(none.costWithoutCache, (none.inputTokens * 300) / 1e6)
  t.regex(r.stdout, /\n {2}policy .* without cache\n/)
  t.regex(r.stdout, new RegExp(`\\n {2}none .* ${dollars(none.costWithoutCache).replace('$', '\\$')}\\n`))
  t.true(readFileSync(html, 'utf8').includes(`<td>${dollars(none.costWithoutCache)}</td></tr>`))
  t.not(r.stdout.replace(/\n {2}prices per million[^\n]*/, ''), (await runCli(['simulate', small])).stdout.replace(/\n {2}prices per million[^\n]*/, ''))
})

test.serial('stats byTool counts each call once when one message answers several in parallel', async (t) => {
  const body = {
    messages: [
      { role: 'user', content: 'look' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a.ts' } }, { type: 'tool_use', id: 't2', name: 'bash', input: { command: 'ls' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'export const a = 1' }, { type: 'tool_result', tool_use_id: 't2', content: 'a.ts b.ts' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't3', name: 'read_file', input: { path: 'b.ts' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't3', content: 'export const b = 2' }] },
      { role: 'assistant', content: 'done' },
    ],
  }
  const r = await json(t, ['stats', file('parallel.json', JSON.stringify(body)), '--json'])
  t.deepEqual(
    r.byTool.map((x: { tool: string; results: number; calls: number }) => [x.tool, x.results, x.calls]),
    [
      ['read_file + bash', 1, 2],
      ['read_file', 1, 1],
    ],
  )
  t.is(r.byTool.reduce((n: number, x: { calls: number }) => n + x.calls, 0), 3)
})

test.serial('help and help <command> print the help on stdout and exit 0', async (t) => {
  const help = (await runCli(['--help'])).stdout
  for (const args of [['help'], ['help', 'trim'], ['help', 'simulate'], ['help', 'stats']]) {
    t.deepEqual(await runCli(args), { code: 0, stdout: help, stderr: '' }, args.join(' '))
  }
  t.true(help.includes('context-trim help [command]'))
})

test.serial('a reason naming a stale file has one comma before "superseded", in the text and --json', async (t) => {
  const path = join(transcriptsDir, 'openhands-ponyc-4593.json')
  const j = await json(t, ['trim', path, '--budget', '30%', '--json'])
  const stale = j.messages.filter((m: { reason: string }) => m.reason.includes('superseded by'))
  t.true(stale.length > 0)
  for (const m of j.messages) t.false(m.reason.includes(',,'), m.reason)
  t.true(stale.some((m: { reason: string }) => /^dropped: stale call and result of \/workspace\/ponylang__ponyc__0\.1\/packages\/cli\/cli\.pony, superseded by #\d+$/.test(m.reason)))
  const text = (await runCli(['trim', path, '--budget', '30%', '--all-rows'])).stdout
  t.false(text.includes(',,'))
})

test.serial('trim prints the rows that changed and one line per run of kept rows; --json has every message', async (t) => {
  const r = await runCli(['trim', SAMPLE, '--budget', '27000', '--placeholders'])
  t.is(r.code, 0, r.stderr)
  const j = await json(t, ['trim', SAMPLE, '--budget', '27000', '--placeholders', '--json'])
  t.is(j.messages.length, 47)
  const lines = r.stdout.split('\n')
  t.true(lines.includes('Messages (each run of kept messages in one line; --all-rows prints every message)'))
  const rows = lines.filter((l) => /^ +\d+ {2}\w/.test(l))
  const changed = j.messages.filter((m: { decision: string }) => m.decision !== 'kept')
  for (const m of changed) t.true(rows.some((row) => row.startsWith(`  ${String(m.index).padStart(4)}  `) && row.includes(` ${m.decision} `)), String(m.index))
  // Every message is in a row or in a run, once.
  const runs = lines.flatMap((l) => {
    const m = /^ +… {2}(\d+) kept \(#(\d+)–#(\d+)\) …$/.exec(l)
    return m ? [[Number(m[1]), Number(m[2]), Number(m[3])]] : []
  })
  t.true(runs.length > 0)
  for (const [n, first, last] of runs) t.is(n, last - first + 1)
  t.is(rows.length + runs.reduce((n, [k]) => n + k, 0), j.messages.length)
  t.true(rows.length < j.messages.length)
  // --all-rows: every message.
  const all = (await runCli(['trim', SAMPLE, '--budget', '27000', '--placeholders', '--all-rows'])).stdout
  t.is(all.split('\n').filter((l) => /^ +\d+ {2}\w/.test(l)).length, j.messages.length)
  t.false(all.includes(' kept (#'))
})

test.serial('trim --strategy placeholders is trim --placeholders', async (t) => {
  const named = await json(t, ['trim', SAMPLE, '--budget', '50%', '--strategy', 'placeholders', '--json'])
  const flag = await json(t, ['trim', SAMPLE, '--budget', '50%', '--placeholders', '--json'])
  t.deepEqual(named, flag)
  t.is(named.function, 'trimWithPlaceholders')
  t.deepEqual(await json(t, ['trim', SAMPLE, '--budget', '50%', '--strategy', 'placeholders', '--placeholders', '--json']), flag)
})

test.serial('trim --strategy truncate over the budget says it never drops, and reports overBudget', async (t) => {
  const j = await json(t, ['trim', SAMPLE, '--budget', '5000', '--strategy', 'truncate', '--json'])
  t.true(j.overBudget)
  t.is(j.counts.dropped, 0)
  const text = (await runCli(['trim', SAMPLE, '--budget', '5000', '--strategy', 'truncate'])).stdout
  t.true(text.includes('over budget by'))
  t.regex(text, /\n {2}note {6}truncate never drops: it shortens old and long tool outputs whatever the budget, so the result stays over it/)
  const within = (await runCli(['trim', SAMPLE, '--budget', '100%', '--strategy', 'truncate'])).stdout
  t.false(within.includes('truncate never drops'))
})
