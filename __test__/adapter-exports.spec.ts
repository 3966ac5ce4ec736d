// The package's `exports` map as an app sees it: `context-trim` and its adapters
// (`context-trim/ai-sdk`, `context-trim/langchain`) and compat entry (`context-trim/cursorclaw`)
// by require and import, the deep paths that
// worked before the map (`package.json`, `index.js`, `samples/…`, `cli/…`), and the adapters'
// types under tsc --strict with the frameworks' own declarations checked too. The app is a
// temporary folder whose node_modules link to this repository and to the frameworks it has
// installed, so the map is read exactly as npm would lay it out.
import test from 'ava'
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const app = mkdtempSync(join(tmpdir(), 'context-trim-exports-'))

test.before(() => {
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
  mkdirSync(join(app, 'node_modules', '@langchain'), { recursive: true })
  symlinkSync(root, join(app, 'node_modules', 'context-trim'), 'dir')
  for (const dep of ['ai', 'langchain', '@langchain/core', '@langchain/langgraph', 'zod', '@types/node']) {
    mkdirSync(dirname(join(app, 'node_modules', dep)), { recursive: true })
    symlinkSync(join(root, 'node_modules', dep), join(app, 'node_modules', dep), 'dir')
  }
})

test.after.always(() => {
  rmSync(app, { recursive: true, force: true })
})

/** Every file an `exports` entry names (conditions followed; `*` patterns are left out). */
function targets(entry: unknown): string[] {
  if (typeof entry === 'string') return entry.includes('*') ? [] : [entry.replace(/^\.\//, '')]
  return Object.values(entry as Record<string, unknown>).flatMap(targets)
}

test.serial('npm pack ships every file the exports map names', (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' })
  t.is(r.status, 0, r.stderr)
  const packed = new Set((JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0].files.map((f) => f.path))
  const named = Object.values(pkg.exports).flatMap(targets)
  t.true(named.includes('adapters/langchain.d.mts'))
  t.deepEqual(
    named.filter((f) => !packed.has(f)),
    [],
  )
  // What the declarations import from each other ships too.
  for (const f of ['adapters/shared.cjs', 'adapters/shared.d.cts', 'adapters/langchain-messages.cjs', 'adapters/langchain-messages.d.cts']) t.true(packed.has(f), f)
})

function node(args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, args, { cwd: app, encoding: 'utf8' })
}

test.serial('require gives the root, both adapters and the deep paths that worked before the exports map', (t) => {
  const script = `
    const ct = require('context-trim')
    const ai = require('context-trim/ai-sdk')
    const lc = require('context-trim/langchain')
    const cc = require('context-trim/cursorclaw')
    console.log(JSON.stringify({
      cursorclaw: Object.keys(cc).sort(),
      root: typeof ct.trimByPriority,
      same: require('context-trim/index.js') === ct,
      ai: Object.keys(ai).sort(),
      langchain: Object.keys(lc).sort(),
      name: require('context-trim/package.json').name,
      sample: require('context-trim/samples/transcripts/openhands-ponyc-4595.json').length > 0,
      cli: require.resolve('context-trim/cli/context-trim.mjs') === require.resolve('context-trim/cli/context-trim.mjs'),
      types: require.resolve('context-trim/index.d.ts').endsWith('index.d.ts'),
    }))`
  const r = node(['-e', script])
  t.is(r.status, 0, r.stderr)
  t.deepEqual(JSON.parse(r.stdout), {
    cursorclaw: ['applyMaxContextTokens', 'estimateTokens', 'summarizePrefix'],
    root: 'function',
    same: true,
    ai: ['trimPrepareStep'],
    langchain: ['fromOpenAIMessages', 'toOpenAIMessages', 'trimBaseMessages', 'trimMiddleware'],
    name: 'context-trim',
    sample: true,
    cli: true,
    types: true,
  })
})

test.serial('import gives both adapters; the ES module ai-sdk entry is the CommonJS one, so both share one state', (t) => {
  const script = `
    import { createRequire } from 'node:module'
    import { trimPrepareStep } from 'context-trim/ai-sdk'
    import * as lc from 'context-trim/langchain'
    import { applyMaxContextTokens } from 'context-trim/cursorclaw'
    import ct from 'context-trim'
    const require = createRequire(import.meta.url)
    console.log(JSON.stringify({
      cursorclaw: applyMaxContextTokens === require('context-trim/cursorclaw').applyMaxContextTokens,
      shared: trimPrepareStep === require('context-trim/ai-sdk').trimPrepareStep,
      langchain: Object.keys(lc).sort(),
      conversions: lc.toOpenAIMessages === require('context-trim/langchain').toOpenAIMessages,
      root: typeof ct.CacheAwareTrimmer,
    }))`
  const r = node(['--input-type=module', '-e', script])
  t.is(r.status, 0, r.stderr)
  t.deepEqual(JSON.parse(r.stdout), {
    cursorclaw: true,
    shared: true,
    langchain: ['fromOpenAIMessages', 'toOpenAIMessages', 'trimBaseMessages', 'trimMiddleware'],
    conversions: true,
    root: 'function',
  })
})

test.serial('the ES module langchain middleware carries the brand createAgent checks', (t) => {
  const script = `
    import { trimMiddleware } from 'context-trim/langchain'
    import { MIDDLEWARE_BRAND } from 'langchain'
    const m = trimMiddleware({ budget: 1000 })
    console.log(JSON.stringify([m[MIDDLEWARE_BRAND], m.name, typeof m.wrapModelCall]))`
  const r = node(['--input-type=module', '-e', script])
  t.is(r.status, 0, r.stderr)
  t.deepEqual(JSON.parse(r.stdout), [true, 'ContextTrimMiddleware', 'function'])
})

/** Runs tsc --strict on `files` in the app, by default with every declaration file checked (skipLibCheck off). */
function tsc(files: Record<string, string>, options: Record<string, unknown> = {}): SpawnSyncReturns<string> {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(app, name), text)
  const config = `tsconfig.${Object.keys(files)[0]}.json`
  const compilerOptions = { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: ['node'], skipLibCheck: false, ...options }
  writeFileSync(join(app, config), JSON.stringify({ compilerOptions, files: Object.keys(files) }))
  return node([require.resolve('typescript/bin/tsc'), '-p', config])
}

