#!/usr/bin/env node
// The context-trim command line. A thin layer over the addon: no trimming logic lives here.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { SIMULATE_HELP, SIMULATE_USAGE, runSimulate } from './simulate.mjs'

const require = createRequire(import.meta.url)
const ct = require('../index.js')
const here = dirname(fileURLToPath(import.meta.url))
const sample = join(here, '..', 'samples', 'transcripts', 'openhands-ponyc-4595.json')

function usage() {
  return `usage: context-trim demo | context-trim stats <file.json>\n       ${SIMULATE_USAGE}\n\n${SIMULATE_HELP}`
}

function load(file) {
  let text
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    throw new Error(`cannot read ${file}: ${e.code ?? e.message}`)
  }
  const data = JSON.parse(text)
  return Array.isArray(data) ? data : data.messages
}

function stats(file) {
  const messages = load(file)
  const byRole = new Map()
  for (const m of messages) {
    const n = ct.estimateMessageTokens(m)
    byRole.set(m.role, (byRole.get(m.role) ?? 0) + n)
  }
  const total = ct.estimateTokens(messages)
  console.log(`${file}`)
  console.log(`  ${messages.length} messages, ${ct.countSteps(messages)} steps, ${total} tokens (o200k_base, with chat overheads)`)
  for (const [role, n] of [...byRole].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${role.padEnd(10)} ${String(n).padStart(7)}  ${'#'.repeat(Math.round((40 * n) / total))}`)
  }
}

const [cmd, ...args] = process.argv.slice(2)
try {
  if (cmd === 'demo') stats(sample)
  else if (cmd === 'stats' && args[0]) stats(args[0])
  else if (cmd === 'simulate') process.exitCode = runSimulate(args, { ct })
  else {
    console.log(usage())
    process.exitCode = cmd ? 2 : 0
  }
} catch (e) {
  console.error(`context-trim: ${e.message}`)
  process.exitCode = e.exitCode ?? 1
}
