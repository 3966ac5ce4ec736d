// The cross-platform smoke program: loads `context-trim` the way an installed app does
// (`require('context-trim')`, whose loader picks the platform package) and prints, as JSON, what
// the addon computes on the transcripts named on the command line. smoke-arm64 runs it under
// x64 Node and under arm64 Node (emulated) and compares the two outputs byte for byte.
// CommonJS and nothing newer than Node 18, the arm64 Node that Debian ships.
'use strict'
const { readFileSync } = require('node:fs')
const { basename } = require('node:path')

const ct = require('context-trim')

// Which native file the loader picked, for the caller to check (stderr: it differs per arch).
const native = Object.keys(require.cache).filter((f) => f.endsWith('.node'))
process.stderr.write(`${JSON.stringify({ arch: process.arch, node: process.version, native })}\n`)

/** The error an addon call throws, as data. */
function thrown(fn) {
  try {
    fn()
    return null
  } catch (e) {
    return { name: e.name, code: e.code, message: e.message }
  }
}

const encodings = ['o200k_base', 'cl100k_base', 'o200k_harmony', 'p50k_base', 'r50k_base', 'approximate']
const report = []
for (const file of process.argv.slice(2)) {
  const messages = JSON.parse(readFileSync(file, 'utf8'))
  const texts = messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
  report.push({
    transcript: basename(file),
    messages: messages.length,
    steps: ct.countSteps(messages),
    stepOfEach: ct.tagMessagesWithStep(messages).map((t) => t.step),
    estimateTokens: Object.fromEntries(encodings.map((encoding) => [encoding, ct.estimateTokens(messages, { encoding })])),
    estimateTokensGpt4: ct.estimateTokens(messages, { model: 'gpt-4' }),
    estimateMessageTokens: messages.map((m) => ct.estimateMessageTokens(m)),
    countTokens: texts.map((t) => ct.countTokens(t)),
    countTokensCl100k: texts.map((t) => ct.countTokens(t, { encoding: 'cl100k_base' })),
  })
}
report.push({
  errors: [
    thrown(() => ct.estimateTokens('not an array')),
    thrown(() => ct.estimateTokens([{ role: 'robot', content: 'hi' }])),
    thrown(() => ct.countTokens('x', { encoding: 'nope' })),
    thrown(() => ct.setTokenCacheCapacity(-1)),
  ],
  cache: ct.tokenCacheStats(),
})
process.stdout.write(`${JSON.stringify(report, null, 1)}\n`)