const consumer = (ext: 'mts' | 'cts') => `import { generateText, stepCountIs, type LanguageModel } from 'ai'
import { createAgent } from 'langchain'
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { trimPrepareStep, type TrimPrepareStepOptions } from 'context-trim/ai-sdk'
import { trimBaseMessages, trimMiddleware, toOpenAIMessages, fromOpenAIMessages } from 'context-trim/langchain'
import { estimateTokens, type Message } from 'context-trim'
import { applyMaxContextTokens, estimateTokens as cursorClawEstimate } from 'context-trim/cursorclaw'

export async function run(model: LanguageModel): Promise<string> {
  const options: TrimPrepareStepOptions = { budget: 100_000, strategy: 'placeholders', onTrim: (r) => console.log(r.stepNumber, r.decision) }
  const result = await generateText({ model, prompt: 'go', stopWhen: stepCountIs(5), prepareStep: trimPrepareStep(options) })
  return result.text
}

export const agent = createAgent({ model: 'openai:gpt-4o', tools: [], middleware: [trimMiddleware({ budget: 100_000, strategy: 'priority', highWater: 0.9 })] })

const history: BaseMessage[] = [new HumanMessage('go'), new AIMessage('ok'), new ToolMessage({ content: 'x', tool_call_id: 'c' })]
const trimmed: BaseMessage[] = trimBaseMessages(history, { budget: 1000 }).messages
const sent: Message[] = toOpenAIMessages(trimmed)
export const back: BaseMessage[] = fromOpenAIMessages(sent, trimmed)
export const tokens: number = estimateTokens(sent) // ${ext}

// CursorClaw's call sites, its message type as it declares it.
const capped: Array<{ role: string; content: string }> = applyMaxContextTokens([{ role: 'user', content: 'hi' }], 100, ['assistant', 'user'])
export const cursorClaw: number = capped.length + cursorClawEstimate('abcd')
`

const wrong = `import { trimPrepareStep } from 'context-trim/ai-sdk'
import { trimMiddleware } from 'context-trim/langchain'
trimPrepareStep({ budget: 1000, strategy: 'newest' })
trimMiddleware({ strategy: 'age' })
`

// One tsc run (the frameworks' declarations take a minute to check on this machine).
test.serial('the adapters type-check in an ES module and a CommonJS consumer with tsc --strict, and reject a wrong option', (t) => {
  const r = tsc({ 'consumer.mts': consumer('mts'), 'consumer.cts': consumer('cts'), 'wrong.mts': wrong })
  t.is(r.status, 2)
  const errors = r.stdout.trim().split('\n').filter((l) => /^\S+\(\d+,\d+\): error/.test(l))
  t.is(errors.length, 2, r.stdout)
  t.true(errors[0].startsWith(`wrong.mts(3,33): error TS2322: Type '"newest"' is not assignable to type`), errors[0])
  t.true(errors[1].startsWith(`wrong.mts(4,16): error TS2345: Argument of type '{ strategy: "age"; }' is not assignable`), errors[1])
})

const older = `import { trimPrepareStep } from 'context-trim/ai-sdk'
import { trimMiddleware } from 'context-trim/langchain'
import { estimateTokens } from 'context-trim'
import { applyMaxContextTokens } from 'context-trim/cursorclaw'
export const made = [trimPrepareStep({ budget: 1000 }), trimMiddleware({ budget: 1000 }), estimateTokens([]), applyMaxContextTokens([], 10)]
`

// moduleResolution node10 ignores exports: typesVersions points it at the adapters' declarations.
for (const [resolution, module] of [
  ['node10', 'commonjs'],
  ['bundler', 'esnext'],
] as const) {
  test.serial(`the adapters' types resolve under moduleResolution ${resolution}`, (t) => {
    const r = tsc({ [`older-${resolution}.ts`]: older }, { moduleResolution: resolution, module, skipLibCheck: true })
    t.is(r.status, 0, r.stdout + r.stderr)
  })
}
